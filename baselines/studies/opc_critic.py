"""Does a trained Ocean Plastic Collection critic see a coming collision?

`scripts/opc_critic_diagnosis.py RUN_DIR [--rollouts 40]` prints `table(diagnose(RUN_DIR, rollouts))`.

Plays the run's final training state on (continuing from its last rollout) for `rollouts` more
rollouts of one seed, without updating it, and reports from the trajectories, as the trainer stores them:

- **before a -100 event**: the critic's value V on each of the 12 decisions up to an agent's step that
  earned <= -99 (a vessel collision or a border crossing, told apart by the nearest vessel's distance on
  that decision: under `COLLISION_GAP` m a collision), and that distance; a critic that sees the risk
  falls towards -100 over those decisions;
- **by distance to the nearest vessel**: the critic's mean V against the mean value target (the
  trainer's GAE target, lambda-return of the same trajectories) of the decisions in each distance bin. A
  critic that sees collision risk follows the targets down as vessels close.

A run with `value_heads` is read in the env's units: V and the target are the heads' values and targets times
their scales, summed; each named head's own V (and target) is reported beside them.

Decisions of agents that are out, and vessels with no other vessel present (the observation then puts
the neighbour on the vessel itself), are left out of the bins. Targets are in the env's reward units: for
a run with `reward_scaling: return_std` the critic's values are in scaled units and not comparable.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from baselines.config import ExtensionsConfig, ValueHeadsConfig
from baselines.core.value_heads import ValueHeads
from baselines.run.evaluation import load_run
from hivex_jax.envs.ocean_plastic_collection.observations import LAYOUT, VECTOR_SIZE

LAGS = 12  # decisions before an event that are reported (a converging approach takes ~8)
COLLISION_GAP = 15.0  # m: an event this close to another vessel is a collision, else a border crossing
EVENT_REWARD = -99.0  # a step earning this or less is a -100 event
GAP_EDGES = (0.0, 10.0, 20.0, 40.0, float("inf"))  # m


def neighbour_gap(vector: np.ndarray, sea_half_extent: float, frame_width: int = VECTOR_SIZE) -> np.ndarray:
    """f32[...]: distance (m) to the nearest other vessel from the newest frame of a (stacked) `vector`
    f32[..., k * frame_width] (6, more with the observation options); NaN where there is none (the
    neighbour reads as the vessel itself)."""
    width = vector.shape[-1]
    frame = vector[..., width - frame_width : width - frame_width + VECTOR_SIZE]
    own, other = frame[..., LAYOUT["position"]], frame[..., LAYOUT["neighbour_position"]]
    gap = np.linalg.norm(other - own, axis=-1) * sea_half_extent
    return np.where(np.all(other == own, axis=-1), np.nan, gap)


def event_profiles(
    value: np.ndarray, reward: np.ndarray, active: np.ndarray, gap: np.ndarray
) -> dict[str, dict[str, Any]]:
    """`{"collision"|"border": {"count", "value" [LAGS], "gap" [LAGS]}}` from f32/bool[T, ...] arrays:
    mean V and median gap k = 0..LAGS-1 decisions before each event (events in the first LAGS - 1
    decisions, or with the agent out within the window, are skipped)."""
    events = np.argwhere((reward <= EVENT_REWARD) & active)
    out: dict[str, dict[str, Any]] = {}
    for kind in ("collision", "border"):
        values, gaps = [], []
        for t, *rest in events:
            if t < LAGS - 1 or (gap[(t, *rest)] < COLLISION_GAP) != (kind == "collision"):
                continue
            lagged = (t - np.arange(LAGS), *(np.full(LAGS, i) for i in rest))
            if not active[lagged].all():  # the agent was out within the window: another episode
                continue
            values.append(value[lagged])
            gaps.append(gap[lagged])
        out[kind] = {
            "count": len(values),
            "value": np.mean(values, axis=0) if values else np.full(LAGS, np.nan),
            "gap": np.nanmedian(gaps, axis=0) if gaps else np.full(LAGS, np.nan),
        }
    return out


def gap_bins(value: np.ndarray, target: np.ndarray, active: np.ndarray, gap: np.ndarray) -> list[dict]:
    """Per `GAP_EDGES` bin of the active decisions with a neighbour: count, mean V, mean target."""
    rows = []
    for low, high in zip(GAP_EDGES[:-1], GAP_EDGES[1:], strict=True):
        inside = active & (gap >= low) & (gap < high)  # NaN gaps compare False
        n = int(inside.sum())
        rows.append(
            {
                "low": low,
                "high": high,
                "count": n,
                "value": float(value[inside].mean()) if n else float("nan"),
                "target": float(target[inside].mean()) if n else float("nan"),
            }
        )
    return rows


def collect(train: Any, runner: Any, rollouts: int) -> dict[str, np.ndarray]:
    """`rollouts` rollouts of one seed's `runner` (no update): value, GAE target, reward, active and the
    nearest vessel's distance, each `[rollouts * num_steps, num_envs, A]` (value and target in the env's
    units); with value heads also `head_value` / `head_target` `[..., K]`, each named head's in env units."""
    config = train.config
    heads = ValueHeads(
        ValueHeadsConfig.of(config), ExtensionsConfig.of(config), train.env, train.train_params
    )
    frame_width = VECTOR_SIZE + getattr(train.env, "extra_size", 0)  # the observation options' floats
    rollout = jax.jit(train.rollout)
    keys = ("value", "target", "reward", "active", "gap", "head_value", "head_target")
    parts: dict[str, list] = {k: [] for k in keys}
    e = float(train.env_params.sea_half_extent)
    for _ in range(rollouts):
        runner, (traj, _) = rollout(runner)
        _, target = heads.gae(runner.update, traj.reward, traj, config.gamma, config.gae_lambda)
        value, target = np.asarray(traj.value), np.asarray(target)
        if heads.names:  # back to the env's units: head k times its scale (at the runner's update)
            scales = np.asarray(heads.scales_at(runner.update))
            value, target = value * scales, target * scales
            parts["head_value"].append(value[..., 1:])
            parts["head_target"].append(target[..., 1:])
            value, target = value.sum(-1), target.sum(-1)
        reward = np.asarray(traj.reward)
        parts["value"].append(value)
        parts["target"].append(target)
        parts["reward"].append(reward if reward.ndim == value.ndim else reward.sum(-1))
        parts["active"].append(np.asarray(traj.active))
        parts["gap"].append(neighbour_gap(np.asarray(traj.obs["vector"]), e, frame_width))
    return {k: np.concatenate(v) for k, v in parts.items() if v}


