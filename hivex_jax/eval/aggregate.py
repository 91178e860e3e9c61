"""Robust aggregates of held-out results with rliable (Agarwal et al., 2021): scores normalised per world
by the scripted and random policies, stratified-bootstrap CIs for IQM, mean, median and optimality gap,
probability of improvement, and performance profiles.

A score matrix is `[runs, columns]`: runs are training seeds, columns are held-out worlds (or
`(task, level, world)` cells when a sweep spans tasks). rliable resamples runs within each column
(stratified bootstrap), so every interval here is over seeds with the worlds held fixed: from one seed
there is none (every resample is the same run), so its `ci95` is None and tables say `ONE_SEED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hivex_jax.eval.rliable_compat import rliable_modules, seeded_global_numpy
from hivex_jax.eval.score import (
    ABSOLUTE_MIN_GAP,
    DEFINITION,
    RELATIVE_MIN_GAP,
    SCRIPTED_NOT_ABOVE_RANDOM,
    normalised_score,
    scripted_beats_random,
)
from hivex_jax.eval.stats import ONE_SEED

#: what every aggregate interval is, in the words tables and JSON use
INTERVAL = "rliable stratified bootstrap 95% CI"
#: how scores are normalised (written into every aggregates block): `score.normalised_score` per world,
#: 0 = random, 1 = scripted; a world where scripted does not beat random has no scale and is left out
NORMALISATION = f"per world: {DEFINITION}"
#: the trained policies of an eval JSON that get aggregates (scripted and random normalise to 1 and 0)
TRAINED_POLICIES = ("greedy", "stochastic")
#: the aggregate metrics, in table order
METRICS = ("iqm", "mean", "median", "optimality_gap")
#: bootstrap replications: enough for stable 95% percentile bounds on a few seeds (rliable's default is
#: 50000; raise it for a paper) and seeded so the same results give the same intervals
DEFAULT_REPS = 2000
DEFAULT_SEED = 0


# --------------------------------------------------------------------------------------- normalisation
def policy_scores(results: Mapping[str, Any], policy: str) -> np.ndarray:
    """Returns of `policy` in an eval JSON dict as `f64[runs, worlds]` (scripted/random: one run)."""
    per_world = results["policies"][policy]["per_world"]
    if "return_per_seed" in per_world[0]:
        return np.asarray([w["return_per_seed"] for w in per_world], np.float64).T
    return np.asarray([[w["return_mean"] for w in per_world]], np.float64)


def usable_worlds(scripted: Any, random: Any) -> np.ndarray:
    """`bool[worlds]`: where scripted beats random by a usable gap (`score.scripted_beats_random`)."""
    return scripted_beats_random(scripted, random)


def normalise(scores: Any, scripted: Any, random: Any) -> np.ndarray:
    """`score.normalised_score` of `scores[runs, worlds]` by the baselines' `[worlds]`: NaN in worlds
    not `usable_worlds`."""
    return normalised_score(scores, scripted, random)


def normalised_columns(
    results: Mapping[str, Any], policy: str, cell: tuple = ()
) -> tuple[dict[tuple, np.ndarray], dict[str, Any]]:
    """`({cell + (world,): f64[runs]}, info)` for `policy` of an eval JSON dict: returns normalised per
    world by the scripted and random policies of the same results, or raw returns (`info["normalised"]`
    False) when either baseline is missing. Worlds where scripted does not beat random by a usable gap
    have no score: they are left out and listed in `info["excluded_worlds"]`, those of them where random
    beats scripted also in `info["random_above_scripted_worlds"]`."""
    worlds = [int(w) for w in results["worlds"]]
    scores = policy_scores(results, policy)
    policies = results["policies"]
    info: dict[str, Any] = {"normalised": False, "excluded_worlds": [], "random_above_scripted_worlds": []}
    if "scripted" in policies and "random" in policies:
        scripted, random = policy_scores(results, "scripted")[0], policy_scores(results, "random")[0]
        ok = usable_worlds(scripted, random)
        scores = normalise(scores, scripted, random)  # never raw returns beside scores: no world, no column
        excluded = [w for w, usable in zip(worlds, ok, strict=True) if not usable]
        swapped = [w for w, s, r in zip(worlds, scripted, random, strict=True) if r > s]
        info = {"normalised": True, "excluded_worlds": excluded, "random_above_scripted_worlds": swapped}
    columns = {(*cell, w): scores[:, i] for i, w in enumerate(worlds) if w not in info["excluded_worlds"]}
    return columns, info


def score_matrix(columns: Mapping[tuple, np.ndarray]) -> np.ndarray:
    """`f64[runs, columns]` from `{column: f64[runs]}` in sorted column order."""
    return np.stack([np.asarray(columns[k], np.float64) for k in sorted(columns)], axis=1)


# ------------------------------------------------------------------------------------ rliable statistics
def _metric_functions(normalised: bool) -> dict[str, Callable[[np.ndarray], float]]:
    """The aggregate functions; the optimality gap (shortfall from score 1 = scripted) only on normalised
    scores, where 1 means something."""
    _, metrics = rliable_modules()
    functions = {
        "iqm": _iqm,
        "mean": metrics.aggregate_mean,
        "median": metrics.aggregate_median,
        "optimality_gap": metrics.aggregate_optimality_gap,
    }
    if not normalised:
        del functions["optimality_gap"]
    return functions


def _iqm(scores: np.ndarray) -> float:
    """rliable's `aggregate_iqm` (scipy's 25 % `trim_mean` over every score) without scipy's nan-policy
    wrapper, which took most of a bootstrap replicate's time (the same function, the same floats)."""
    import scipy.stats

    trim_mean = getattr(scipy.stats.trim_mean, "__wrapped__", scipy.stats.trim_mean)
    return trim_mean(np.ravel(scores), proportiontocut=0.25, axis=0)  # what axis=None does, typed


