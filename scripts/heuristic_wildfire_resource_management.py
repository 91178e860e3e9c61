"""Scripted allocation vs the random policy on held-out worlds, for every terrain level.

Usage: PJRT_NPROC=1 python scripts/heuristic_wildfire_resource_management.py [--worlds 32] [--task 0]
Prints a markdown table over worlds 6000..6000+N-1: mean per-tower episode return +- 95% CI of both
policies, the heuristic's reward split (self / neighbourhood / collective), Individual Performance,
Individual Resource Count and the episode length (decisions until the fire is out, cap 500). All
levels and worlds run as one vmapped batch with mixed `EnvParams` (one compile per policy).
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.wildfire_resource_management import scripted_policy
from hivex_jax.envs.wildfire_resource_management.params import TASK_NAMES
from hivex_jax.eval.stats import mean_ci95

LEVELS = tuple(range(1, 11))


def episodes(env, params, policy, seeds):
    """Per-(level, world) totals of one full episode each: dict of np arrays [levels * worlds, ...]."""

    def run(p, seed):
        obs, state = env.reset(hivex_jax.world_key(seed), p)
        a = env.num_agents
        zero = {
            "return": jnp.zeros(a),
            "terms": jnp.zeros((a, 3)),
            "performance": jnp.zeros(a),
            "resource_count": jnp.zeros(a),
            "length": jnp.zeros(()),
        }

        def body(carry, k):
            obs, state, totals, finished = carry
            k_act, k_env = jax.random.split(k)
            obs, state, r, _, _, info = env.step(k_env, state, policy(obs, p, k_act), p)
            live = (~finished).astype(jnp.float32)
            stats = info["stats"]
            totals = {
                "return": totals["return"] + live * r,
                "terms": totals["terms"] + live * info["reward_terms"],
                "performance": totals["performance"] + live * stats["individual_performance"],
                "resource_count": totals["resource_count"] + live * stats["individual_resource_count"],
                "length": totals["length"] + live,
            }
            return (obs, state, totals, finished | info["done"]), None

        keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(0), seed), 500)
        (_, _, totals, _), _ = jax.lax.scan(body, (obs, state, zero, jnp.zeros((), bool)), keys)
        return totals

    return jax.tree.map(np.asarray, jax.jit(jax.vmap(run))(params, seeds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=32)
    parser.add_argument("--task", type=int, default=0)
    args = parser.parse_args()

    env, base = hivex_jax.make("WildfireResourceManagement-v0", task=args.task)
    space = env.action_space(base)
    worlds = np.arange(6000, 6000 + args.worlds, dtype=np.uint32)
    variants = [env.variant_params(base, level=lv) for lv in LEVELS for _ in worlds]
    params = hivex_jax.stack_params(variants)
    seeds = jnp.asarray(np.tile(worlds, len(LEVELS)))
    heuristic = episodes(env, params, lambda obs, p, k: scripted_policy(obs, p), seeds)
    rand = episodes(env, params, lambda obs, p, k: space.sample(k), seeds)

    def per_level(x):
        return np.asarray(x).reshape(len(LEVELS), len(worlds), *np.asarray(x).shape[1:])

    print(
        f"Task {args.task} ({TASK_NAMES[args.task]}), worlds 6000..{6000 + args.worlds - 1}: "
        "mean per-tower episode return +- 95% CI over worlds\n"
    )
    print(
        "| terrain level | heuristic | random | heuristic - random (paired) "
        "| heuristic self / neighbourhood / collective "
        "| Individual Performance | Individual Resource Count (heur. / rand.) | episode length |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, lv in enumerate(LEVELS):
        h = per_level(heuristic["return"])[i].mean(-1)
        r = per_level(rand["return"])[i].mean(-1)
        (hm, hc), (rm, rc), (dm, dc) = mean_ci95(h), mean_ci95(r), mean_ci95(h - r)
        terms = per_level(heuristic["terms"])[i].mean((0, 1))
        perf = per_level(heuristic["performance"])[i].mean()
        count_h = per_level(heuristic["resource_count"])[i].mean()
        count_r = per_level(rand["resource_count"])[i].mean()
        length = per_level(heuristic["length"])[i]
        print(
            f"| {lv} | {hm:.1f} +- {hc:.1f} | {rm:.1f} +- {rc:.1f} | {dm:+.1f} +- {dc:.1f} | "
            f"{terms[0]:.1f} / {terms[1]:.1f} / {terms[2]:.1f} | {perf:.1f} | "
            f"{count_h:.2f} / {count_r:.2f} | "
            f"{length.mean():.0f} (min {length.min():.0f}, max {length.max():.0f}) |"
        )
    all_h = per_level(heuristic["return"]).mean(-1)
    slope = np.polyfit(np.repeat(LEVELS, len(worlds)), all_h.reshape(-1), 1)[0]
    print(f"\nheuristic return vs terrain level: least-squares slope {slope:+.2f} per level")


if __name__ == "__main__":
    main()
