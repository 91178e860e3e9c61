"""Scripted "turn into the wind" controller vs the random policy on held-out worlds, per pattern.

Usage: PJRT_NPROC=1 python scripts/heuristic_wind_farm_control.py [--worlds 16] [--task 0]
Prints a markdown table: mean per-turbine episode return (4999 decisions) +- 95% CI over worlds 6000..
Built on `hivex_jax.eval.rollout.evaluate_params`: all nine patterns run as one stack of `EnvParams` (one
compile per policy), with the evaluation module's keys (`seeding.rollout_key` / `rollout_step_keys`,
evaluation key 0). Figures measured before 2026-11-30 used a per-script key schedule and differ within noise.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.wind_farm_control import scripted_policy
from hivex_jax.envs.wind_farm_control.params import PATTERN_NAMES
from hivex_jax.eval.rollout import evaluate_params, random_policy


def heuristic_for(task: int):
    """`make_policy(env_params) -> Policy` of the task's heuristic (scripted controller or its variant)."""
    if task == 0:
        return lambda p: lambda policy_params, key, obs, state: scripted_policy(obs, p)

    def avoid_damage(p):  # keep the rotor at 90 degrees to the wind (turn the wind vector by 90)
        def policy(policy_params, key, obs, state):
            v = obs["vector"]
            rotated = jnp.stack([-v[:, 5], v[:, 4]], -1)
            return scripted_policy({"vector": v.at[:, 4:6].set(-rotated)}, p)

        return policy

    return avoid_damage


def ci95(x):
    return 1.96 * x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worlds", type=int, default=16)
    p.add_argument("--task", type=int, default=0)
    args = p.parse_args()
    env, params = hivex_jax.make("WindFarmControl-v0", task=args.task)
    worlds = range(6000, 6000 + args.worlds)
    stack = hivex_jax.stack_params([env.variant_params(params, level=i) for i in range(len(PATTERN_NAMES))])
    # per-turbine return averaged over turbines: [patterns, worlds]
    scripted = evaluate_params(env, stack, heuristic_for(args.task), worlds)["return"].mean(-1)
    rand = evaluate_params(env, stack, lambda _: random_policy(env), worlds)["return"].mean(-1)

    top = float(params.max_steps)
    print(
        f"task {args.task}, {args.worlds} held-out worlds (seeds 6000..{6000 + args.worlds - 1}),"
        f" per-turbine return over {int(top)} steps (max {int(top)})\n"
    )
    print("| pattern | scripted | random | scripted / max |")
    print("|---|---|---|---|")
    for pattern, name in enumerate(PATTERN_NAMES):
        s, r = scripted[pattern], rand[pattern]
        print(
            f"| {pattern} {name} | {s.mean():.1f} ± {ci95(s):.1f} | {r.mean():.1f} ± {ci95(r):.1f} "
            f"| {s.mean() / top:.3f} |"
        )


if __name__ == "__main__":
    main()
