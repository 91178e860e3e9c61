"""`hivex sweep`: one run per combination of a grid, held-out results tabulated, aggregated and plotted.

A rerun of the same sweep (same --name and --out-dir) skips the combinations that finished (their
eval.json is read back) and resumes those stopped midway from their latest checkpoint; a rerun whose
config differs from a combination's saved one (beyond `baselines.config.env.RERUN_FREE_KEYS`) is refused
before anything runs. With several processes (`--coordinator ...`, docs/distributed.md) every population
(a fused program's members x seeds, or a combination run alone) is sharded over the devices of all
processes and the programs run one after another, so each process takes part in every run and process 0
writes the members' folders and the summary."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

from baselines.cli.common import (
    add_trust_unverified_option,
    check_devices,
    checked_marl_eval_file,
    enable_compilation_cache,
    join_processes,
    split_grid_values,
    sweep_title,
)
from baselines.config import load_config, validate_env
from baselines.run import checkpoint
from baselines.run import distributed as dist
from hivex_jax.cli_support import ArgumentParser, check_writable_dir, reports_user_errors
from hivex_jax.core.errors import UserError, one_line
from hivex_jax.eval.stats import mean_ci_text


@reports_user_errors("hivex sweep")
def sweep_main(argv: list[str]) -> int:
    """`hivex sweep [--config FILE] --grid key=v1,v2 [...] [key=value ...]`: train every combination
    (each with `num_seeds` vmapped seeds), evaluate on held-out worlds, tabulate mean +- 95% CI. A
    combination that diverges (NaN/inf) is tabulated as diverged and the sweep goes on; exit status 3
    only if every combination diverged."""
    p = ArgumentParser(
        prog="hivex sweep",
        description="Seed-sweep generalisation study over a grid of config values. Each combination is a "
        "run under OUT_DIR/NAME/<combination>/; the summary goes to OUT_DIR/NAME/: sweep.json, sweep.md, "
        "sweep.png, aggregates.json/.png and profiles.png. A rerun skips finished combinations.",
        epilog="example: hivex sweep --grid lr=1e-4,3e-4 --grid level=0,3 num_seeds=5 test_worlds=6000:6050",
    )
    p.add_argument(
        "--config", default=None, help="base config (default: configs/ippo_wind_farm_control.yaml)"
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="key=v1,v2",
        help="values of one config key to sweep (repeat for more keys; lists in brackets: "
        "hidden_sizes=[64,64],[128])",
    )
    p.add_argument("--name", default="sweep", help="the sweep's folder under --out-dir (default: sweep)")
    p.add_argument("--out-dir", default="runs", help="where the sweep folder goes (default: runs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--no-fuse",
        action="store_true",
        help="one program per combination (default: combinations that differ only in data keys, e.g. "
        "lr, ent_coef, gamma, task, train as members of one population)",
    )
    p.add_argument(
        "--max-members",
        type=int,
        default=None,
        metavar="N",
        help="at most N combinations per fused program (a larger population is split)",
    )
    p.add_argument(
        "--baseline-entry",
        default=None,
        metavar="COMBINATION",
        help="the entry others are compared to by probability of improvement (default: the first); "
        "without its task=/level= items, which are pooled",
    )
    p.add_argument(
        "--marl-eval", default=None, metavar="FILE", help="also write every entry in marl-eval's JSON format"
    )
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config changes for every combination")
    dist.add_distributed_args(p)
    add_trust_unverified_option(p)
    args = p.parse_intermixed_args(argv)
    with checkpoint.trusting_unverified(args.trust_unverified):
        return _sweep(args)


def _sweep(args: Any) -> int:
    """`hivex sweep` once its options are parsed."""
    if args.max_members is not None and args.max_members < 1:
        raise UserError(f"--max-members must be at least 1; got {args.max_members}")
    join_processes(args, "hivex sweep")
    main = dist.is_main()  # process 0 prints and writes the summary
    grid: list[tuple[str, list[str]]] = []
    for item in args.grid:
        key, _, values = item.partition("=")
        key, choices = key.strip(), [v for v in split_grid_values(values) if v.strip()]
        if not key or not choices:
            raise UserError(f"--grid {item!r} must look like key=v1,v2")
        if key in dict(grid):
            raise UserError(f"--grid {key} is given twice; list all its values in one --grid {key}=v1,v2")
        grid.append((key, choices))
    combos = list(itertools.product(*[[f"{k}={v}" for v in vs] for k, vs in grid])) or [()]
    name = args.name
    if not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0") or len(name.encode()) > 200:
        raise UserError(f"--name {name[:80]!r} must be a folder name (no '/', not '.' or '..', <= 200 bytes)")
    sweep_dir = Path(args.out_dir) / name
    configs = [load_config(args.config, [*args.overrides, *combo]) for combo in combos]
    labels = [",".join(combo) or "default" for combo in combos]
    slugs = ["".join(c if c.isalnum() or c in "=.-" else "_" for c in label) for label in labels]
    from hivex_jax.eval.aggregate import group_label

    entry_names = list(dict.fromkeys(group_label(label) for label in labels))
    if args.baseline_entry is not None and group_label(args.baseline_entry) not in entry_names:
        raise UserError(f"--baseline-entry {args.baseline_entry!r} is not one of {entry_names}")
    marl_eval_file = checked_marl_eval_file(args.marl_eval)
    check_writable_dir(sweep_dir, "sweep folder")
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.loggers import check_logger

    for config in configs:
        validate_env(config)
        check_devices(config)
        check_logger(config)  # the logger's package, before any trainer is built
    enable_compilation_cache()
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.guards import NonFiniteError
    from baselines.run.runner import run_training

    for slug, config in zip(slugs, configs, strict=True):  # before anything compiles
        _check_same_config(sweep_dir / slug, config)
    fused = train_fused_programs(
        configs,
        labels,
        [sweep_dir / slug for slug in slugs],
        fuse=not args.no_fuse,
        max_members=args.max_members,
        progress=not args.no_progress and main,
    )
    rows, evals = [], []
    for index, (label, slug, config) in enumerate(zip(labels, slugs, configs, strict=True)):
        run_dir = sweep_dir / slug
        done = _finished_run(run_dir)
        if index in fused and "diverged" in fused[index]:
            rows.append({"combination": label, "run_dir": str(run_dir), "diverged": fused[index]["diverged"]})
            continue
        if index in fused:
            summary = fused[index]
        elif done is not None:  # a rerun: this combination finished before
            if main:
                print(f"\n=== {label} === finished earlier: {run_dir}")
            summary = {"run_dir": str(run_dir), "eval": done}
        else:
            if main:
                print(f"\n=== {label} ===")
            # stopped midway (killed, preempted): continue from its latest checkpoint
            resume = {"resume": True} if checkpoint.latest_step(run_dir) is not None else {}
            try:
                summary = run_training(config, run_dir, progress=not args.no_progress and main, **resume)
            except NonFiniteError as exc:  # one diverged combination (e.g. too high an lr) is a result
                if main:
                    print(f"hivex sweep: {label}: {one_line(exc)}", file=sys.stderr)
                rows.append({"combination": label, "run_dir": str(run_dir), "diverged": one_line(exc)})
                continue
        policies = summary["eval"]["policies"]
        if "worlds" in summary["eval"]:  # per-world results: what the robust aggregates read
            evals.append((label, summary["eval"]))
        rows.append(
            {
                "combination": label,
                "run_dir": summary["run_dir"],
                **{f"{n}": policies[n]["summary"] for n in policies},
            }
        )
    finished = [r for r in rows if "diverged" not in r]
    if not main:  # process 0 writes the summary from the same rows
        return 0 if finished else 3
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / "sweep.json").write_text(json.dumps(rows, indent=1))
    names = [n for n in ("greedy", "stochastic", "scripted", "random") if finished and n in finished[0]]
    columns = [f"{n} return (mean ± Student-t 95% CI over seeds)" for n in names]
    scored = "scripted" in names and "random" in names  # hivex_jax.eval.score's, from the policies' means
    columns += ["normalised score (greedy / stochastic)"] if scored else []
    columns = columns or ["result"]  # all diverged: one column
    lines = ["| combination | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for r in rows:
        if "diverged" in r:
            lines.append(
                f"| {r['combination']} | " + " | ".join(["diverged (NaN/inf)"] * len(columns)) + " |"
            )
            continue
        lines.append(
            f"| {r['combination']} | "
            + " | ".join(  # a policy run once (scripted, random) has no spread over seeds
                mean_ci_text(r[n]["mean"], r[n]["ci95"], r[n].get("num_seeds", 2))
                if n in ("greedy", "stochastic")
                else f"{r[n]['mean']:.1f}"
                for n in names
            )
            + (f" | {_normalised_text(r)}" if scored else "")
            + " |"
        )
    table = "\n".join(lines)
    (sweep_dir / "sweep.md").write_text(table + "\n")
    from hivex_jax.eval.plots import sweep_summary

    if finished:  # the plot shows the combinations that finished
        sweep_summary(sweep_dir / "sweep.png", finished, sweep_title(configs))
    print("\n" + table)
    print(f"wrote {sweep_dir / 'sweep.json'}, sweep.md" + (" and sweep.png" if finished else ""))
    if evals:
        _sweep_aggregates(sweep_dir, evals, args.baseline_entry, marl_eval_file, sweep_title(configs))
    return 0 if finished else 3


def _normalised_text(row: dict[str, Any]) -> str:
    """A sweep row's "greedy / stochastic" normalised score, or why there is none."""
    from hivex_jax.eval import score

    fields = score.score_fields({n: row[n]["mean"] for n in ("greedy", "stochastic", "scripted", "random")})
    if fields.get("normalised_score_note"):
        return "none (scripted does not beat random)"
    return " / ".join(score.format_score(v) for v in fields["normalised_score"].values())


