"""`hivex train | evaluate | sweep` (dispatched here by `hivex_jax.cli`).

Every check of the user's input (options, config, env options, run folder, output folder) runs before
the trainer is built, and fails as one line on stderr with exit status 2 (`UserError`).
"""

from __future__ import annotations

import os

# jaxlib 0.10.x deadlocks on 2-core CPUs when two batched LAPACK calls run at once: one CPU process.
os.environ.setdefault("PJRT_NPROC", "1")


def _cpu_compile_flags() -> None:
    """On CPU-only installs, compile with LLVM optimisation level 1 unless XLA_FLAGS says otherwise:
    measured on the default config, it cuts XLA's compile time by ~40% at the same training speed
    (level 0 would triple the run time). Must run before jax is imported."""
    import importlib.util

    if any(importlib.util.find_spec(p) for p in ("jax_cuda12_plugin", "jax_cuda13_plugin", "libtpu")):
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_backend_optimization_level=1").strip()


_cpu_compile_flags()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from baselines import checkpoint  # noqa: E402
from baselines.config import (  # noqa: E402
    ConfigError,
    PPOConfig,
    load_config,
    parse_overrides,
    validate_env,
)
from hivex_jax.core.errors import (  # noqa: E402
    ArgumentParser,
    UserError,
    check_positive,
    check_writable_dir,
    one_line,
    reports_user_errors,
    user_input,
    world_seeds,
)

#: keys that may change on --resume without breaking the run's continuity
RESUME_SAFE_KEYS = {"total_env_steps", "eval_every", "checkpoint_every", "gif_stride", "gif_frames"}


def _compilation_cache() -> None:
    """Keep compiled programs on disk (default ~/.cache/hivex_jax/xla; HIVEX_JAX_CACHE_DIR overrides,
    an empty value disables): a second run of the same config skips XLA compilation."""
    path = os.environ.get("HIVEX_JAX_CACHE_DIR", str(Path.home() / ".cache" / "hivex_jax" / "xla"))
    if not path:
        return
    import jax

    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    except (OSError, AttributeError) as exc:  # read-only home, or an older jax
        print(f"note: compilation cache disabled ({exc})", file=sys.stderr)


def _run_folder_config(run_dir: Path, overrides: list[str]) -> PPOConfig:
    """The config of run folder `run_dir` (plus `overrides`), after checking it is a run folder this
    version reads, with a readable checkpoint; raises `UserError` otherwise."""
    if not (run_dir / "config.yaml").is_file():
        why = "" if run_dir.is_dir() else (": it is a file" if run_dir.exists() else ": it does not exist")
        raise UserError(f"{run_dir} is not a run folder (no config.yaml{why})")
    try:
        config = load_config(run_dir / "config.yaml", overrides)
    except ConfigError as exc:
        message = one_line(exc)
        raise ConfigError(message if str(run_dir) in message else f"run folder {run_dir}: {message}") from exc
    if checkpoint.latest_step(run_dir) is None:
        raise UserError(
            f"run folder {run_dir} has no checkpoint under {run_dir / checkpoint.CHECKPOINT_DIR} "
            "(training stopped before the first one?)"
        )
    try:
        checkpoint.read_meta(run_dir)
    except (OSError, ValueError) as exc:  # missing or truncated JSON record of the latest checkpoint
        raise UserError(f"run folder {run_dir}: unreadable checkpoint record ({one_line(exc)})") from exc
    return config


