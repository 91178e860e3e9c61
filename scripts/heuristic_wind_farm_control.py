"""Scripted "turn into the wind" controller vs the random policy on held-out worlds, per pattern.

Usage: PJRT_NPROC=1 python scripts/heuristic_wind_farm_control.py [--worlds 16] [--task 0]
Prints a markdown table: mean per-turbine episode return (4999 decisions) +- 95% CI over worlds 6000..
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.wind_farm_control import scripted_policy
from hivex_jax.envs.wind_farm_control.params import PATTERN_NAMES


def episode_returns(env, params, policy, seeds):
    """Per-world mean per-turbine return f32[worlds] of full episodes."""

    def run(seed):
        obs, state = env.reset(hivex_jax.world_key(seed), params)

        def body(carry, k):
            obs, state, total = carry
            obs, state, r, *_ = env.step(k, state, policy(obs, k), params)
            return (obs, state, total + r), None

        keys = jax.random.split(jax.random.PRNGKey(seed), int(params.max_steps))
        (_, _, total), _ = jax.lax.scan(body, (obs, state, jnp.zeros(env.num_agents)), keys)
        return total.mean()

    return np.asarray(jax.jit(jax.vmap(run))(seeds))


def ci95(x):
    return 1.96 * x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worlds", type=int, default=16)
    p.add_argument("--task", type=int, default=0)
    args = p.parse_args()
    env, params = hivex_jax.make("WindFarmControl-v0", task=args.task)
    seeds = jnp.arange(6000, 6000 + args.worlds, dtype=jnp.uint32)
    space = env.action_space()
    if args.task == 0:
        heuristic = lambda o, k, p: scripted_policy(o, p)  # noqa: E731
    else:  # Avoid Damage: keep the rotor at 90 degrees to the wind (turn the wind vector by 90)

        def heuristic(o, k, p):
            v = o["vector"]
            rotated = jnp.stack([-v[:, 5], v[:, 4]], -1)
            return scripted_policy({"vector": v.at[:, 4:6].set(-rotated)}, p)

    top = float(params.max_steps)
    print(
        f"task {args.task}, {args.worlds} held-out worlds (seeds 6000..{6000 + args.worlds - 1}),"
        f" per-turbine return over {int(top)} steps (max {int(top)})\n"
    )
    print("| pattern | scripted | random | scripted / max |")
    print("|---|---|---|---|")
    for pattern, name in enumerate(PATTERN_NAMES):
        pp = env.variant_params(params, level=pattern)
        s = episode_returns(env, pp, lambda o, k, pp=pp: heuristic(o, k, pp), seeds)
        r = episode_returns(env, pp, lambda o, k: space.sample(k), seeds)
        print(
            f"| {pattern} {name} | {s.mean():.1f} ± {ci95(s):.1f} | {r.mean():.1f} ± {ci95(r):.1f} "
            f"| {s.mean() / top:.3f} |"
        )


if __name__ == "__main__":
    main()
