"""Time a config's training chunk and held-out evaluation with the seeds vmapped and in turn, side by side.

    PJRT_NPROC=1 python scripts/bench_seed_loop.py --config configs/ippo_ocean_plastic_collection.yaml \
        [--updates 8] [--rounds 5] [--no-eval]

One process, one population state: the chunk of `--updates` updates compiled twice (`over_seeds` with
`in_turn` False and True: `jax.vmap` or `lax.map` over the config's `num_seeds`), and the trained policy's
held-out evaluation (greedy and stochastic, every seed, the config's test worlds) twice; each warmed up,
then timed in alternation for `--rounds` rounds (vmapped first, then in turn). Prints the medians and the
median of the rounds' ratios (vmapped time / in-turn time: above 1, in turn is faster).
"""

from __future__ import annotations

import argparse
import time

import _jax_setup  # noqa: F401  (PJRT_NPROC before jax starts)
import jax
import numpy as np

from baselines.config import load_config
from baselines.core.ppo import make_train
from baselines.run.evaluation import HeldOutEvaluation
from baselines.run.population import Population, over_seeds


def seconds(fn, *args) -> float:
    """Wall seconds of one call, its outputs ready."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--updates", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    config = load_config(args.config, [*args.overrides, f"chunk_updates={args.updates}"])
    train = make_train(config)
    state = Population(train).init()
    programs = {}
    for in_turn in (False, True):
        chunk = jax.jit(over_seeds(train.update_chunk, in_turn)).lower(state).compile()
        programs[f"chunk, {'in turn' if in_turn else 'vmapped'}"] = (chunk, state)
    if not args.no_eval:
        for in_turn in (False, True):
            evaluation = HeldOutEvaluation(train, config.test_worlds, in_turn=in_turn)
            programs[f"evaluation, {'in turn' if in_turn else 'vmapped'}"] = (
                evaluation.trained_totals,
                state.params,
            )
    for fn, arg in programs.values():
        seconds(fn, arg)  # compile (the evaluations) and first-run allocations
    times: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(args.rounds):
        for name, (fn, arg) in programs.items():
            times[name].append(seconds(fn, arg))
    steps = args.updates * config.steps_per_update * config.num_seeds * train.env.num_agents
    print(f"{config.env_id}, {config.num_seeds} seeds, {args.rounds} rounds, median s (agent-steps/s)")
    for name, t in times.items():
        rate = f" ({steps / np.median(t):,.0f} agent-steps/s)" if name.startswith("chunk") else ""
        print(f"  {name:22s} {np.median(t):7.2f} s{rate}")
    for what in ("chunk", "evaluation"):
        if f"{what}, vmapped" in times:
            ratios = np.asarray(times[f"{what}, vmapped"]) / np.asarray(times[f"{what}, in turn"])
            print(
                f"  {what}: vmapped / in turn, median of rounds {np.median(ratios):.3f} "
                f"(min {ratios.min():.3f}, max {ratios.max():.3f})"
            )


if __name__ == "__main__":
    main()
