"""The trainer's parts of the `hivex` command, which finds them through the `hivex_jax.commands` entry-point
group (pyproject.toml): `train`, `evaluate`, `sweep` (in `baselines.cli`) and `bench-train` (here), so
the `hivex_jax` library imports nothing from `baselines`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def bench_train(config_path: str, num_updates: int) -> Callable[[], dict[str, Any]]:
    """`hivex bench --train CONFIG`: check the config now (a `UserError` before anything compiles) and
    return the measurement to run later, `() -> baselines.bench.train_throughput(...)`'s dict."""
    from baselines.config import load_config, validate_env

    validate_env(load_config(config_path, [f"chunk_updates={int(num_updates)}"]))

    def measure() -> dict[str, Any]:
        from baselines.bench import train_throughput

        return train_throughput(config_path, [], num_updates)

    return measure
