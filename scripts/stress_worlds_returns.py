"""Scripted and random returns on each env's stress worlds beside its normal held-out pool.

    PJRT_NPROC=1 python scripts/stress_worlds_returns.py [--envs ID ...] [--worlds 16] [--out FILE.json]

Normal pool: worlds 6000.. (the configs' held-out range); stress worlds: 9000.. (`STRESS_SEEDS`), each
stress world on its own. Full episodes (the env's max_steps), `hivex_jax.eval.rollout.Evaluator` with
the env's scripted controller and uniform random actions, key 0. Prints a markdown table of the mean
return per agent over worlds with a 95 % Student-t interval over worlds (docs/worlds.md).
"""

from __future__ import annotations

import argparse
import json
import time

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.eval import rollout
from hivex_jax.worlds.stress import stress_names, with_stress_worlds


def _policies(env, params):
    scripted = rollout.scripted_policy(env, params)
    random = rollout.random_policy(env)

    def policy(index, key, obs, state):
        both = [scripted(None, key, obs, state), random(None, key, obs, state)]
        return jax.tree.map(lambda *xs: jnp.stack(xs)[index], *both)

    return policy


def _summary(returns: np.ndarray) -> dict[str, float]:
    mean = float(returns.mean())
    half = float(stats.t.ppf(0.975, returns.size - 1) * returns.std(ddof=1) / np.sqrt(returns.size))
    return {"mean": mean, "ci95": half}


def measure(env_id: str, num_worlds: int) -> dict[str, dict[str, dict[str, float]]]:
    """`{condition: {"scripted"|"random": {"mean", "ci95"}}}` for the normal pool and each stress world."""
    env, params = hivex_jax.make(env_id)
    conditions = {"held-out (normal)": (env, f"6000:{6000 + num_worlds}")}
    for name in stress_names(env):
        conditions[f"stress: {name}"] = (with_stress_worlds(env, [name]), f"9000:{9000 + num_worlds}")
    out = {}
    for label, (cond_env, worlds) in conditions.items():
        totals = rollout.Evaluator(cond_env, params, _policies(cond_env, params), worlds, 0, batched=True)(
            jnp.arange(2)
        )
        per_world = totals["return"].mean(-1)  # [policy, world]: mean over agents
        out[label] = {"scripted": _summary(per_world[0]), "random": _summary(per_world[1])}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=list(BUNDLED_ENV_IDS))
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    results = {}
    for env_id in args.envs:
        start = time.time()
        results[env_id] = measure(env_id, args.worlds)
        print(f"# {env_id}: {time.time() - start:.0f} s", flush=True)
        for label, row in results[env_id].items():
            s, r = row["scripted"], row["random"]
            cells = [f"{x['mean']:.1f} +- {x['ci95']:.1f}" for x in (s, r)]
            print(f"| {env_id} | {label} | {cells[0]} | {cells[1]} |", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"worlds_per_condition": args.worlds, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
