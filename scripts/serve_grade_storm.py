"""Step latency of many stepping clients with and without a storm of grades (docs/serve.md).

Starts `hivex serve` on a free port, opens `--clients` WindFarmControl sessions that step random actions
from threads of this process, and measures every /step's latency for `--seconds`, first alone, then
while `--graders` other clients (each from its own address 127.0.0.N, so the one-grade-per-client
limit lets each have one in flight) grade sessions of `--grade-env` on a new world seed every time
(the grade cache never helps): by default full 3000-step AerialWildfireSuppression episodes; with
`--grade-env WindFarmControl-v0 --grade-max-steps 1000000` the steppers' own pool and the longest
episode an option allows (the server plays at most --max-grade-steps of it).

    python scripts/serve_grade_storm.py --clients 48 --graders 4 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import numpy as np

WFC, AWS = "WindFarmControl-v0", "AerialWildfireSuppression-v0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hivex_jax", "serve", "--port", str(port), "--env", WFC, "--env", AWS]
    cmd += ["--max-sessions", "128", "--initial-slots", "64"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}  # `hivex` sets PJRT_NPROC itself
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1500):
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit("server did not start")


def client(url: str, address: int = 1) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=f"127.0.0.{address}")
    return httpx.Client(base_url=url, timeout=600, transport=transport)


def stepper(url: str, seed: int, stop: threading.Event, latencies: list[float]) -> None:
    """Step one WindFarmControl session with random actions until `stop`, recording each latency."""
    rng = np.random.default_rng(seed)
    with client(url) as c:
        session = c.post("/reset", json={"env_id": WFC, "world_seed": seed}).json()["session_id"]
        while not stop.is_set():
            action = [{"discrete": [int(x)]} for x in rng.integers(0, 3, 8)]
            began = time.perf_counter()
            r = c.post("/step", json={"session_id": session, "action": action})
            latencies.append(time.perf_counter() - began)
            if r.json().get("done"):
                session = c.post("/reset", json={"env_id": WFC, "world_seed": seed}).json()["session_id"]
        c.delete(f"/session/{session}")


def grader(
    url: str, address: int, stop: threading.Event, counts: dict[str, int], env_id: str, options
) -> None:
    """Grade sessions on fresh worlds back to back until `stop` (each grade a new scripted episode)."""
    world = 10_000 * address
    with client(url, address) as c:
        while not stop.is_set():
            world += 1
            body = {"env_id": env_id, "world_seed": world, "options": options}
            session = c.post("/reset", json=body).json()["session_id"]
            r = c.post(f"/grade/{session}")
            counts[str(r.status_code)] = counts.get(str(r.status_code), 0) + 1
            c.delete(f"/session/{session}")


def phase(url: str, clients: int, graders: int, seconds: float, env_id: str, options: dict) -> dict:
    """Step latencies of `clients` steppers over `seconds` (after a warm-up: every stepper's first steps
    and 5 s) with `graders` grading."""
    stop, latencies, counts = threading.Event(), [[] for _ in range(clients)], {}
    threads = [
        threading.Thread(target=stepper, args=(url, 100 + i, stop, latencies[i])) for i in range(clients)
    ]
    threads += [
        threading.Thread(target=grader, args=(url, 2 + g, stop, counts, env_id, options))
        for g in range(graders)
    ]
    for t in threads:
        t.start()
    # warm-up: every stepper past its first steps (the pool's first batches compile), then 5 s more
    while min(len(x) for x in latencies) < 3:
        time.sleep(0.1)
    time.sleep(5)
    marks = [len(x) for x in latencies]
    counts.clear()
    time.sleep(seconds)
    measured = np.concatenate([x[m:] for x, m in zip(latencies, marks, strict=True)])
    grades = dict(counts)
    stop.set()
    for t in threads:
        t.join()
    return {
        "steps_per_s": len(measured) / seconds,
        "p50_ms": 1000 * float(np.percentile(measured, 50)),
        "p99_ms": 1000 * float(np.percentile(measured, 99)),
        "max_ms": 1000 * float(measured.max()),
        "grades_answered": grades,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=48)
    p.add_argument("--graders", type=int, default=4)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--grade-env", default=AWS)
    p.add_argument("--grade-max-steps", type=int, default=None, help="max_steps option of graded sessions")
    args = p.parse_args()
    options = {} if args.grade_max_steps is None else {"max_steps": args.grade_max_steps}
    port = free_port()
    proc = start_server(port)
    url = f"http://127.0.0.1:{port}"
    try:
        with client(url) as c:  # compile the graded env's pool and its grader before measuring
            session = c.post("/reset", json={"env_id": args.grade_env, "world_seed": 1}).json()["session_id"]
            began = time.perf_counter()
            c.post(f"/grade/{session}")
            print(f"first grade (compiles): {time.perf_counter() - began:.1f} s", flush=True)
            c.delete(f"/session/{session}")
        for name, graders in (("no grades", 0), (f"{args.graders} graders", args.graders)):
            result = phase(url, args.clients, graders, args.seconds, args.grade_env, options)
            print(f"{args.clients} steppers, {name}: {result}", flush=True)
        print("load average:", os.getloadavg())
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