def _score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """rliable's score distribution (`np.mean(scores > tau)` per tau) for every tau at once: rliable
    `np.vectorize`s it over the taus in each bootstrap replicate. Exact: the means count 0s and 1s."""
    return (np.ravel(scores)[:, None] > np.asarray(taus)[None, :]).mean(axis=0)


def aggregate_intervals(
    score_dict: Mapping[str, Any], normalised: bool = True, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED
) -> dict[str, dict[str, dict[str, Any]]]:
    """`{name: {metric: {"point": x, "ci95": [lo, hi]}}}` for each `f64[runs, columns]` score matrix;
    `"ci95": None` for a matrix of one run (one seed: no interval)."""
    library, _ = rliable_modules()
    functions = _metric_functions(normalised)

    def all_metrics(scores: np.ndarray) -> np.ndarray:
        return np.array([f(scores) for f in functions.values()])

    matrices = {k: np.asarray(v, np.float64) for k, v in score_dict.items()}
    with seeded_global_numpy(seed):
        points, intervals = library.get_interval_estimates(matrices, all_metrics, reps=reps)
    return {
        name: {
            metric: {
                "point": float(points[name][i]),
                "ci95": _interval(intervals[name][:, i], matrices[name]),
            }
            for i, metric in enumerate(functions)
        }
        for name in matrices
    }


def _interval(bounds: Any, *matrices: np.ndarray) -> list[float] | None:
    """`[low, high]` of a bootstrap interval over `matrices`' runs, or None when each has one run: every
    resample is then that run, so the interval is the point, not a CI."""
    if all(np.shape(m)[0] <= 1 for m in matrices):
        return None
    return [float(v) for v in bounds]


def probability_of_improvement(
    scores_x: Any, scores_y: Any, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """P(X > Y) for `[runs_x, columns]` vs `[runs_y, columns]` on the same columns, averaged over
    columns (rliable; ties count one half), with its stratified-bootstrap 95% CI (None when both have one
    run)."""
    library, metrics = rliable_modules()
    x, y = np.asarray(scores_x, np.float64), np.asarray(scores_y, np.float64)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"probability of improvement needs the same columns: {x.shape[1]} vs {y.shape[1]}")
    with seeded_global_numpy(seed):
        _, intervals = library.get_interval_estimates(
            {"x,y": [x, y]}, lambda a, b: np.array([pairwise_improvement(a, b)]), reps=reps
        )
    point = float(metrics.probability_of_improvement(x, y))
    return {"point": point, "ci95": _interval(intervals["x,y"][:, 0], x, y)}


