"""Play one episode with the environment's scripted controller over HTTP against `hivex serve`, then grade it.

    hivex serve &                                   # 127.0.0.1:8000
    python scripts/serve_client_example.py --env WindFarmControl-v0 --world 6000 --max-steps 200

The client speaks only JSON: it rebuilds the observation arrays from the named observation (`vector`,
and `visual` where the env has a camera), asks the scripted controller (run in-process here, as any
agent would decide) for an action, and sends it in the server's named form. `--bench N` instead plays
N concurrent clients of random actions for `--seconds` and prints the session steps per second served.
A server started with a token (`--token` / `HIVEX_SERVE_TOKEN`) is sent `HIVEX_SERVE_TOKEN` (its first
token, where it holds several) as a bearer token.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

import _jax_setup  # noqa: F401  (first: PJRT_NPROC before jax starts)
import httpx
import numpy as np

# `Authorization: Bearer ...` for a server started with a token (docs/serve.md, "Limits and exposure")
AUTH = (
    {"authorization": f"Bearer {os.environ['HIVEX_SERVE_TOKEN'].split(',')[0]}"}
    if os.environ.get("HIVEX_SERVE_TOKEN")
    else {}
)


def observation_arrays(observation: dict) -> dict[str, np.ndarray]:
    """The server's named observation as the env's arrays `{vector f32[A, D], visual? u8[A, H, W, C]}`."""
    agents = observation["agents"]
    obs = {"vector": np.asarray([a["vector"] for a in agents], np.float32)}
    if "visual" in agents[0]:
        obs["visual"] = np.asarray([a["visual"] for a in agents], np.uint8)
    return obs


def play_scripted(
    url: str, env_id: str, world: int, task: int | None, level: int | None, max_steps: int | None
):
    """One scripted episode over HTTP: prints the return and the grade."""
    import hivex_jax
    from hivex_jax.eval.rollout import find_scripted_policy
    from hivex_jax.serve.codec import encode_action

    env, params = hivex_jax.make(env_id, **({} if max_steps is None else {"max_steps": max_steps}))
    params = env.variant_params(params, task=task, level=level)
    controller = find_scripted_policy(env)
    if controller is None:
        raise SystemExit(f"{env_id} has no scripted controller")
    body = {"env_id": env_id, "world_seed": world, "task": int(params.task)}
    if env.level_field is not None:
        body["level"] = int(getattr(params, env.level_field))
    if max_steps is not None:
        body["options"] = {"max_steps": max_steps}
    with httpx.Client(base_url=url, timeout=600, headers=AUTH) as client:
        first = client.post("/reset", json=body)
        first.raise_for_status()
        session = first.json()["session_id"]
        obs, done, total = observation_arrays(first.json()["observation"]), False, 0.0
        while not done:
            action = encode_action(env, controller(obs, params))
            reply = client.post("/step", json={"session_id": session, "action": action})
            reply.raise_for_status()
            step = reply.json()
            obs, done = observation_arrays(step["observation"]), step["done"]
            total += float(np.mean(step["reward"]))
        grade = client.post(f"/grade/{session}").json()
        client.delete(f"/session/{session}")
    print(
        f"{env_id} world {world}: {grade['episode']['length']} steps, return {total:.4f} (mean over agents)"
    )
    shown = ("episode", "normalised_score", "fraction_of_scripted", "notes")
    print(json.dumps({k: grade[k] for k in shown}, indent=1))
    print(f"scripted return {grade['scripted']['return']:.4f}, random {grade['random']['return']:.4f}")


def bench(url: str, env_id: str, clients: int, seconds: float, max_steps: int | None) -> None:
    """`clients` threads, each with its own connection and session, stepping random actions for `seconds`."""
    import hivex_jax

    env, _ = hivex_jax.make(env_id)
    branches = env.discrete_branches
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def client_loop(i: int) -> None:
        rng = np.random.default_rng(i)
        body = {"env_id": env_id, "world_seed": 1000 + i}
        if max_steps is not None:
            body["options"] = {"max_steps": max_steps}
        with httpx.Client(base_url=url, timeout=600, headers=AUTH) as client:
            session = client.post("/reset", json=body).json()["session_id"]
            start.wait()
            while not stop.is_set():
                action = [
                    {
                        "continuous": rng.uniform(-1, 1, env.continuous_dims).tolist(),
                        "discrete": [int(rng.integers(0, n)) for n in branches],
                    }
                    for _ in range(env.num_agents)
                ]
                reply = client.post("/step", json={"session_id": session, "action": action}).json()
                counts[i] += 1
                if reply["done"]:
                    client.delete(f"/session/{session}")
                    session = client.post("/reset", json=body).json()["session_id"]
            client.delete(f"/session/{session}")

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    # warm-up: the first batches compile; count from a second in
    time.sleep(min(5.0, seconds / 4))
    before, began = sum(counts), time.perf_counter()
    time.sleep(seconds)
    steps, elapsed = sum(counts) - before, time.perf_counter() - began
    stop.set()
    for t in threads:
        t.join()
    print(
        f"{env_id}: {clients} concurrent clients, {steps} session steps in {elapsed:.1f} s = "
        f"{steps / elapsed:.1f} session steps/s ({steps * env.num_agents / elapsed:.0f} agent steps/s)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--env", default="WindFarmControl-v0")
    p.add_argument("--world", type=int, default=6000)
    p.add_argument("--task", type=int, default=None)
    p.add_argument("--level", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None, help="shorter episodes (an EnvParams option)")
    p.add_argument("--bench", type=int, default=0, metavar="N", help="measure N concurrent random clients")
    p.add_argument("--seconds", type=float, default=20.0, help="--bench measuring time")
    args = p.parse_args()
    if args.bench:
        bench(args.url, args.env, args.bench, args.seconds, args.max_steps)
    else:
        play_scripted(args.url, args.env, args.world, args.task, args.level, args.max_steps)


if __name__ == "__main__":
    main()