def diagnose(run_dir: str, rollouts: int = 40, seed: int = 0) -> dict[str, Any]:
    """`{"events": event_profiles(...), "bins": gap_bins(...), "decisions": n}` of a saved OPC run."""
    config, population, state = load_run(run_dir)
    if config.env_id != "OceanPlasticCollection-v0":
        raise ValueError(f"{run_dir}: an Ocean Plastic Collection run is needed; this one is {config.env_id}")
    if not 0 <= seed < config.num_seeds:
        raise ValueError(f"--seed must be in 0..{config.num_seeds - 1}; got {seed}")
    runner = jax.tree.map(lambda x: x[seed], state)
    data = collect(population.train, runner, rollouts)
    active = data["active"].astype(bool)
    heads = {}
    for k, name in enumerate(config.value_heads):  # each named head's own reading
        value, target = data["head_value"][..., k], data["head_target"][..., k]
        heads[name] = {
            "events": event_profiles(value, data["reward"], active, data["gap"]),
            "bins": gap_bins(value, target, active, data["gap"]),
        }
    return {
        "events": event_profiles(data["value"], data["reward"], active, data["gap"]),
        "bins": gap_bins(data["value"], data["target"], active, data["gap"]),
        "decisions": int(active.sum()),
        "heads": heads,
    }


def table(result: dict[str, Any]) -> str:
    """The diagnosis as two Markdown tables (rows for each value head's own V after the whole critic's)."""
    heads = result.get("heads", {})
    lines = [
        "| event | count | " + " | ".join(f"k={k}" for k in range(LAGS)) + " |",
        "|---|---|" + "---|" * LAGS,
    ]
    for kind, p in result["events"].items():
        lines.append(f"| {kind}: V | {p['count']} | " + " | ".join(f"{v:.1f}" for v in p["value"]) + " |")
        for name, head in heads.items():
            shown = " | ".join(f"{v:.1f}" for v in head["events"][kind]["value"])
            lines.append(f"| {kind}: V of head {name} | | {shown} |")
        lines.append(f"| {kind}: gap m | | " + " | ".join(f"{g:.1f}" for g in p["gap"]) + " |")
    lines += ["", f"| nearest vessel | decisions (of {result['decisions']}) | mean V | mean target |"]
    lines.append("|---|---|---|---|")
    for i, b in enumerate(result["bins"]):
        span = f"{b['low']:.0f}-{b['high']:.0f} m"
        lines.append(f"| {span} | {b['count']} | {b['value']:.1f} | {b['target']:.1f} |")
        for name, head in heads.items():
            h = head["bins"][i]
            lines.append(f"| {span}, head {name} | | {h['value']:.1f} | {h['target']:.1f} |")
    return "\n".join(lines)
