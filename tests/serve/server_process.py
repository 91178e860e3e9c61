"""A real `hivex serve` subprocess for the serve tests: on a free 127.0.0.1 port, returned once its
/health answers (compiling nothing: pools compile on their first reset)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

httpx = pytest.importorskip("httpx")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*flags: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int, str]:
    """`python -m hivex_jax serve --port P *flags` (with `env` added to this process's environment):
    (process, port, base url) once /health answers; the test fails if it exits or is not ready in 300 s."""
    port = free_port()
    cmd = [sys.executable, "-m", "hivex_jax", "serve", "--port", str(port), *flags]
    environment = {**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})}
    proc = subprocess.Popen(cmd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            pytest.fail(f"server exited with {proc.returncode}: {proc.stdout.read()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, port, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop(proc)
            pytest.fail("server not ready within 300 s")
        time.sleep(0.2)


def rss_mib(pid: int) -> float:
    """The resident memory (VmRSS) of process `pid` in MiB (Linux), NaN where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(x for x in status if x.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return float("nan")
    return int(line.split()[1]) / 1024


@contextlib.contextmanager
def rss_reported(label: str, pid: int) -> Iterator[None]:
    """Print the server's resident memory before and after the block (`pytest -s` shows it): the figure
    docs/serve.md gives for the hostile suite."""
    before = rss_mib(pid)
    yield
    print(f"\nserver RSS, {label}: {before:.1f} MiB before, {rss_mib(pid):.1f} MiB after", flush=True)


def stop(proc: subprocess.Popen) -> None:
    """Kill the server and wait for it."""
    proc.kill()
    proc.wait(timeout=30)


@contextlib.contextmanager
def running_server(
    *flags: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen, int, str]]:
    """`start_server` for the block's duration."""
    proc, port, url = start_server(*flags, env=env)
    try:
        yield proc, port, url
    finally:
        stop(proc)
