"""Several processes (hosts) on JAX's own multi-controller runtime: the `--coordinator HOST:PORT
--num-processes N --process-id I` / `--distributed auto` options of `hivex train` and `hivex sweep`,
`jax.distributed.initialize` before anything else touches a device, and the few collectives the host
loop needs (gather metrics and parameters, broadcast a decision or a name, a barrier).

Every process runs the same program; the population's mesh spans `jax.devices()` (all processes) and
each process feeds and fetches only its addressable shards. With one process every helper here is
the plain single-process operation, so a run without these options is unchanged.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hivex_jax.core.errors import UserError, one_line

#: seconds a process waits for the coordinator / for the other processes before failing
DEFAULT_INIT_TIMEOUT_S = 300


@dataclass(frozen=True)
class DistributedSpec:
    """How this process joins the job: explicit address/count/id, or JAX's cluster detection."""

    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    auto: bool = False
    init_timeout_s: int = DEFAULT_INIT_TIMEOUT_S
    local_devices: int | None = None

    @property
    def enabled(self) -> bool:
        """Whether `jax.distributed.initialize` is called at all."""
        return self.auto or self.coordinator is not None


def add_distributed_args(parser: argparse.ArgumentParser) -> None:
    """The multi-process options of `hivex train` / `hivex sweep` (see docs/distributed.md)."""
    group = parser.add_argument_group(
        "several processes (docs/distributed.md)",
        "start one process per host (or per accelerator) with the same command and its own --process-id",
    )
    group.add_argument(
        "--coordinator", default=None, metavar="HOST:PORT", help="address of process 0 (every process)"
    )
    group.add_argument("--num-processes", type=int, default=None, metavar="N", help="processes in the job")
    group.add_argument("--process-id", type=int, default=None, metavar="I", help="this process, 0..N-1")
    group.add_argument(
        "--distributed",
        choices=("auto",),
        default=None,
        help="auto: JAX reads the cluster's variables (Slurm, Open MPI, Kubernetes, Cloud TPU VMs)",
    )
    group.add_argument(
        "--init-timeout",
        type=int,
        default=DEFAULT_INIT_TIMEOUT_S,
        metavar="S",
        help=f"seconds to wait for the coordinator and the others (default {DEFAULT_INIT_TIMEOUT_S})",
    )
    group.add_argument(
        "--local-devices",
        type=int,
        default=None,
        metavar="K",
        help="CPU only: split this process's CPU into K devices (testing a mesh without accelerators)",
    )


#: the most CPU devices `--local-devices` may split one process into (XLA fails past int32 with a traceback)
MAX_LOCAL_DEVICES = 1024


def spec_from_args(args: argparse.Namespace) -> DistributedSpec:
    """Check the multi-process options (one-line `UserError`s) and bundle them."""
    explicit = {
        "--coordinator": args.coordinator,
        "--num-processes": args.num_processes,
        "--process-id": args.process_id,
    }
    given = [k for k, v in explicit.items() if v is not None]
    if args.distributed == "auto" and given:
        raise UserError(f"--distributed auto reads the cluster's variables; drop {', '.join(given)}")
    if given and len(given) < 3:
        missing = [k for k in explicit if k not in given]
        raise UserError(f"{', '.join(given)} also needs {', '.join(missing)} (every process gets all three)")
    if args.init_timeout < 1:
        raise UserError(f"--init-timeout must be >= 1 second; got {args.init_timeout}")
    if args.init_timeout > 86_400:  # a day: longer is a typo, not a slow cluster start
        raise UserError(f"--init-timeout must be <= 86400 seconds (a day); got {args.init_timeout}")
    if args.local_devices is not None and not 1 <= args.local_devices <= MAX_LOCAL_DEVICES:
        raise UserError(f"--local-devices must be in [1, {MAX_LOCAL_DEVICES}]; got {args.local_devices}")
    if given:
        host, _, port = str(args.coordinator).rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(
                f"--coordinator {args.coordinator!r} must look like HOST:PORT, e.g. 10.0.0.1:1234"
            )
        if not 1 <= args.num_processes <= 1 << 16:
            raise UserError(f"--num-processes must be in [1, 65536]; got {args.num_processes}")
        if not 0 <= args.process_id < args.num_processes:
            raise UserError(
                f"--process-id {args.process_id} is outside 0..{args.num_processes - 1} "
                f"(--num-processes {args.num_processes})"
            )
    return DistributedSpec(
        coordinator=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
        auto=args.distributed == "auto",
        init_timeout_s=args.init_timeout,
        local_devices=args.local_devices,
    )