def _train_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="hivex train",
        description="Train IPPO/MAPPO (default: IPPO on WindFarmControl-v0, task 0, pattern 0) and write "
        "runs/<name>/: config.yaml, metrics.csv, learning_curve.png, eval.json, episode.gif, checkpoints/.",
        epilog="examples:\n  hivex train\n  hivex train --config configs/mappo_wind_farm_control.yaml "
        "num_seeds=5 lr=1e-3\n  hivex train --resume runs/<name> total_env_steps=2000000",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--config", default=None, help="YAML config (default: configs/ippo_wind_farm_control.yaml)"
    )
    p.add_argument("--resume", default=None, metavar="RUN_DIR", help="continue the run in RUN_DIR")
    p.add_argument("--name", default=None, help="run name (folder under out_dir)")
    p.add_argument("--out-dir", default=None, help="parent folder of runs (default: runs)")
    p.add_argument(
        "--max-chunks", type=int, default=None, help="stop (with a checkpoint) after this many chunks"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. lr=1e-3")
    return p


@reports_user_errors("hivex train")
def train_main(argv: list[str]) -> int:
    """`hivex train [--config FILE | --resume RUN_DIR] [key=value ...]`."""
    args = _train_parser().parse_intermixed_args(argv)  # key=value before or after options
    check_positive(max_chunks=args.max_chunks)
    if args.resume:
        given = {"--config": args.config, "--name": args.name, "--out-dir": args.out_dir}
        ignored = [option for option, value in given.items() if value]
        if ignored:
            raise UserError(f"--resume continues RUN_DIR with its own config.yaml; drop {', '.join(ignored)}")
        run_dir = Path(args.resume)
        config = _run_folder_config(run_dir, args.overrides)
        check_writable_dir(run_dir, "run folder")
        changed = set(parse_overrides(args.overrides)) - RESUME_SAFE_KEYS
        if changed:
            print(
                f"warning: overriding {sorted(changed)} on resume: the continued run will differ from "
                "one that never stopped",
                file=sys.stderr,
            )
    else:
        overrides = list(args.overrides)
        if args.name:
            overrides.append(f"name={args.name}")
        if args.out_dir:
            overrides.append(f"out_dir={args.out_dir}")
        config = load_config(args.config, overrides)
        run_dir = None
        check_writable_dir(config.out_dir, "out_dir")
        named = Path(config.out_dir) / config.name if config.name else None  # else a fresh timestamped name
        if named is not None and checkpoint.latest_step(named) is not None:  # a complete checkpoint
            raise UserError(f"{named} already holds a run; use --resume {named} or another name")
    validate_env(config)
    _compilation_cache()
    from baselines.guards import NonFiniteError
    from baselines.runner import run_training

    try:
        summary = run_training(
            config,
            run_dir,
            resume=bool(args.resume),
            progress=not args.no_progress,
            max_chunks=args.max_chunks,
        )
    except FileExistsError as exc:  # another process took the name since the check above
        raise UserError(str(exc)) from exc
    except NonFiniteError as exc:  # training diverged: not an input error, its own exit status
        print(f"hivex train: {one_line(exc)}", file=sys.stderr)
        return 3
    state = "finished" if summary["finished"] else f"stopped at update {summary['updates_done']}"
    target = summary.get("target", {})
    if target.get("reached"):
        state = (
            f"reached the target (greedy held-out return {target['test_return_greedy']:.1f} >= "
            f"{config.stop_at_test_return:g}) at update {target['update']}, "
            f"{target['seconds_total']:.1f} s from the start (world pool, init, compilation included)"
        )
    print(
        f"{state}: {summary['run_dir']} (compile {summary['compile_s']:.1f} s, training "
        f"{summary['train_s']:.1f} s, {summary['env_steps_per_s']:,.0f} env steps/s over all seeds"
        + (f", final evaluation {summary['eval_s']:.1f} s" if "eval_s" in summary else "")
        + ")"
    )
    return 0


@reports_user_errors("hivex evaluate")
def evaluate_main(argv: list[str]) -> int:
    """`hivex evaluate RUN_DIR [--worlds 6000:6100]`: score a saved policy on any worlds."""
    p = ArgumentParser(
        prog="hivex evaluate",
        description="Evaluate a saved run (every seed, greedy and stochastic) on held-out worlds, next to "
        "the scripted and random policies; prints a table and writes eval_<worlds>.json and a per-world "
        "plot eval_<worlds>.png into the run.",
    )
    p.add_argument("run_dir")
    p.add_argument("--worlds", default=None, help='world seeds, "6000:6100" or "1,5,9" (default: test pool)')
    p.add_argument("--steps", type=int, default=None, help="episode steps (default: the env's max_steps)")
    p.add_argument("--no-baselines", action="store_true", help="skip the scripted / random policies")
    p.add_argument(
        "--out",
        default=None,
        help="JSON output (default: RUN_DIR/eval_<worlds>.json, or eval_hivex.json; a plot goes next to it)",
    )
    p.add_argument(
        "--protocol",
        choices=("held-out", "hivex"),
        default="held-out",
        help="held-out: per-world episodes, greedy and stochastic, CIs over seeds (default); hivex: HIVEX's "
        "test runs (one world after another from seed 6000, stochastic, mean of summary points, 3 runs)",
    )
    p.add_argument(
        "--marl-eval",
        default=None,
        metavar="FILE",
        help="also write the greedy policy's per-world results in marl-eval's JSON format to FILE",
    )
    p.add_argument("--agent-steps", type=int, default=None, help="hivex protocol: agent steps per test run")
    p.add_argument("--summary-freq", type=int, default=None, help="hivex protocol: agent steps per summary")
    p.add_argument(
        "--runs", type=int, default=None, help="hivex protocol: test runs (default: min(3, seeds))"
    )
    args = p.parse_args(argv)
    check_positive(
        steps=args.steps, agent_steps=args.agent_steps, summary_freq=args.summary_freq, runs=args.runs
    )
    if args.worlds is not None:
        world_seeds(args.worlds, "--worlds")
    run_dir = Path(args.run_dir)
    config = _run_folder_config(run_dir, [])
    validate_env(config)
    if args.protocol == "hivex":
        if args.marl_eval:
            raise UserError("--marl-eval exports per-world results: use it with --protocol held-out")
        return _evaluate_hivex(run_dir, config, args)
    marl_eval_file = _marl_eval_file(args.marl_eval)
    tag = (args.worlds or "test").replace(":", "-").replace(",", "_")
    out = Path(args.out) if args.out else run_dir / f"eval_{tag}.json"
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name like {out / 'eval.json'}")
    check_writable_dir(out.parent, "output folder")
    _compilation_cache()
    from baselines.evaluation import evaluate_run
    from baselines.run_files import format_results, plot_eval

    results = evaluate_run(run_dir, args.worlds, not args.no_baselines, args.steps)
    results = {"protocol": "held-out", **results}
    results["env_steps_per_seed"] = results["updates_done"] * config.steps_per_update
    from hivex_jax.eval.aggregate import eval_aggregates, format_eval_aggregates

    results["aggregates"] = eval_aggregates(results)
    out.write_text(json.dumps(results, indent=1))
    plot = plot_eval(out.with_suffix(".png"), results)
    print(format_results(results))
    print("  (return +-95% CI: Student t over training seeds of their mean over worlds; IQM above: by hand)")
    print(format_eval_aggregates(results["aggregates"]))
    if marl_eval_file is not None:
        from hivex_jax.eval.marl_eval import write_marl_eval

        write_marl_eval(marl_eval_file, [(None, results)])
    print(f"wrote {out} and {plot}" + (f" and {marl_eval_file}" if marl_eval_file else ""))
    return 0


def _marl_eval_file(value: str | None) -> Path | None:
    """The --marl-eval output file, after checking it is not a folder and its folder is writable."""
    if value is None:
        return None
    path = Path(value)
    if path.is_dir():
        raise UserError(f"--marl-eval {path} is a folder; give a file name like {path / 'marl_eval.json'}")
    check_writable_dir(path.parent, "--marl-eval folder")
    return path


def _evaluate_hivex(run_dir: Path, config: Any, args: Any) -> int:
    """`hivex evaluate RUN --protocol hivex`: checks first, then HIVEX test runs (baselines.hivex_eval)."""
    from hivex_jax.eval.hivex_protocol import hivex_test_run

    if args.worlds is not None or args.steps is not None:
        raise UserError(
            "--worlds and --steps belong to the held-out protocol; the hivex protocol plays "
            "worlds 6000, 6001, ... for --agent-steps agent steps"
        )
    with user_input():
        hivex_test_run(config.env_id, args.agent_steps, args.runs, args.summary_freq)
    if args.runs is not None and args.runs > config.num_seeds:
        raise UserError(
            f"--runs {args.runs}: the run has {config.num_seeds} training seed(s); run i tests seed i"
        )
    out = Path(args.out) if args.out else run_dir / "eval_hivex.json"
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name like {out / 'eval_hivex.json'}")
    check_writable_dir(out.parent, "output folder")
    _compilation_cache()
    from baselines.hivex_eval import evaluate_run_hivex, format_hivex_results

    results = evaluate_run_hivex(
        run_dir, args.agent_steps, args.runs, args.summary_freq, baselines=not args.no_baselines
    )
    out.write_text(json.dumps(results, indent=1))
    print(format_hivex_results(results))
    print(f"wrote {out}")
    return 0


@reports_user_errors("hivex sweep")
def sweep_main(argv: list[str]) -> int:
    """`hivex sweep [--config FILE] --grid key=v1,v2 [...] [key=value ...]`: train every combination
    (each with `num_seeds` vmapped seeds), evaluate on held-out worlds, tabulate mean +- 95% CI. A
    combination that diverges (NaN/inf) is tabulated as diverged and the sweep goes on; exit status 3
    only if every combination diverged."""
    p = ArgumentParser(
        prog="hivex sweep",
        description="Seed-sweep generalisation study over a grid of config values. Each combination is a "
        "run under OUT_DIR/NAME/<combination>/; the summary goes to OUT_DIR/NAME/sweep.json and sweep.md.",
        epilog="example: hivex sweep --grid lr=1e-4,3e-4 --grid level=0,3 num_seeds=5 test_worlds=6000:6050",
    )
    p.add_argument("--config", default=None)
    p.add_argument("--grid", action="append", default=[], metavar="key=v1,v2", help="values to sweep")
    p.add_argument("--name", default="sweep")
    p.add_argument("--out-dir", default="runs")
    p.add_argument("--no-progress", action="store_true")
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
    p.add_argument("overrides", nargs="*", metavar="key=value")
    args = p.parse_intermixed_args(argv)
    grid: list[tuple[str, list[str]]] = []
    for item in args.grid:
        key, _, values = item.partition("=")
        key, choices = key.strip(), [v for v in values.split(",") if v.strip()]
        if not key or not choices:
            raise UserError(f"--grid {item!r} must look like key=v1,v2")
        if key in dict(grid):
            raise UserError(f"--grid {key} is given twice; list all its values in one --grid {key}=v1,v2")
        grid.append((key, choices))
    combos = list(itertools.product(*[[f"{k}={v}" for v in vs] for k, vs in grid])) or [()]
    sweep_dir = Path(args.out_dir) / args.name
    configs = [load_config(args.config, [*args.overrides, *combo]) for combo in combos]
    labels = [",".join(combo) or "default" for combo in combos]
    slugs = ["".join(c if c.isalnum() or c in "=.-" else "_" for c in label) for label in labels]
    from hivex_jax.eval.aggregate import group_label

    entry_names = list(dict.fromkeys(group_label(label) for label in labels))
    if args.baseline_entry is not None and group_label(args.baseline_entry) not in entry_names:
        raise UserError(f"--baseline-entry {args.baseline_entry!r} is not one of {entry_names}")
    marl_eval_file = _marl_eval_file(args.marl_eval)
    check_writable_dir(sweep_dir, "sweep folder")
    for config, slug in zip(configs, slugs, strict=True):
        validate_env(config)
        if (sweep_dir / slug / checkpoint.CHECKPOINT_DIR).exists():
            raise UserError(f"{sweep_dir / slug} already holds a run; use another --name or --out-dir")
    _compilation_cache()
    from baselines.guards import NonFiniteError
    from baselines.runner import run_training

    rows, evals = [], []
    for label, slug, config in zip(labels, slugs, configs, strict=True):
        print(f"\n=== {label} ===")
        try:
            summary = run_training(config, sweep_dir / slug, progress=not args.no_progress)
        except NonFiniteError as exc:  # one diverged combination (e.g. too high an lr) is a result
            print(f"hivex sweep: {label}: {one_line(exc)}", file=sys.stderr)
            rows.append({"combination": label, "run_dir": str(sweep_dir / slug), "diverged": one_line(exc)})
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
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / "sweep.json").write_text(json.dumps(rows, indent=1))
    finished = [r for r in rows if "diverged" not in r]
    names = [n for n in ("greedy", "stochastic", "scripted", "random") if finished and n in finished[0]]
    columns = [f"{n} return (mean ± Student-t 95% CI over seeds)" for n in names]
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
                f"{r[n]['mean']:.1f} ± {r[n]['ci95']:.1f}"
                if r[n].get("num_seeds", 2) > 1
                else f"{r[n]['mean']:.1f}"
                for n in names
            )
            + " |"
        )
    table = "\n".join(lines)
    (sweep_dir / "sweep.md").write_text(table + "\n")
    from hivex_jax.eval.plots import sweep_summary

    if finished:  # the plot shows the combinations that finished
        sweep_summary(sweep_dir / "sweep.png", finished, f"{configs[0].algo.upper()} on {configs[0].env_id}")
    print("\n" + table)
    print(f"wrote {sweep_dir / 'sweep.json'}, sweep.md" + (" and sweep.png" if finished else ""))
    if evals:
        _sweep_aggregates(sweep_dir, evals, args.baseline_entry, marl_eval_file, configs[0])
    return 0 if finished else 3


