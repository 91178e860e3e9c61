"""`hivex train` and what the three trainer commands share (`hivex evaluate` is in `cli_evaluate`,
`hivex sweep` in `cli_sweep`; `hivex_jax.cli` finds them through the `hivex_jax.commands` entry points).

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
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from baselines import checkpoint  # noqa: E402
from baselines import distributed as dist  # noqa: E402
from baselines.config import (  # noqa: E402
    ConfigError,
    PPOConfig,
    fit_saved_config,
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
        inside = sorted(p.parent.name for p in run_dir.glob("*/config.yaml")) if run_dir.is_dir() else []
        if inside:  # a sweep folder: name its runs and the command that takes them all
            why = (
                f"; it holds {len(inside)} run folder(s), e.g. {run_dir / inside[0]}; "
                f"`hivex transfer {run_dir} --eval-grid ...` evaluates them all"
            )
        raise UserError(f"{run_dir} is not a run folder (no config.yaml{why})")
    try:
        config = fit_saved_config(load_config(run_dir / "config.yaml", overrides))
    except ConfigError as exc:
        message = one_line(exc)
        raise ConfigError(message if str(run_dir) in message else f"run folder {run_dir}: {message}") from exc
    if checkpoint.latest_step(run_dir) is None:
        raise UserError(
            f"run folder {run_dir} has no checkpoint under {run_dir / checkpoint.CHECKPOINT_DIR} "
            "(training stopped before the first one?)"
        )
    try:
        checkpoint.read_meta(run_dir)  # the newest intact checkpoint's
    except checkpoint.DamagedCheckpointError:  # none intact: its one line names every step
        raise
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
    dist.add_distributed_args(p)
    return p


def _join_processes(args: argparse.Namespace, prog: str) -> None:
    """`jax.distributed.initialize` from the multi-process options (nothing without them): first, before
    any JAX computation, so every later check runs identically in every process."""
    dist.initialize(dist.spec_from_args(args), prog)


def _check_devices(config: PPOConfig) -> None:
    """With several processes, a population that does not split over every device is a one-line error."""
    import jax

    dist.check_population_divides(config.num_seeds, config.num_envs, jax.device_count(), jax.process_count())


@reports_user_errors("hivex train")
def train_main(argv: list[str]) -> int:
    """`hivex train [--config FILE | --resume RUN_DIR] [key=value ...]`."""
    args = _train_parser().parse_intermixed_args(argv)  # key=value before or after options
    check_positive(max_chunks=args.max_chunks)
    _join_processes(args, "hivex train")
    if args.resume:
        given = {"--config": args.config, "--name": args.name, "--out-dir": args.out_dir}
        ignored = [option for option, value in given.items() if value]
        if ignored:
            raise UserError(f"--resume continues RUN_DIR with its own config.yaml; drop {', '.join(ignored)}")
        run_dir = Path(args.resume)
        config = _run_folder_config(run_dir, args.overrides)
        check_writable_dir(run_dir, "run folder")
        from baselines.guards import check_resume_config

        # a change the checkpoint cannot take is refused here, before the warning below and compiling
        check_resume_config(fit_saved_config(load_config(run_dir / "config.yaml")).to_dict(), config)
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
    _check_devices(config)
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
    if not dist.is_main():  # process 0 reports
        return 0
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


def _marl_eval_file(value: str | None) -> Path | None:
    """The --marl-eval output file, after checking it is not a folder and its folder is writable."""
    if value is None:
        return None
    path = Path(value)
    if path.is_dir():
        raise UserError(f"--marl-eval {path} is a folder; give a file name like {path / 'marl_eval.json'}")
    check_writable_dir(path.parent, "--marl-eval folder")
    return path


if __name__ == "__main__":
    from baselines.cli_evaluate import evaluate_main
    from baselines.cli_sweep import sweep_main

    commands = {"train": train_main, "evaluate": evaluate_main, "sweep": sweep_main}
    command = sys.argv[1] if len(sys.argv) > 1 else "train"
    raise SystemExit(commands[command](sys.argv[2:]))
