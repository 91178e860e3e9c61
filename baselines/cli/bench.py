"""End-to-end training throughput for `hivex bench --train`: env steps per second including learning."""

from __future__ import annotations

import time
from typing import Any

import jax

from hivex_jax.cli_support import prepare_jax

prepare_jax()  # PJRT_NPROC before jax starts a backend (`python -m baselines.cli.bench`)


def train_throughput(
    config_path: str | None, overrides: list[str], num_updates: int, seeds: str = "auto"
) -> dict[str, Any]:
    """Compile one chunk of `num_updates` updates for the config's population (seeds x envs), run it
    once to warm up and once timed. Returns env and agent steps per second over all seeds (rollout +
    GAE + PPO epochs, i.e. everything `hivex train` does between host calls), and the compile time.
    `seeds`: "auto" (as `hivex train`: `seeds_in_turn`), "vmap" or "in_turn", to compare the two."""
    if seeds not in ("auto", "vmap", "in_turn"):
        raise ValueError(f"seeds must be auto, vmap or in_turn; got {seeds!r}")
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.config import load_config
    from baselines.core.ppo import make_train
    from baselines.run.population import Population

    config = load_config(config_path, [*overrides, f"chunk_updates={int(num_updates)}"])
    train = make_train(config)
    population = Population(train)
    if seeds != "auto":
        population.in_turn = seeds == "in_turn"
    state = population.init()
    compile_s = population.compile(state)
    state, _ = population.chunk(state)  # warm-up (first-run allocations)
    jax.block_until_ready(state)
    start = time.perf_counter()
    state, _ = population.chunk(state)
    jax.block_until_ready(state)
    seconds = time.perf_counter() - start
    env_steps = num_updates * config.steps_per_update * config.num_seeds
    return {
        "env_steps_per_s": env_steps / seconds,
        "agent_steps_per_s": env_steps * train.env.num_agents / seconds,
        "compile_s": compile_s,
        "num_envs": config.num_envs,
        "num_seeds": config.num_seeds,
        "seeds": "in_turn" if population.in_turn else "vmap",
        "num_steps": config.num_steps,
        "num_updates": int(num_updates),
        "seconds": seconds,
        "algo": config.algo,
        "env_id": config.env_id,
        "devices": len(population.devices),
        "backend": jax.default_backend(),
    }


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description="training throughput of a config")
    parser.add_argument("--config", default=None)
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--seeds", default="auto", choices=["auto", "vmap", "in_turn"], help="seed loop")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    text = json.dumps(train_throughput(args.config, args.overrides, args.updates, args.seeds), indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:  # (stdout may carry other packages' prints, e.g. jaxmarl's)
            f.write(text + "\n")
