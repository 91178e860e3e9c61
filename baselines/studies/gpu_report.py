"""Markdown summary of a `scripts/gpu_report.sh` output folder (for docs/benchmarks.md):
`scripts/gpu_report_summary.py OUT_FOLDER` prints `summary(OUT_FOLDER)`."""

from __future__ import annotations

import json
from pathlib import Path

#: the GPU report's goals
TRAIN_GOAL_ENV_STEPS_PER_S = 1.85e7
TARGET_GOAL_S = 60.0


def _load(path: Path) -> dict | None:
    """JSON at `path`, or None when the step did not write it (failed or timed out)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _targets(out: Path) -> list[str]:
    """The per-env time-to-target table of a `PART=targets` run (target_<env>/summary.json)."""
    folders = sorted(out.glob("target_*"))
    if not folders:
        return []
    lines = ["## Time to target per environment (configs/ippo_<env>_gpu.yaml)", ""]
    lines += [
        "| env | target (greedy held-out) | reached | update | env steps per seed | s from start "
        "| compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    for folder in folders:
        summary = _load(folder / "summary.json")
        env = folder.name[len("target_") :]
        if summary is None or "target" not in summary:
            lines.append(f"| {env} | | failed or timed out (see log.txt) | | | | |")
            continue
        target = summary["target"]
        if target["reached"]:
            lines.append(
                f"| {env} | {target['stop_at_test_return']:g} | {target['test_return_greedy']:.1f} | "
                f"{target['update']} | {target['env_steps_per_seed']:,} | {target['seconds_total']:.1f} | "
                f"{summary['compile_s']:.1f} |"
            )
        else:
            lines.append(
                f"| {env} | {target['stop_at_test_return']:g} | not in {summary['updates_done']} updates "
                "| | | "
                f"{summary['train_s'] + summary['compile_s']:.1f} | {summary['compile_s']:.1f} |"
            )
    return lines + [""]


def _sweeps(out: Path) -> list[str]:
    """The fused-sweep table of a `PART=sweeps` run: per sweep folder its combinations, rows
    (combinations x seeds), wall seconds of its step and env steps per second over every row; then the
    --no-fuse / fused wall-time ratio of each grid measured both ways."""
    folders = sorted(p for p in out.glob("sweep_*") if p.is_dir())
    if not folders:
        return []
    lines = ["## Fused sweeps against --no-fuse (hivex sweep)", ""]
    lines += [
        "| sweep | combinations | rows (x seeds) | wall s | env steps/s, all rows |",
        "|---|---|---|---|---|",
    ]
    walls = {}
    for folder in folders:
        step = _load(out / f"step_{folder.name}.json")
        evals = [_load(p) for p in sorted(folder.glob("*/eval.json"))]
        evals = [e for e in evals if e is not None]
        if step is None or step.get("exit") != 0 or not evals:
            lines.append(f"| {folder.name} | failed or timed out (see log.txt) | | | |")
            continue
        rows = sum(e["num_seeds"] for e in evals)
        steps = sum(e["num_seeds"] * e["env_steps_per_seed"] for e in evals)
        wall = walls[folder.name] = step["seconds"]
        lines.append(f"| {folder.name} | {len(evals)} | {rows} | {wall} | {steps / max(wall, 1):.3g} |")
    for name, wall in walls.items():
        grid = name.removesuffix("_fused")
        alone = walls.get(grid + "_nofuse") if name.endswith("_fused") else None
        if alone:
            lines.append(f"\n{grid}: --no-fuse takes {alone / max(wall, 1):.2f}x the fused wall time.")
    return lines + [""]


def summary(out: Path) -> str:
    """The summary of `out` as Markdown lines."""
    lines = [f"# GPU report ({out})", "", "```", (out / "env.txt").read_text().strip(), "```", ""]

    sweeps = _sweeps(out)
    if sweeps and not (out / "time_to_target").is_dir():  # a PART=sweeps folder
        return "\n".join(lines + sweeps)
    lines += sweeps
    targets = _targets(out)
    lines += targets
    trains = sorted(out.glob("train_*seeds.json"), key=lambda p: int(p.stem.split("_")[1][:-5]))
    if targets and not trains and not (out / "time_to_target").is_dir():  # a PART=targets folder
        return "\n".join(lines)
    lines += ["## End-to-end IPPO on Wind Farm Control", ""]
    lines += [
        "| seeds | envs/seed | updates timed | env steps/s (all seeds) | vs 1.85e7 goal | s per update "
        "| compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    per_update = {}
    for path in trains:
        t = _load(path)
        if t is None:
            lines.append(f"| {path.stem} | failed or timed out (see log.txt) | | | | | |")
            continue
        per_update[t["num_seeds"]] = t["seconds"] / t["num_updates"]
        lines.append(
            f"| {t['num_seeds']} | {t['num_envs']} | {t['num_updates']} | {t['env_steps_per_s']:.3g} | "
            f"{t['env_steps_per_s'] / TRAIN_GOAL_ENV_STEPS_PER_S:.2f}x | "
            f"{per_update[t['num_seeds']]:.3f} | {t['compile_s']:.1f} |"
        )
    many = max(per_update, default=1)
    if 1 in per_update and many > 1:
        ratio = per_update[many] / per_update[1]
        lines += ["", f"{many} seeds take {ratio:.2f}x the wall time of 1 seed per update (goal <= 2x)."]

    peer = _load(out / "peer_train_mpe.json")
    ours = _load(out / "train_1seeds.json")
    if peer is not None and ours is not None:
        lines += [
            "",
            f"The same trainer and sizes on {peer['env_id']}: "
            f"{peer['env_steps_per_s']:.3g} env steps/s ({peer['agent_steps_per_s']:.3g} agent steps/s); "
            "Wind Farm / MPE: "
            f"{ours['env_steps_per_s'] / peer['env_steps_per_s']:.2f}x env steps, "
            f"{ours['agent_steps_per_s'] / peer['agent_steps_per_s']:.2f}x agent steps.",
        ]

    summary = _load(out / "time_to_target" / "summary.json")
    lines += ["", "## Time to 0.92 of the maximum return (4600 of 4999)", ""]
    if summary is None or "target" not in summary:
        lines.append("no summary.json: the run failed or timed out (see log.txt)")
    else:
        target = summary["target"]
        if target["reached"]:
            lines.append(
                f"reached {target['test_return_greedy']:.1f} (greedy, held-out worlds) at update "
                f"{target['update']} ({target['env_steps_per_seed']:,} env steps): "
                f"{target['seconds_total']:.1f} s from the start, including {summary['compile_s']:.1f} s of "
                f"compilation (goal < {TARGET_GOAL_S:.0f} s)"
            )
        else:
            lines.append(
                f"not reached in {summary['updates_done']} updates ({summary['train_s']:.1f} s + "
                f"{summary['compile_s']:.1f} s compilation)"
            )

    lines += ["", "## Random-action env throughput", ""]
    lines += [
        "| env | worlds | env steps/s | agent steps/s | vs peer (agent steps) | compile s |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(out.glob("bench_*.json")):
        bench = _load(path)
        if bench is None:
            lines.append(f"| {path.stem[6:]} | failed or timed out | | | | |")
            continue
        tag = f" (pool of {bench['pregenerate']})" if bench.get("pregenerate") else ""
        for row in bench["results"]:
            ratio = "-"
            if "ratio_agent_steps" in row:  # the peer's id up to its first _ or -: MPE, Craftax
                peer_short = row["peer"]["env"].split("_")[0].split("-")[0]
                ratio = f"{row['ratio_agent_steps']:.2f}x {peer_short}"
            lines.append(
                f"| {bench['env']}{tag} | {row['batch']} | {row['env_steps_per_s']:.3g} | "
                f"{row['agent_steps_per_s']:.3g} | {ratio} | {row['compile_s']:.1f} |"
            )
    return "\n".join(lines)