def train_fused_programs(
    configs: list[Any],
    labels: list[str],
    run_dirs: list[Path],
    fuse: bool = True,
    max_members: int | None = None,
    progress: bool = True,
    command: str = "hivex sweep",
) -> dict[int, dict[str, Any]]:
    """Train the unfinished runs that fuse (`baselines.run.fused_plan.plan_sweep`; none without `fuse`) as
    populations, each member into its own run folder, saying the plan first; returns their summaries by
    index (a diverged member: `{"diverged": ...}`). A population stopped midway resumes as one from its
    members' checkpoints (members at different updates form separate programs). The rest (alone in their
    program, finished earlier) are left to the caller, which trains them one by one
    (`hivex sweep`, `scripts/hivex_results.py run --fuse`); `command` starts the lines it prints."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.fused import run_fused
    from baselines.run.fused_plan import describe_plan, plan_sweep

    main = dist.is_main()
    pending = [i for i, run_dir in enumerate(run_dirs) if _finished_run(run_dir) is None]
    programs, populations = plan_sweep([configs[i] for i in pending], fuse, max_members)
    at_step: list[list[int]] = []
    for program in programs:  # members resume together only from the same checkpoint
        steps: dict[Any, list[int]] = {}
        for i in program:
            steps.setdefault(checkpoint.latest_step(run_dirs[pending[i]]), []).append(i)
        at_step.extend(steps.values())
    programs = [[pending[i] for i in program] for program in at_step]
    if main and pending:
        print(f"{command}: {describe_plan(programs, [c.num_seeds for c in configs])}")
    out: dict[int, dict[str, Any]] = {}
    for program in programs:
        if len(program) < 2:
            continue
        if main:
            print("\n=== " + " | ".join(labels[i] for i in program) + " === (one program)")
        summaries = run_fused(
            [configs[i] for i in program],
            [run_dirs[i] for i in program],
            progress=progress,
            populations=[populations.get(pending.index(i)) for i in program],
            resume=checkpoint.latest_step(run_dirs[program[0]]) is not None,
        )
        for i, summary in zip(program, summaries, strict=True):
            if "diverged" in summary and main:
                print(f"{command}: {labels[i]}: {summary['diverged']}", file=sys.stderr)
            out[i] = summary
    return out


def _check_same_config(run_dir: Path, config: Any) -> None:
    """Refuse (one line) to reuse or continue a combination's folder that was trained with another config:
    a rerun with, say, more seeds or env steps would otherwise tabulate the old runs as the new study."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.config import saved_config_changes
    from baselines.config.values import ConfigError

    try:
        changed = saved_config_changes(run_dir, config)
    except ConfigError as exc:
        raise UserError(f"{exc}; use another --name") from exc
    if changed:
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        raise UserError(
            f"{run_dir} was trained with another config ({', '.join(changed[:4])}{more}); a sweep rerun "
            "reuses its finished combinations, so use another --name (or --out-dir) for a new study"
        )