def pairwise_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """rliable's `probability_of_improvement` (per column Mann-Whitney U / (n_x n_y): P(x > y) + P(x = y) / 2,
    averaged over columns) over all run pairs at once: rliable calls scipy once per column, which made
    2000 bootstrap replicates on 50 worlds take minutes; the point estimate still comes from rliable."""
    diff = scores_x[:, None, :] - scores_y[None, :, :]  # [runs_x, runs_y, columns]
    return float(np.mean((diff > 0).mean(axis=(0, 1)) + 0.5 * (diff == 0).mean(axis=(0, 1))))


def performance_profiles(
    score_dict: Mapping[str, Any], num_taus: int = 41, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Score distributions: for thresholds `tau` spanning every score, the fraction of (run, column)
    scores above `tau` per name, with stratified-bootstrap 95% CIs (`{"tau", name: {...}}`; the bounds
    None for a name with one run)."""
    library, _ = rliable_modules()
    matrices = {k: np.asarray(v, np.float64) for k, v in score_dict.items()}
    every = np.concatenate([m.ravel() for m in matrices.values()])
    lo, hi = float(every.min()), float(every.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.5
    taus = np.linspace(lo - pad, hi + pad, num_taus)
    with seeded_global_numpy(seed):
        profiles, intervals = library.create_performance_profile(
            matrices, taus, custom_profile_func=_score_distribution, reps=reps
        )
    out: dict[str, Any] = {"tau": taus.tolist()}
    for name in matrices:
        one_run = matrices[name].shape[0] <= 1  # every resample is that run: no band
        out[name] = {
            "fraction_above": np.asarray(profiles[name]).tolist(),
            "ci95_low": None if one_run else np.asarray(intervals[name][0]).tolist(),
            "ci95_high": None if one_run else np.asarray(intervals[name][1]).tolist(),
        }
    return out


# ----------------------------------------------------------------------------------- evaluate and sweep
def _block_header(normalised: bool, reps: int, seed: int) -> dict[str, Any]:
    return {
        "interval": INTERVAL,
        "normalisation": NORMALISATION if normalised else "none (raw returns: no scripted or random policy)",
        "excluded_when": f"R_scripted - R_random <= max({RELATIVE_MIN_GAP:g} * max(|R_scripted|, "
        f"|R_random|), {ABSOLUTE_MIN_GAP:g}) (scripted does not beat random): the world is left out of the "
        "normalised aggregates",
        "bootstrap_reps": reps,
        "bootstrap_seed": seed,
    }


def eval_aggregates(
    results: Mapping[str, Any], reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """The `aggregates` block of an eval JSON dict: each trained policy's IQM, mean, median (and
    optimality gap when normalised) over `[seeds, worlds]`, and the probability of improvement of
    greedy over stochastic and of each trained policy over scripted."""
    names = [n for n in TRAINED_POLICIES if n in results["policies"]]
    columns, info = {}, {}
    for name in names:
        columns[name], info = normalised_columns(results, name)
    block = {**_block_header(info.get("normalised", False), reps, seed), **info}
    if not names or not columns[names[0]]:
        return {**block, "policies": {}, "probability_of_improvement": {}}
    matrices = {n: score_matrix(columns[n]) for n in names}
    block["policies"] = aggregate_intervals(matrices, info["normalised"], reps, seed)
    for n in names:
        block["policies"][n]["num_runs"], block["policies"][n]["num_columns"] = matrices[n].shape
    pairs = [("greedy", "stochastic")] if len(names) == 2 else []
    if "scripted" in results["policies"]:
        scripted_columns, _ = normalised_columns(results, "scripted")
        matrices["scripted"] = score_matrix({k: scripted_columns[k] for k in columns[names[0]]})
        pairs += [(n, "scripted") for n in names]
    block["probability_of_improvement"] = {
        f"{x} over {y}": probability_of_improvement(matrices[x], matrices[y], reps, seed) for x, y in pairs
    }
    return block


def _interval_text(stat: Mapping[str, Any]) -> str:
    """`point [low, high]` to three decimals, or `point (one seed: no interval)`."""
    if stat.get("ci95") is None:
        return f"{stat['point']:.3f} ({ONE_SEED})"
    return f"{stat['point']:.3f} [{stat['ci95'][0]:.3f}, {stat['ci95'][1]:.3f}]"


def format_eval_aggregates(block: Mapping[str, Any]) -> str:
    """The printed lines of an `aggregates` block: one row per trained policy, then P(improvement)."""
    if not block.get("policies"):
        if block.get("normalised") and block.get("excluded_worlds"):
            return f"robust aggregates: none ({SCRIPTED_NOT_ABOVE_RANDOM} on any world)"
        return "robust aggregates: none (no trained policy)"
    what = "normalised by scripted/random on the same worlds" if block["normalised"] else "raw returns"
    lines = [f"IQM ({block['interval']}, {what}):"]
    metrics = [m for m in METRICS if m in next(iter(block["policies"].values()))]
    rows = {name: [_interval_text(stats[m]) for m in metrics] for name, stats in block["policies"].items()}
    width = max(24, *(len(c) + 2 for cells in rows.values() for c in cells))
    lines.append("  " + f"{'policy':<11s}" + "".join(f"{m:>{width}s}" for m in metrics))
    for name, cells in rows.items():
        lines.append("  " + f"{name:<11s}" + "".join(f"{c:>{width}s}" for c in cells))
    for pair, p in block["probability_of_improvement"].items():
        lines.append(f"  P({pair}) = {_interval_text(p)}")
    if block.get("excluded_worlds"):
        lines.append(f"  worlds left out ({SCRIPTED_NOT_ABOVE_RANDOM}): {block['excluded_worlds']}")
    if block.get("random_above_scripted_worlds"):
        swapped = block["random_above_scripted_worlds"]
        lines.append(f"  of them, worlds where random beats scripted: {swapped}")
    return "\n".join(lines)


#: sweep grid keys that change the task rather than the method: entries differing only in these are
#: pooled into one group, their cells side by side as columns
TASK_KEYS = ("task", "level")


def group_label(combination: str) -> str:
    """A sweep combination without its task/level items (`"lr=1e-3,task=2"` -> `"lr=1e-3"`)."""
    items = [i for i in combination.split(",") if i and i.split("=")[0].strip() not in TASK_KEYS]
    return ",".join(items) or "default"


def sweep_aggregates(
    entries: Sequence[tuple[str, Mapping[str, Any]]],
    baseline: str | None = None,
    policy: str = "greedy",
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Aggregates over a sweep's `(combination, eval JSON dict)` entries: entries differing only in task
    or level are pooled into one group (columns `(task, level, world)`), each entry normalised by its
    own scripted/random results; per group IQM/mean/median/optimality gap, performance profiles, and the
    probability of improvement of each group over `baseline` (a group label; default the first)."""
    groups: dict[str, dict[tuple, np.ndarray]] = {}
    normalised, excluded, swapped, problems = [], {}, {}, {}
    for combination, results in entries:
        label = group_label(combination)
        cell = (str(results.get("task")), str(results.get("level")))  # level None: the env's default
        columns, info = normalised_columns(results, policy, cell)
        normalised.append(info["normalised"])
        if info["excluded_worlds"]:
            excluded[combination] = info["excluded_worlds"]
        if info["random_above_scripted_worlds"]:
            swapped[combination] = info["random_above_scripted_worlds"]
        group = groups.setdefault(label, {})
        runs = {len(v) for v in [*group.values(), *columns.values()]}
        if len(runs) > 1:
            problems[label] = f"its entries have different seed counts {sorted(runs)}; not pooled"
        group.update(columns)
    for label in problems:
        groups.pop(label)
    groups = {k: v for k, v in groups.items() if v}
    is_normalised = bool(normalised) and all(normalised)
    if not is_normalised and any(normalised):  # never pool normalised with raw scores
        raise ValueError("some sweep entries have scripted/random results and some do not; cannot compare")
    block: dict[str, Any] = {
        **_block_header(is_normalised, reps, seed),
        "normalised": is_normalised,
        "policy": policy,
        "pooled_keys": list(TASK_KEYS),
        "excluded_worlds": excluded,
        "random_above_scripted_worlds": swapped,
        "not_aggregated": problems,
        "groups": {},
        "probability_of_improvement": {},
    }
    if not groups:
        return block
    matrices = {k: score_matrix(v) for k, v in groups.items()}
    block["groups"] = aggregate_intervals(matrices, is_normalised, reps, seed)
    for k, m in matrices.items():
        block["groups"][k]["num_runs"], block["groups"][k]["num_columns"] = m.shape
    baseline = baseline if baseline is not None else next(iter(groups))
    if baseline not in groups:
        raise ValueError(f"baseline entry {baseline!r} is not one of {list(groups)}")
    block["baseline"] = baseline
    for label, columns in groups.items():
        if label == baseline:
            continue
        shared = sorted(set(columns) & set(groups[baseline]))  # the same worlds and tasks only
        if not shared:
            block["probability_of_improvement"][f"{label} over {baseline}"] = None
            continue
        x = np.stack([columns[k] for k in shared], axis=1)
        y = np.stack([groups[baseline][k] for k in shared], axis=1)
        p = probability_of_improvement(x, y, reps, seed)
        block["probability_of_improvement"][f"{label} over {baseline}"] = {**p, "num_columns": len(shared)}
    block["profiles"] = performance_profiles(matrices, reps=reps, seed=seed)
    return block


