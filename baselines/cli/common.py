"""What the trainer's commands share (`hivex train`, `evaluate`, `sweep`, `transfer`): how jax starts,
the compilation cache, reading a run folder, joining processes and the --marl-eval file.

Importing this module sets how jax starts before it starts a backend: PJRT_NPROC (`prepare_jax`) and,
on CPU-only installs, the compile flags (`use_cpu_compile_flags`); every trainer command imports it.
"""

from __future__ import annotations

import os
from typing import Any

from hivex_jax.cli_support import prepare_jax


def use_cpu_compile_flags() -> None:
    """On CPU-only installs, compile with LLVM optimisation level 1 unless XLA_FLAGS says otherwise:
    measured on the default config, it cuts XLA's compile time by ~40% at the same training speed
    (level 0 would triple the run time). Must run before jax starts a backend."""
    import importlib.util

    if any(importlib.util.find_spec(p) for p in ("jax_cuda12_plugin", "jax_cuda13_plugin", "libtpu")):
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_backend_optimization_level=1").strip()


prepare_jax()
use_cpu_compile_flags()

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from baselines.config import ConfigError, PPOConfig, fit_saved_config, load_config  # noqa: E402
from baselines.run import checkpoint  # noqa: E402
from baselines.run import distributed as dist  # noqa: E402
from hivex_jax.cli_support import check_writable_dir  # noqa: E402
from hivex_jax.core.errors import UserError, one_line  # noqa: E402


def enable_compilation_cache() -> None:
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


def run_folder_config(run_dir: Path, overrides: list[str]) -> PPOConfig:
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


def add_trust_unverified_option(p: argparse.ArgumentParser) -> None:
    """`--trust-unverified`, of the commands that restore checkpoints (`checkpoint.trusting_unverified`)."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.checkpoint_checksums import CHECKSUMS_FILE, TRUST_OPTION

    p.add_argument(
        TRUST_OPTION,
        action="store_true",
        help=f"restore a checkpoint whose {CHECKSUMS_FILE} is missing or unreadable (e.g. one "
        "written before hivex_jax recorded checksums) with orbax's checks only, instead of treating it "
        "as damaged",
    )


def check_episode_steps(steps: int | None, configs: list[PPOConfig]) -> None:
    """`--steps` (each evaluation episode cut at that many steps) within [1, the longest max_steps of the
    envs of `configs`], or a one-line `UserError`: a longer cut plays nothing more, and an absurd one
    would reach the compiled program."""
    if steps is None:
        return
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    import numpy as np

    from baselines.config import make_env

    longest = max(int(np.max(np.asarray(make_env(config)[1].max_steps))) for config in configs)
    if not 1 <= steps <= longest:
        shown = f"{steps:,}" if abs(steps) < 10**30 else f"an integer of {len(str(abs(steps)))} digits"
        raise UserError(
            f"--steps must be in [1, {longest:,}] (an episode is cut at --steps; the env's max_steps is "
            f"{longest:,}); got {shown}"
        )


def join_processes(args: argparse.Namespace, prog: str) -> None:
    """`jax.distributed.initialize` from the multi-process options (nothing without them): first, before
    any JAX computation, so every later check runs identically in every process."""
    dist.initialize(dist.spec_from_args(args), prog)


def check_devices(config: PPOConfig) -> None:
    """With several processes, a population that does not split over every device is a one-line error."""
    import jax

    dist.check_population_divides(config.num_seeds, config.num_envs, jax.device_count(), jax.process_count())


def checked_marl_eval_file(value: str | None) -> Path | None:
    """The --marl-eval output file, after checking it is not a folder and its folder is writable."""
    if value is None:
        return None
    path = Path(value)
    if path.is_dir():
        raise UserError(f"--marl-eval {path} is a folder; give a file name like {path / 'marl_eval.json'}")
    check_writable_dir(path.parent, "--marl-eval folder")
    return path


def sweep_title(configs: list[Any]) -> str:
    """What every combination shares, `"IPPO on WindFarmControl-v0 task 0"`; a part the grid varies is
    named per row instead: `"WindFarmControl-v0 task 0: algo per row"` for `--grid algo=ippo,mappo`."""
    algos, envs, tasks = ({getattr(c, k) for c in configs} for k in ("algo", "env_id", "task"))
    subject = " ".join(
        [
            *([next(iter(envs))] if len(envs) == 1 else []),
            *([f"task {next(iter(tasks))}"] if len(tasks) == 1 else []),
        ]
    )
    algo = next(iter(algos)).upper() if len(algos) == 1 else ""
    title = " on ".join(part for part in (algo, subject) if part)
    varied = [
        name for name, values in (("algo", algos), ("env_id", envs), ("task", tasks)) if len(values) > 1
    ]
    return f"{title}: {' and '.join(varied)} per row" if varied else title


def split_grid_values(values: str) -> list[str]:
    """`"3e-4,1e-3"` -> two values; commas inside brackets stay (`"[64,64],[128]"` -> two lists)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(values):
        depth += (char in "[({") - (char in "])}")
        if char == "," and depth == 0:
            parts.append(values[start:i])
            start = i + 1
    return [*parts, values[start:]]
