"""Will the run fit? The device memory of a training run from XLA's memory analysis of its compiled chunk,
and the refusal of a run that needs more than the device has (one line, before anything is allocated).

The chunk is compiled from abstract shapes (`Population.abstract_state`: nothing of the population's size
is allocated) and that compiled program is the one training then runs, so the estimate costs no second
compile. A closed-form estimate from shapes would skip the compile but not the XLA temporaries (rollout
buffers, minibatch gathers, fusion scratch), which are most of a large run's memory; the compile is needed
for training anyway. The figure is XLA's buffer assignment on the backend it runs on: state (arguments),
outputs and temporaries of one chunk, less what the outputs reuse of donated arguments.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import jax

from baselines.config import ConfigError, PPOConfig

GIB = 2**30


@dataclass(frozen=True)
class MemoryEstimate:
    """XLA's memory analysis of one compiled chunk (bytes, per device), and the compile time (s)."""

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    compile_s: float

    @property
    def peak_bytes(self) -> int:
        """Arguments + outputs + temporaries, less outputs that alias (donated) arguments."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "peak_bytes": self.peak_bytes, "peak_gib": self.peak_bytes / GIB}


def compile_with_estimate(population: Any) -> MemoryEstimate | None:
    """Compile `population`'s chunk from abstract shapes (kept as `population.compiled`, the program
    training runs) and read XLA's memory analysis; None where the backend gives none."""
    start = time.perf_counter()
    population.compile(population.abstract_state())
    compile_s = time.perf_counter() - start
    try:
        stats = population.compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):  # a backend without the analysis
        return None
    if stats is None:
        return None
    return MemoryEstimate(
        argument_bytes=int(stats.argument_size_in_bytes),
        output_bytes=int(stats.output_size_in_bytes),
        temp_bytes=int(stats.temp_size_in_bytes),
        alias_bytes=int(getattr(stats, "alias_size_in_bytes", 0)),
        compile_s=compile_s,
    )


def host_memory_bytes() -> int | None:
    """Memory available to this process on the host: /proc/meminfo's MemAvailable, else physical RAM."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None


def device_memory_bytes(device: Any) -> int | None:
    """What `device` can hold: an accelerator's `bytes_limit`, the host's available memory for a CPU."""
    if device.platform == "cpu":
        return host_memory_bytes()
    try:
        stats = device.memory_stats() or {}
    except (NotImplementedError, RuntimeError, AttributeError):
        return None
    limit = stats.get("bytes_limit")
    return int(limit) if limit else None


def check_fits(config: PPOConfig, estimate: MemoryEstimate, devices: list[Any], processes: int = 1) -> None:
    """Raise a one-line `ConfigError` if the estimate exceeds the memory of this process's devices (CPU
    devices share the host's memory, so their needs add up, and so do those of the `processes` that run
    the program on this host: this one and its `cpu_helpers`)."""
    local = [d for d in devices if d.process_index == jax.process_index()] or list(devices)
    device = local[0]
    if device.platform == "cpu":
        need, have = estimate.peak_bytes * len(local) * processes, device_memory_bytes(device)
    else:
        limits = [device_memory_bytes(d) for d in local]
        need, have = estimate.peak_bytes, min((x for x in limits if x), default=None)
    if have is None or need <= have:
        return
    where = "the host has" if device.platform == "cpu" else f"the device ({device.device_kind}) has"
    each = f", in each of {processes} processes" if device.platform == "cpu" and processes > 1 else ""
    raise ConfigError(
        f"the run needs ~{need / GIB:.1f} GiB (XLA estimate of one chunk: state "
        f"{estimate.argument_bytes / GIB:.1f} GiB, temporaries {estimate.temp_bytes / GIB:.1f} GiB{each}), "
        f"{where} {have / GIB:.1f} GiB: lower num_envs or num_seeds (now {config.num_envs} x "
        f"{config.num_seeds}), num_steps or chunk_updates"
    )


def compile_checked(config: PPOConfig, population: Any) -> float:
    """Compile the population's chunk (from abstract shapes), refuse the run if XLA's estimate of its
    memory exceeds the device's (`ConfigError`); returns the compile time (s). A `SplitTraining` runs
    its program in `processes` processes (with its helpers), each holding its own."""
    estimate = compile_with_estimate(population)
    if estimate is None:
        return population.compile_s
    try:
        check_fits(config, estimate, population.devices, getattr(population, "processes", 1))
    except ConfigError:
        population.compiled = None  # a cached population is checked again next time
        raise
    return estimate.compile_s