def _finished_run(run_dir: Path) -> dict[str, Any] | None:
    """The eval.json results of a combination that finished in an earlier run of the sweep, else None."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
        if summary.get("finished"):
            return json.loads((run_dir / "eval.json").read_text())
    except (OSError, ValueError):  # not started, or killed before its final files
        pass
    return None


def _sweep_aggregates(
    sweep_dir: Path, evals: list, baseline: str | None, marl_eval_file: Path | None, title: str
) -> None:
    """aggregates.json/.png and profiles.png of the finished entries, P(improvement) printed over the
    baseline entry (the first finished one if the named one diverged); the marl-eval file if asked."""
    from hivex_jax.eval.aggregate import format_sweep_aggregates, group_label, write_sweep_aggregates

    finished = [group_label(label) for label, _ in evals]
    if baseline is not None and group_label(baseline) not in finished:
        print(f"note: --baseline-entry {baseline!r} did not finish; comparing to {finished[0]!r}")
        baseline = None
    block = write_sweep_aggregates(sweep_dir, evals, group_label(baseline) if baseline else None, title)
    print("\n" + format_sweep_aggregates(block))
    written = ["aggregates.json"] + (["aggregates.png", "profiles.png"] if block["groups"] else [])
    if marl_eval_file is not None:
        from hivex_jax.eval.marl_eval import write_marl_eval

        write_marl_eval(marl_eval_file, evals)
        written.append(str(marl_eval_file))
    print(f"wrote {', '.join(written)}")
