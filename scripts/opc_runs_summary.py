"""Summarise Ocean Plastic Collection training runs: one row per run and policy.

    python scripts/opc_runs_summary.py RUN_DIR [RUN_DIR ...] [--curve] [--per-seed] [--eval-file NAME]

Per run and policy (greedy, stochastic, scripted, random): the held-out return (mean over worlds per
seed, then mean +- 95 % CI over seeds, Student t), the normalised score (R - R_random) / (R_scripted -
R_random) and the fraction of the scripted return on the same worlds (`hivex_jax.eval.score`, per seed; mean
+- 95 % CI; "n/a" where scripted does not beat random, or where the scripted return is not positive), and
per-vessel means of pebbles collected, border crossings and vessel collisions; then compile / training /
evaluation seconds from summary.json. `--curve` adds the learning curve: training episode return (mean over
seeds) against env steps per seed, from metrics.csv. `--per-seed` adds a table of each seed's normalised
score, fraction of scripted and vessels collided (greedy, stochastic).
`--eval-file` reads another evaluation of the runs than eval.json, e.g. the zero-shot one that `hivex
evaluate RUN num_agents=3` writes (`eval_6000-6031__num_agents=3.json`); a run without it is named on stderr.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from hivex_jax.eval import score  # noqa: E402
from hivex_jax.eval.aggregate import policy_scores  # noqa: E402
from hivex_jax.eval.stats import mean_ci95  # noqa: E402

POLICIES = ("greedy", "stochastic", "scripted", "random")


def _per_seed(per_world: list[dict], stat: str) -> np.ndarray:
    """f64[seeds]: the mean over worlds of one per-vessel statistic."""
    values = [np.atleast_1d(w["stats"][stat]) for w in per_world]
    return np.asarray(values, dtype=np.float64).mean(axis=0)


def _seed_scores(results: dict) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """`{"normalised": f, "fraction": f}`: per-seed returns -> per-seed scores (NaN where there is none)."""
    scripted = float(policy_scores(results, "scripted").mean())
    random = float(policy_scores(results, "random").mean())
    return {
        "normalised": lambda r: score.normalised_score(r, scripted, random),
        "fraction": lambda r: score.fraction_of_scripted(r, scripted),
    }


def _mean_ci(values: np.ndarray) -> str:
    """ "mean ± CI" of per-seed scores to 3 decimals, or "n/a" where there is none."""
    stats = score.over_seeds(values)
    return "n/a" if stats is None else f"{stats['mean']:.3f} ± {stats['ci95']:.3f}"


def run_rows(run_dir: Path, eval_file: str = "eval.json") -> list[str]:
    """Markdown rows of one finished run (needs its evaluation file, eval.json by default)."""
    results = json.loads((run_dir / eval_file).read_text())
    policies = results["policies"]
    scores = _seed_scores(results)
    rows = []
    for policy in POLICIES:
        per_world = policies[policy]["per_world"]
        returns = policy_scores(results, policy).mean(axis=1)  # f64[seeds]
        ret, ret_ci = mean_ci95(returns)  # half-width 0 for one seed
        normalised, fraction = (_mean_ci(scores[k](returns)) for k in ("normalised", "fraction"))
        pebbles = _per_seed(per_world, "pebbles_collected").mean()
        crossed = _per_seed(per_world, "border_crossings").mean()
        collided = _per_seed(per_world, "vessel_collisions").mean()
        seeds = ", ".join(f"{r:.1f}" for r in returns)
        rows.append(
            f"| {run_dir.name} | {policy} | {ret:.1f} ± {ret_ci:.1f} ({seeds}) | {normalised} | {fraction} "
            f"| {pebbles:.1f} | {crossed:.2f} | {collided:.2f} | {len(per_world)} |"
        )
    return rows


def per_seed_row(run_dir: Path, eval_file: str = "eval.json") -> str:
    """A markdown row: per seed, greedy and stochastic normalised score, fraction of scripted and vessels
    collided."""
    results = json.loads((run_dir / eval_file).read_text())
    scores = _seed_scores(results)
    cells = []
    for policy in ("greedy", "stochastic"):
        returns = policy_scores(results, policy).mean(axis=1)  # f64[seeds]
        collided = _per_seed(results["policies"][policy]["per_world"], "vessel_collisions")
        for values in (scores["normalised"](returns), scores["fraction"](returns), collided):
            cells.append(" ".join(score.format_score(v, 2) for v in values))
    return f"| {run_dir.name} | " + " | ".join(cells) + " |"


def timing(run_dir: Path) -> str:
    """One line: env steps per seed, compile / train / eval seconds."""
    summary = json.loads((run_dir / "summary.json").read_text())
    results = json.loads((run_dir / "eval.json").read_text())
    parts = [f"{k} {float(summary.get(k) or 0.0):.0f}" for k in ("compile_s", "train_s", "eval_s")]
    return f"{run_dir.name}: {results['env_steps_per_seed']:,} env steps per seed; s: " + ", ".join(parts)


def curve(run_dir: Path, points: int = 10) -> str:
    """Training episode return (mean over seeds, over the updates since the previous point) vs env steps."""
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c.endswith("/episode_return")]
    steps = np.array([float(r["env_steps"]) for r in rows])
    values = np.array([[float(r[c]) if r[c] else np.nan for c in cols] for r in rows])
    out = []
    for chunk in np.array_split(np.arange(len(rows)), min(points, len(rows))):
        v = np.nanmean(values[chunk]) if np.isfinite(values[chunk]).any() else float("nan")
        out.append(f"{steps[chunk[-1]]:.0f}: {v:.1f}")
    return f"{run_dir.name} training episode return vs env steps per seed: " + "; ".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--curve", action="store_true")
    parser.add_argument("--per-seed", action="store_true", help="add per-seed scores and collisions")
    parser.add_argument(
        "--eval-file", default="eval.json", help="the evaluation file in each run folder (default eval.json)"
    )
    args = parser.parse_args(argv)
    print(
        "| run | policy | return ± 95 % CI (per seed) | normalised score | fraction of scripted | pebbles "
        "| crossed | collided | worlds |\n|---|---|---|---|---|---|---|---|---|"
    )
    for run_dir in args.runs:
        if (run_dir / args.eval_file).is_file():
            print("\n".join(run_rows(run_dir, args.eval_file)))
        else:
            print(f"opc_runs_summary: no {args.eval_file} in {run_dir}", file=sys.stderr)
    if args.per_seed:
        print(
            "\n| run | greedy normalised | greedy fraction | greedy collided | stochastic normalised "
            "| stochastic fraction | stochastic collided |\n|---|---|---|---|---|---|---|"
        )
        for run_dir in args.runs:
            if (run_dir / args.eval_file).is_file():
                print(per_seed_row(run_dir, args.eval_file))
    for run_dir in args.runs:
        if (run_dir / "eval.json").is_file() and (run_dir / "summary.json").is_file():
            print(timing(run_dir))
        if args.curve and (run_dir / "metrics.csv").is_file():
            print(curve(run_dir))


if __name__ == "__main__":
    main()
