"""Drone-Based Reforestation: the zero action's return per drone, per task (what standing still earns,
so the page can say which tasks it solves).

    PJRT_NPROC=1 python scripts/dbr_zero_action_returns.py [--tasks 5,7] [--worlds 6000:6008]
        [--level 1] [key=value ...]

Full episodes (the env's max_steps), every drone given the all-zero action (`action_space().noop()`),
`hivex_jax.eval.rollout.evaluate` with key 0; `key=value` sets EnvParams fields (e.g.
`group_up_spawn_radius=3` to play task 7 with the 3 m spawn ring it had before). Prints, per task,
the mean return per drone over worlds (min / max over worlds) and its largest reward terms.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax.numpy as jnp

import hivex_jax
from hivex_jax.envs.drone_based_reforestation.params import TASK_NAMES
from hivex_jax.eval.rollout import evaluate


def main() -> None:
    """Parse the options, play the zero action in each task, print one line per task."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="5,7")
    p.add_argument("--worlds", default="6000:6008")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("overrides", nargs="*", metavar="key=value")
    args = p.parse_args()
    fields = {k: float(v) for k, v in (o.split("=", 1) for o in args.overrides)}
    for task in (int(t) for t in args.tasks.split(",")):
        env, params = hivex_jax.make("DroneBasedReforestation-v0", task=task, level=args.level)
        params = params.replace(**{k: jnp.asarray(v, getattr(params, k).dtype) for k, v in fields.items()})
        noop = env.action_space().noop()
        out = evaluate(env, params, lambda pp, key, obs, state, noop=noop: noop, args.worlds)
        per_world = out["return"].mean(axis=-1)  # [W]: mean over drones
        terms = out["reward_terms"].sum(axis=0).mean(axis=0) / len(per_world)  # per drone, mean over worlds
        top = sorted(zip(env.reward_term_names, terms, strict=True), key=lambda t: -abs(t[1]))[:3]
        print(
            f"task {task} {TASK_NAMES[task]}: zero action {per_world.mean():.1f} per drone "
            f"(worlds {args.worlds}: min {per_world.min():.1f}, max {per_world.max():.1f}); "
            + ", ".join(f"{n} {v:.1f}" for n, v in top if v)
        )


if __name__ == "__main__":
    main()