def _wait_for_coordinator(address: str, timeout_s: float) -> None:
    """Poll until a TCP connection to `address` succeeds, else a one-line `UserError`: a process other
    than 0 that cannot reach the coordinator would otherwise be aborted by XLA with a stack dump."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    deadline = time.monotonic() + timeout_s
    last: OSError | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=2.0):
                return
        except OSError as exc:  # refused (not up yet), unreachable, unknown host
            last = exc
            time.sleep(0.5)
    raise UserError(
        f"coordinator {address} did not come up within {timeout_s:g} s ({last}); start process 0 "
        "(--process-id 0) on that host, check HOST:PORT and the firewall, or raise --init-timeout"
    )


def _watchdog(seconds: float, message: str) -> threading.Timer:
    """A timer that prints `message` as one line and exits with status 2: `jax.distributed.initialize`
    cannot be interrupted from Python, and on a timeout XLA aborts the process with a stack dump."""

    def fire() -> None:
        print(message, file=sys.stderr, flush=True)
        os._exit(2)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def initialize(spec: DistributedSpec, prog: str = "hivex") -> None:
    """Join the job described by `spec` (nothing when it is not `enabled`). Must run before any JAX
    computation: the CPU collectives (gloo) and the device count are fixed when the backend starts."""
    import jax

    if spec.local_devices is not None:
        jax.config.update("jax_num_cpu_devices", spec.local_devices)
    if not spec.enabled:
        return
    if jax.distributed.is_initialized():
        return
    # CPU processes exchange gradients and gathers over gloo (the default, "none", has no collectives)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    timeout = spec.init_timeout_s
    if spec.auto:
        timer = _watchdog(
            timeout + 5,
            f"{prog}: the job's processes did not all connect within {timeout} s (--distributed auto)",
        )
        try:
            jax.distributed.initialize(initialization_timeout=timeout + 30)
        except (ValueError, RuntimeError) as exc:  # no cluster found in the environment
            raise UserError(
                f"--distributed auto found no cluster JAX knows in the environment ({one_line(exc)}); "
                "pass --coordinator HOST:PORT --num-processes N --process-id I instead"
            ) from exc
        finally:
            timer.cancel()
        return
    assert spec.coordinator is not None and spec.process_id is not None
    started = time.monotonic()
    if spec.process_id != 0:
        _wait_for_coordinator(spec.coordinator, timeout)
    left = max(timeout - (time.monotonic() - started), 1.0)
    timer = _watchdog(
        left,
        f"{prog}: process {spec.process_id}: not all {spec.num_processes} processes connected to "
        f"{spec.coordinator} within {timeout} s; start every --process-id 0..{spec.num_processes - 1} "
        "with the same --coordinator and --num-processes, or raise --init-timeout",
    )
    try:  # JAX's own timeout a little later than the watchdog's, so the watchdog's line is what shows
        jax.distributed.initialize(
            spec.coordinator,
            num_processes=spec.num_processes,
            process_id=spec.process_id,
            initialization_timeout=int(left) + 30,
        )
    finally:
        timer.cancel()
    if jax.process_count() != spec.num_processes:  # the job is what process 0 declared
        raise UserError(
            f"--num-processes {spec.num_processes} given to process {spec.process_id}, but the job at "
            f"{spec.coordinator} has {jax.process_count()} processes; give every process the same count"
        )


# ------------------------------------------------------------------------------------ collectives
def process_count() -> int:
    """Processes in the job (1 without `jax.distributed`)."""
    import jax

    return jax.process_count()


def is_main() -> bool:
    """Whether this is process 0, the one that writes the run folder and prints."""
    import jax

    return jax.process_index() == 0


def fetch(tree: Any) -> Any:
    """A pytree of (possibly globally sharded) arrays as numpy on every process; with several processes
    a collective (every process must call it)."""
    import jax

    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, jax.device_get(tree))
    from jax.experimental import multihost_utils

    return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))


def broadcast_value(value: float) -> float:
    """Process 0's `value` on every process (so every process takes the same branch)."""
    import jax

    if jax.process_count() == 1:
        return value
    from jax.experimental import multihost_utils

    return float(multihost_utils.broadcast_one_to_all(np.asarray(value, np.float64)))


def broadcast_text(text: str, max_bytes: int = 512) -> str:
    """Process 0's `text` on every process (e.g. a run name built from process 0's clock)."""
    import jax

    if jax.process_count() == 1:
        return text
    from jax.experimental import multihost_utils

    data = np.zeros(max_bytes, np.uint8)
    raw = text.encode()[:max_bytes]
    data[: len(raw)] = np.frombuffer(raw, np.uint8)
    out = np.asarray(multihost_utils.broadcast_one_to_all(data), np.uint8)
    return bytes(out).rstrip(b"\0").decode()


def barrier(name: str) -> None:
    """Wait until every process reaches `name` (nothing with one process)."""
    import jax

    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def check_population_divides(num_seeds: int, num_envs: int, num_devices: int, num_processes: int) -> None:
    """With several processes the population must split over every device: seeds (no communication)
    or else envs (gradients all-reduced); raise a one-line `UserError` before anything compiles."""
    if num_processes == 1 or num_seeds % num_devices == 0 or num_envs % num_devices == 0:
        return
    raise UserError(
        f"num_seeds={num_seeds} and num_envs={num_envs} do not divide over the {num_devices} devices of "
        f"the {num_processes} processes; make num_seeds (or num_envs) a multiple of {num_devices}"
    )
