"""HIVEX subtasks (Drone-Based Reforestation, Aerial Wildfire Suppression): how often each reward event
happens in an episode, what the return is made of and what the trainer's discounted return says, for the
random, scripted and zero-action policies and (with --run) a trained run's greedy and stochastic policy.

    PJRT_NPROC=1 python scripts/subtask_evidence.py --env dbr|aws [--tasks 2,3,6] [--level 1]
        [--worlds 6000:6032] [--run 2=runs/dbr_subtasks/task2_x4 ...] [--gammas 0.99,0.999] [--json OUT.json]

Full episodes (the env's max_steps) on the named worlds, stepped with the held-out evaluation's world
keys and step keys (`hivex_jax.core.seeding`, key `--eval-seed`, 12345 as `hivex train`'s eval.json),
every step's unweighted reward terms and `info["stats"]` kept. An event is a step of one agent where its
term or statistic is positive (the env's `SubtaskEnv.events`); per policy the table gives, per agent and
episode, the mean count of each event, the share of agent-episodes with at least one, the mean decision of
the first, the weighted return's largest terms, and the return discounted by each of `--gammas` (the
trainer's first), which is what PPO maximises. Prints Markdown; `--json` also writes the numbers (and the
commit of the checkout that measured them).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from baselines.run.eval_policies import policy_env, trained_policy
from baselines.run.evaluation import load_run
from hivex_jax.core.seeding import rollout_key, rollout_step_keys, seed_range, world_key
from hivex_jax.envs.aerial_wildfire_suppression.params import TASK_NAMES as AWS_TASK_NAMES
from hivex_jax.envs.drone_based_reforestation.params import TASK_NAMES as DBR_TASK_NAMES
from hivex_jax.eval import rollout

ROOT = Path(__file__).resolve().parents[2]  # the checkout whose commit the evidence names


@dataclasses.dataclass(frozen=True)
class SubtaskEnv:
    """What the evidence counts in one env: `events` maps an event's name to ("term", unweighted reward
    term) or ("stat", `info["stats"]` key), an event being a step of one agent where that is > 0."""

    env_id: str
    task_names: tuple[str, ...]
    agent: str  # what one agent is, for the page's "per drone and episode"
    first_event: str  # the event whose first decision the page's table shows
    default_tasks: str
    events: dict[str, tuple[str, str]]


ENVS: dict[str, SubtaskEnv] = {
    "dbr": SubtaskEnv(
        "DroneBasedReforestation-v0",
        tuple(DBR_TASK_NAMES),
        "drone",
        "drop",
        "2,3,6",
        {
            "seed pick-up": ("stat", "seed_pick_up_count"),
            "paid pick-up": ("term", "pick_up_seed"),
            "drop": ("stat", "tree_drop_count"),
            "valid drop": ("term", "drop_seed"),
            "drop success": ("term", "drop_seed_success"),
            "running-back paid": ("term", "incremental_running_back"),
            "return paid": ("term", "return_furthest_distance"),
            "recharge": ("stat", "recharge_energy_count"),
            "out of energy": ("stat", "out_of_energy_count"),
        },
    ),
    "aws": SubtaskEnv(
        "AerialWildfireSuppression-v0",
        tuple(AWS_TASK_NAMES),
        "plane",
        "water pick-up",
        "5",
        {
            "water pick-up": ("stat", "water_pickup"),
            "water dropping": ("stat", "water_drop"),
            "trees extinguished": ("stat", "extinguishing_trees"),
            "trees prepared": ("stat", "preparing_trees"),
            "fire found": ("term", "find_fire"),
            "village found": ("term", "find_village"),
            "fire out": ("term", "fire_out"),
            "fire near village": ("term", "too_close_to_village"),
            "crash": ("stat", "crash_count"),
        },
    ),
}
#: the env ids `--env` takes, by their short names
ENV_IDS = {name: e.env_id for name, e in ENVS.items()}


# ------------------------------------------------------------------------------------------ counting
def event_masks(
    raw_terms: np.ndarray,
    stats: Mapping[str, np.ndarray],
    term_names: Sequence[str],
    events: Mapping[str, tuple[str, str]],
) -> dict[str, np.ndarray]:
    """`{event: bool[W, T, A]}` from one batch's unweighted terms `raw_terms [W, T, A, K]` and stats
    `{key: [W, T, A]}`: the steps where each of `events` (a `SubtaskEnv.events`) is positive."""
    out = {}
    for name, (kind, key) in events.items():
        values = raw_terms[..., list(term_names).index(key)] if kind == "term" else stats[key]
        out[name] = np.asarray(values) > 0.0
    return out


def count_events(masks: Mapping[str, np.ndarray], live: np.ndarray) -> dict[str, dict[str, float]]:
    """Per event, over agent-episodes (world x agent): `per_episode` mean count, `episodes_with` share
    with at least one, `first_step` mean decision (0-based) of the first where there is one (nan if none).
    `masks[e]` bool[W, T, A]; `live` bool[W, T], the steps before the episode ended (later ones ignored)."""
    out = {}
    for name, mask in masks.items():
        counted = np.asarray(mask) & np.asarray(live)[:, :, None]
        counts = counted.sum(axis=1)  # [W, A]
        seen = counts > 0
        first = np.argmax(counted, axis=1)  # [W, A]: the first True (0 where none, masked below)
        out[name] = {
            "per_episode": float(counts.mean()),
            "episodes_with": float(seen.mean()),
            "first_step": float(first[seen].mean()) if seen.any() else float("nan"),
        }
    return out


def discounted_returns(reward: np.ndarray, live: np.ndarray, gamma: float) -> np.ndarray:
    """f32[W, A]: sum over live steps t of gamma^t r_t, from `reward [W, T, A]` and `live bool[W, T]`."""
    t = np.arange(reward.shape[1])
    weights = (gamma**t)[None, :] * np.asarray(live, np.float64)  # [W, T]
    return np.einsum("wt,wta->wa", weights, np.asarray(reward, np.float64))


def summarize(
    steps: Mapping[str, Any],
    term_names: Sequence[str],
    gammas: Sequence[float],
    events: Mapping[str, tuple[str, str]],
    top_terms: int = 4,
) -> dict[str, Any]:
    """One policy's evidence from `play`'s per-step arrays: mean return per agent and its discounted
    return for each of `gammas` (`{str(gamma): mean}`), event counts, and the weighted return's largest
    terms (mean per agent and episode); `events` a `SubtaskEnv.events`."""
    live = np.asarray(steps["live"])
    masks = event_masks(np.asarray(steps["raw_terms"]), steps["stats"], term_names, events)
    reward = np.asarray(steps["reward"]) * live[:, :, None]
    terms = (np.asarray(steps["terms"]) * live[:, :, None, None]).sum(axis=1).mean(axis=(0, 1))  # [K]
    order = np.argsort(-np.abs(terms))[:top_terms]
    return {
        "return": float(reward.sum(axis=1).mean()),
        "discounted_returns": {str(g): float(discounted_returns(reward, live, g).mean()) for g in gammas},
        "length": float(live.sum(axis=1).mean()),
        "events": count_events(masks, live),
        "terms": {term_names[k]: float(terms[k]) for k in order if terms[k] != 0.0},
    }


# ------------------------------------------------------------------------------------------- playing
def play(
    env: Any,
    env_params: Any,
    policy: rollout.Policy,
    worlds: Sequence[int],
    policy_params: Any = None,
    key: jax.Array | None = None,
) -> dict[str, Any]:
    """Per-step arrays of one full episode per world (as `rollout.Evaluator` plays it: same world and step
    keys): `reward [W, T, A]`, `terms`/`raw_terms [W, T, A, K]` (weighted / unweighted), `stats
    {key: [W, T, A]}`, `live bool[W, T]` (the episode had not ended before step t)."""
    key = jax.random.PRNGKey(0) if key is None else key
    num_steps = int(np.asarray(env_params.max_steps))

    def episode(world_seed: jax.Array) -> dict[str, Any]:
        obs, state = env.reset(world_key(world_seed), env_params)
        episode_key = rollout_key(key, world_seed)

        def step(carry, t):
            obs, state, finished = carry
            k_act, k_env = rollout_step_keys(episode_key, t)
            action = policy(policy_params, k_act, obs, state)
            obs, state, reward, _, _, info = env.step(k_env, state, action, env_params)
            out = {
                "reward": reward,
                "terms": info["reward_terms"],
                "raw_terms": info["raw_reward_terms"],
                "stats": info["stats"],
                "live": ~finished,
            }
            return (obs, state, finished | info["done"]), out

        _, steps = jax.lax.scan(step, (obs, state, jnp.zeros((), bool)), jnp.arange(num_steps))
        return steps

    seeds = jnp.asarray(np.asarray(worlds).astype(np.uint32))
    return jax.tree.map(np.asarray, jax.jit(jax.vmap(episode))(seeds))


def zero_policy(env: Any) -> rollout.Policy:
    """Every agent, every decision: the all-zero action (`action_space().noop()`)."""
    noop = env.action_space().noop()
    return lambda policy_params, key, obs, state: noop


def trained_policies(run_dir: Path) -> tuple[Any, Any, dict[str, tuple[Callable, Any]]]:
    """`(env, env_params, {"greedy": (policy, params), "stochastic": ...})` of a run's latest checkpoint
    (its first training seed)."""
    _, population, state = load_run(run_dir)
    train = population.train
    params = jax.tree.map(lambda x: x[0], state.params)
    policies = {name: (trained_policy(train, name == "greedy"), params) for name in ("greedy", "stochastic")}
    return policy_env(train), train.env_params, policies


def task_evidence(
    subtask_env: SubtaskEnv,
    task: int,
    level: int,
    worlds: Sequence[int],
    gammas: Sequence[float],
    eval_seed: int,
    run_dir: Path | None,
) -> dict[str, Any]:
    """`{policy: summarize(...)}` for one task: random, scripted, zero action (and a run's policies)."""
    env, params = hivex_jax.make(subtask_env.env_id, task=task)
    params = env.variant_params(params, level=level)
    policies: dict[str, tuple[Callable, Any]] = {
        "random": (rollout.random_policy(env), None),
        "scripted": (rollout.scripted_policy(env, params), None),
        "zero action": (zero_policy(env), None),
    }
    trained_env = None
    if run_dir is not None:
        trained_env, trained_params, trained = trained_policies(run_dir)
        policies.update(trained)
    key = jax.random.PRNGKey(eval_seed)
    out = {}
    for name, (policy, policy_params) in policies.items():
        here_env, here_params = (
            (trained_env, trained_params) if name in ("greedy", "stochastic") else (env, params)
        )
        steps = play(here_env, here_params, policy, worlds, policy_params, key)
        out[name] = summarize(steps, env.reward_term_names, gammas, subtask_env.events)
    return out


# ------------------------------------------------------------------------------------------ printing
def markdown(subtask_env: SubtaskEnv, task: int, evidence: Mapping[str, Any]) -> str:
    """One task's evidence as a Markdown table (rows: policies; columns: returns and event counts as
    mean per agent-episode / share of agent-episodes with one)."""
    names = list(subtask_env.events)
    gammas = list(next(iter(evidence.values()))["discounted_returns"])
    head = (
        "| policy | return | "
        + " | ".join(f"discounted ({g})" for g in gammas)
        + " | "
        + " | ".join(f"{n} (first)" for n in names)
        + " | largest terms |"
    )
    rule = "|" + "---|" * (len(names) + len(gammas) + 3)
    lines = [f"Task {task} {subtask_env.task_names[task]}", "", head, rule]
    for policy, e in evidence.items():
        cells = [
            f"{e['events'][n]['per_episode']:.2f} / {e['events'][n]['episodes_with']:.0%} "
            f"({e['events'][n]['first_step']:.0f})"
            for n in names
        ]
        discounted = " | ".join(f"{v:.2f}" for v in e["discounted_returns"].values())
        terms = ", ".join(f"{k} {v:.1f}" for k, v in e["terms"].items())
        lines.append(
            f"| {policy} | {e['return']:.2f} | {discounted} | " + " | ".join(cells) + f" | {terms} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Parse the options, play each task's policies, print the tables (and write the JSON)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", required=True, choices=sorted(ENVS), help=f"which env: {ENV_IDS}")
    defaults = "; ".join(f"{name}: {e.default_tasks}" for name, e in ENVS.items())
    p.add_argument("--tasks", default=None, help=f"comma-separated tasks (default {defaults})")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--worlds", default="6000:6032")
    p.add_argument("--gammas", default="0.99", help="comma-separated discount factors")
    p.add_argument("--eval-seed", type=int, default=12345)
    p.add_argument("--run", action="append", default=[], metavar="TASK=RUN_DIR")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    subtask_env = ENVS[args.env]
    tasks = [int(t) for t in (args.tasks or subtask_env.default_tasks).split(",")]
    if bad := [t for t in tasks if not 0 <= t < len(subtask_env.task_names)]:
        p.error(f"--tasks {bad} are not tasks of {subtask_env.env_id} (0-{len(subtask_env.task_names) - 1})")
    runs = {int(t): Path(d) for t, d in (r.split("=", 1) for r in args.run)}
    worlds = seed_range(args.worlds).tolist()
    gammas = [float(g) for g in args.gammas.split(",")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    result: dict[str, Any] = {
        "env_id": subtask_env.env_id,
        "agent": subtask_env.agent,
        "first_event": subtask_env.first_event,
        "level": args.level,
        "worlds": args.worlds,
        "gammas": gammas,
        "commit": commit.stdout.strip() or None,
        "eval_seed": args.eval_seed,
        "runs": {str(t): str(d) for t, d in runs.items()},
        "tasks": {},
    }
    for task in tasks:
        run_dir = runs.get(task)
        evidence = task_evidence(subtask_env, task, args.level, worlds, gammas, args.eval_seed, run_dir)
        result["tasks"][str(task)] = evidence
        print(markdown(subtask_env, task, evidence) + "\n", flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