def format_sweep_aggregates(block: Mapping[str, Any]) -> str:
    """Printed lines of a sweep aggregates block: IQM per group and P(improvement) over the baseline."""
    if not block["groups"]:
        why = f"; {SCRIPTED_NOT_ABOVE_RANDOM} on the worlds left out" if block.get("excluded_worlds") else ""
        return f"robust aggregates: none (no finished entry with usable scores{why})"
    what = "normalised by scripted/random on the same worlds" if block["normalised"] else "raw returns"
    lines = [f"IQM of {block['policy']} held-out returns ({block['interval']}, {what}):"]
    for label, stats in block["groups"].items():
        lines.append(f"  {label:<30s} {_interval_text(stats['iqm'])}")
    if block["probability_of_improvement"]:
        lines.append(f"probability of improvement over {block['baseline']} ({block['interval']}):")
        for pair, p in block["probability_of_improvement"].items():
            lines.append(f"  P({pair}) = {'no shared worlds' if p is None else _interval_text(p)}")
    return "\n".join(lines)


def write_sweep_aggregates(
    sweep_dir: Any,
    entries: Sequence[tuple[str, Mapping[str, Any]]],
    baseline: str | None = None,
    title: str = "",
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """`sweep_aggregates` of `entries` written to `sweep_dir`: aggregates.json, aggregates.png (interval
    plot) and profiles.png (performance profiles); returns the block."""
    import json
    from pathlib import Path

    from hivex_jax.eval.plots import plot_aggregates, plot_performance_profiles

    sweep_dir = Path(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    block = sweep_aggregates(entries, baseline, reps=reps, seed=seed)
    (sweep_dir / "aggregates.json").write_text(json.dumps(block, indent=1))
    if block["groups"]:
        what = "normalised score" if block["normalised"] else "return"
        plot_aggregates(sweep_dir / "aggregates.png", block["groups"], f"{title} ({what})".strip())
        plot_performance_profiles(sweep_dir / "profiles.png", block["profiles"], f"{title} ({what})".strip())
    return block
