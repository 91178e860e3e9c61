"""`hivex train` (`hivex evaluate` is in `cli_evaluate`, `hivex sweep` in `cli_sweep`, `hivex transfer`
in `cli_transfer`, what they share in `cli_common`; `hivex_jax.cli` finds them through the
`hivex_jax.commands` entry points).

Every check of the user's input (options, config, env options, run folder, output folder) runs before
the trainer is built, and fails as one line on stderr with exit status 2 (`UserError`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from baselines.cli.common import (
    add_trust_unverified_option,
    check_devices,
    enable_compilation_cache,
    join_processes,
    run_folder_config,
)
from baselines.config import (
    fit_saved_config,
    load_config,
    parse_overrides,
    validate_env,
)
from baselines.run import checkpoint
from baselines.run import distributed as dist
from hivex_jax.cli_support import (
    ArgumentParser,
    check_positive,
    check_writable_dir,
    reports_user_errors,
)
from hivex_jax.core.errors import UserError, one_line

#: keys that may change on --resume without breaking the run's continuity
RESUME_SAFE_KEYS = {
    "total_env_steps",
    "eval_every",
    "checkpoint_every",
    "gif_stride",
    "gif_frames",
    "logger",
    "logger_project",
}


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
    add_trust_unverified_option(p)
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. lr=1e-3")
    dist.add_distributed_args(p)
    return p


@reports_user_errors("hivex train")
def train_main(argv: list[str]) -> int:
    """`hivex train [--config FILE | --resume RUN_DIR] [key=value ...]`."""
    args = _train_parser().parse_intermixed_args(argv)  # key=value before or after options
    with checkpoint.trusting_unverified(args.trust_unverified):
        return _train(args)


def _train(args: argparse.Namespace) -> int:
    """`hivex train` once its options are parsed."""
    check_positive(max_chunks=args.max_chunks)
    join_processes(args, "hivex train")
    if args.resume:
        given = {"--config": args.config, "--name": args.name, "--out-dir": args.out_dir}
        ignored = [option for option, value in given.items() if value]
        if ignored:
            raise UserError(f"--resume continues RUN_DIR with its own config.yaml; drop {', '.join(ignored)}")
        run_dir = Path(args.resume)
        config = run_folder_config(run_dir, args.overrides)
        check_writable_dir(run_dir, "run folder")
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.run.guards import check_resume_config

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
    check_devices(config)
    enable_compilation_cache()
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.guards import NonFiniteError
    from baselines.run.runner import run_training

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


if __name__ == "__main__":
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.cli.evaluate import evaluate_main
    from baselines.cli.sweep import sweep_main

    commands = {"train": train_main, "evaluate": evaluate_main, "sweep": sweep_main}
    command = sys.argv[1] if len(sys.argv) > 1 else "train"
    raise SystemExit(commands[command](sys.argv[2:]))
