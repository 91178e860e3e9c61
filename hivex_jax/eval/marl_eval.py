"""Export held-out results to the JSON format of InstaDeep's marl-eval (Gorsane et al., 2022; PyPI
`id-marl-eval`): `env -> task -> algorithm -> run -> step`, each step a `step_count` and, per metric, a list
of per-episode values, with `absolute_metrics` last (marl-eval's README, "Data Structure for Raw
Experiment data"; `DiagnoseData.check_data` is its validator).

Mapping: env = `env_id`; task = `task_<t>_level_<l>`; algorithm = `algo` (plus the sweep combination
without task/level); run = `seed_<i>`, one per training seed (marl-eval's `JsonLogger` naming); the
episodes of a run are its held-out worlds. We evaluate once, at the end of training, so each run has
one logged step (`step_0`, `step_count` = env steps trained per seed) and `absolute_metrics` holds the
same per-world values: they are not marl-eval's 10x-episode re-evaluation of the best checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval.aggregate import group_label, policy_scores
from hivex_jax.eval.score import normalised_score, scripted_beats_random

#: metrics written per episode (world): return, episode length in agent decisions, and the return normalised
#: by scripted/random (named without "return": marl-eval treats a metric whose name holds a token of
#: `metrics_to_normalize` as one to min-max normalise, and would skip ours when "return" is listed)
RETURN, LENGTH, NORMALISED = "return", "episode_length", "normalised_score"


def task_name(results: Mapping[str, Any]) -> str:
    """marl-eval task key of an eval JSON dict: `task_<t>_level_<l>`, or `task_<t>` where the run used the
    env's default level (config `level: null`)."""
    level = results.get("level")
    return f"task_{int(results.get('task', 0))}" + ("" if level is None else f"_level_{int(level)}")


def algorithm_name(results: Mapping[str, Any], combination: str | None = None) -> str:
    """marl-eval algorithm key: `algo`, plus the sweep combination less task/level (commas, which
    marl-eval forbids in algorithm names, become spaces)."""
    name = str(results.get("algo", "policy"))
    if combination is not None and group_label(combination) != "default":
        name += " " + group_label(combination).replace(",", " ")
    return name


def _normalised_returns(results: Mapping[str, Any], policy: str) -> np.ndarray | None:
    """`[seeds, worlds]` `score.normalised_score` of the returns, or None unless scripted beats random on
    every world (a world without a score would leave a hole in marl-eval's per-episode lists)."""
    policies = results["policies"]
    if "scripted" not in policies or "random" not in policies:
        return None
    scripted, random = policy_scores(results, "scripted")[0], policy_scores(results, "random")[0]
    if not scripted_beats_random(scripted, random).all():
        return None
    return normalised_score(policy_scores(results, policy), scripted, random)


def _step_count(results: Mapping[str, Any]) -> int:
    """Env steps trained per seed (eval.json of `hivex train` / `hivex evaluate`)."""
    if "env_steps_per_seed" not in results:
        raise ValueError("results name no env_steps_per_seed: cannot place them on marl-eval's step axis")
    return int(results["env_steps_per_seed"])


def to_marl_eval(
    entries: Sequence[tuple[str | None, Mapping[str, Any]]], policy: str = "greedy"
) -> dict[str, Any]:
    """marl-eval raw-data dict of `(sweep combination or None, eval JSON dict)` entries: `policy`'s
    per-world return and episode length per training seed, and `normalised_score` (per world, by
    scripted/random, `score.normalised_score`) when every entry has both baselines and scripted beats
    random on every world."""
    normalised = [_normalised_returns(r, policy) for _, r in entries]
    with_normalised = bool(entries) and all(n is not None for n in normalised)
    out: dict[str, Any] = {}
    for (combination, results), norm in zip(entries, normalised, strict=True):
        returns = policy_scores(results, policy)  # [seeds, worlds]
        per_world = results["policies"][policy]["per_world"]
        lengths = np.asarray([w["length"] for w in per_world], np.float64).T  # [seeds, worlds]
        algorithms = out.setdefault(str(results["env_id"]), {}).setdefault(task_name(results), {})
        algorithm = algorithm_name(results, combination)
        if algorithm in algorithms:
            raise ValueError(f"two entries export as {results['env_id']}/{task_name(results)}/{algorithm}")
        runs = algorithms.setdefault(algorithm, {})
        for seed in range(returns.shape[0]):
            metrics = {RETURN: returns[seed].tolist(), LENGTH: lengths[seed].tolist()}
            if with_normalised and norm is not None:  # with_normalised: no entry's norm is None
                metrics[NORMALISED] = norm[seed].tolist()
            runs[f"seed_{seed}"] = {
                "step_0": {"step_count": _step_count(results), **metrics},
                "absolute_metrics": {k: list(v) for k, v in metrics.items()},
            }
    return out


def write_marl_eval(
    path: str | Path, entries: Sequence[tuple[str | None, Mapping[str, Any]]], policy: str = "greedy"
) -> Path:
    """Write `to_marl_eval(entries, policy)` to `path` (folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_marl_eval(entries, policy), indent=1))
    return path
