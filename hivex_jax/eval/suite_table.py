"""The whole suite's learning results (issue 16) as one table: every env x {IPPO, MAPPO}, trained with its
shipped config into `OUT_DIR/<algo>_<env>/` (`scripts/suite_results.py run`) and evaluated on held-out
worlds 6000-6031. Per cell and policy (greedy, stochastic): the held-out return (mean over worlds, then
mean +- 95 % CI over seeds, Student t), the fraction of the scripted controller's return on the same worlds
(per seed: seed mean / scripted mean; then mean and 95 % CI over seeds, Student t), the issue's target, env
steps per seed and the run's wall time (compile + train + final evaluation, from summary.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval.stats import mean_ci95

TEST_WORLDS = "6000:6032"
MARKER_START, MARKER_END = "<!-- suite-results:start -->", "<!-- suite-results:end -->"
#: short name -> (config stem, issue 16's target as a fraction of the scripted return)
ENVS = {
    "wfc": ("wind_farm_control", 0.92),
    "wrm": ("wildfire_resource_management", 0.95),
    "dbr": ("drone_based_reforestation", 0.8),
    "opc": ("ocean_plastic_collection", 0.6),
    "aws": ("aerial_wildfire_suppression", 1.0),
}
ALGOS = ("ippo", "mappo")


def cells(spec: str | None) -> list[tuple[str, str]]:
    """`[(algo, env short name)]` from SPEC (`ALGO:ENV,...`), or every cell; ValueError for a bad one."""
    if not spec:
        return [(a, e) for e in ENVS for a in ALGOS]
    out = []
    for part in spec.split(","):
        algo, _, env = part.strip().partition(":")
        if algo not in ALGOS or env not in ENVS:
            raise ValueError(
                f"bad cell {part!r}: expected ALGO:ENV with ALGO in {ALGOS}, ENV in {list(ENVS)}"
            )
        out.append((algo, env))
    return out


def cell_name(algo: str, env: str) -> str:
    """The cell's run folder name under OUT_DIR: `<algo>_<env>`."""
    return f"{algo}_{env}"


def cell_config(algo: str, env: str) -> str:
    """The cell's shipped config file name under configs/."""
    return f"{algo}_{ENVS[env][0]}.yaml"


def cell_rows(run_dir: Path, target: float) -> list[dict[str, Any]]:
    """The table rows (greedy, stochastic) of one finished cell."""
    results = json.loads((run_dir / "eval.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    policies = results["policies"]
    scripted = float(np.mean([w["return_mean"] for w in policies["scripted"]["per_world"]]))
    wall = sum(float(summary.get(k) or 0.0) for k in ("compile_s", "train_s", "eval_s"))
    rows = []
    for policy in ("greedy", "stochastic"):
        per_seed_world = np.array([w["return_per_seed"] for w in policies[policy]["per_world"]]).T
        seed_means = per_seed_world.mean(axis=1)  # [seeds]
        ret, ret_ci = mean_ci95(seed_means)
        frac, frac_ci = mean_ci95(seed_means / scripted)
        rows.append(
            {
                "env_id": results["env_id"],
                "algo": results["algo"],
                "policy": policy,
                "return": float(ret),
                "return_ci95": float(ret_ci),
                "scripted": scripted,
                "fraction": float(frac),
                "fraction_ci95": float(frac_ci),
                "target": target,
                "num_seeds": int(len(seed_means)),
                "num_worlds": int(per_seed_world.shape[1]),
                "env_steps_per_seed": int(results["env_steps_per_seed"]),
                "wall_s": wall,
                "backend": summary.get("backend", "?"),
                "jax_version": summary.get("jax_version", "?"),
            }
        )
    return rows


def table(out_dir: Path) -> str:
    """The Markdown table of every finished cell under `out_dir`."""
    lines = [
        "| env | algo | policy | held-out return | scripted | fraction of scripted (95 % CI) | target "
        "| met | seeds x worlds | env steps per seed | wall s (run) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    missing = []
    for env, (_stem, target) in ENVS.items():
        for algo in ALGOS:
            run_dir = Path(out_dir) / cell_name(algo, env)
            if not (run_dir / "eval.json").is_file():
                missing.append(f"{algo}:{env}")
                continue
            for r in cell_rows(run_dir, target):
                met = "yes" if r["fraction"] >= target else "no"
                lines.append(
                    f"| {r['env_id']} | {r['algo'].upper()} | {r['policy']} | {r['return']:.1f} ± "
                    f"{r['return_ci95']:.1f} | {r['scripted']:.1f} | "
                    f"{r['fraction']:.2f} ± {r['fraction_ci95']:.2f} | {target:g} | {met} | "
                    f"{r['num_seeds']} x {r['num_worlds']} | {r['env_steps_per_seed']:,} | "
                    f"{r['wall_s']:.0f} ({r['backend']}, jax {r['jax_version']}) |"
                )
    if missing:
        lines.append("")
        lines.append("Not run yet: " + ", ".join(missing) + ".")
    return "\n".join(lines)


def write_between_markers(path: Path, text: str) -> None:
    """Replace what lies between the suite-results markers of `path` by `text` (ValueError: no markers)."""
    page = path.read_text()
    if MARKER_START not in page or MARKER_END not in page:
        raise ValueError(f"{path} has no {MARKER_START} ... {MARKER_END} markers")
    head, rest = page.split(MARKER_START, 1)
    _, tail = rest.split(MARKER_END, 1)
    path.write_text(f"{head}{MARKER_START}\n{text}\n{MARKER_END}{tail}")