def _sweep_aggregates(
    sweep_dir: Path, evals: list, baseline: str | None, marl_eval_file: Path | None, config: Any
) -> None:
    """aggregates.json/.png and profiles.png of the finished entries, P(improvement) printed over the
    baseline entry (the first finished one if the named one diverged); the marl-eval file if asked."""
    from hivex_jax.eval.aggregate import format_sweep_aggregates, group_label, write_sweep_aggregates

    finished = [group_label(label) for label, _ in evals]
    if baseline is not None and group_label(baseline) not in finished:
        print(f"note: --baseline-entry {baseline!r} did not finish; comparing to {finished[0]!r}")
        baseline = None
    title = f"{config.algo.upper()} on {config.env_id}"
    block = write_sweep_aggregates(sweep_dir, evals, group_label(baseline) if baseline else None, title)
    print("\n" + format_sweep_aggregates(block))
    written = ["aggregates.json"] + (["aggregates.png", "profiles.png"] if block["groups"] else [])
    if marl_eval_file is not None:
        from hivex_jax.eval.marl_eval import write_marl_eval

        write_marl_eval(marl_eval_file, evals)
        written.append(str(marl_eval_file))
    print(f"wrote {', '.join(written)}")


if __name__ == "__main__":
    commands = {"train": train_main, "evaluate": evaluate_main, "sweep": sweep_main}
    command = sys.argv[1] if len(sys.argv) > 1 else "train"
    raise SystemExit(commands[command](sys.argv[2:]))
