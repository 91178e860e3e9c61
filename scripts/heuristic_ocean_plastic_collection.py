"""Scripted collector vs the random policy on held-out worlds, per task (OPC has no level parameter).

Usage: PJRT_NPROC=1 python scripts/heuristic_ocean_plastic_collection.py [--worlds 32] [--tasks 0,1,2,3]
       [--picture docs/images/ocean_plastic_collection.png]
Prints a markdown table over worlds 6000..6000+N-1 for the scripted, the random and the idle (all
no-op) policy: mean per-vessel episode return +- 95% CI, pebbles collected per vessel, episode length
(decisions until every vessel is out or 1000), and the share of vessels that crossed the border or
collided. The scripted policy is built for task 0 (the main task). Built on
`hivex_jax.eval.rollout.evaluate_params`: the tasks run as one stack of `EnvParams` (one compile per
policy), with the evaluation module's keys (`seeding.rollout_key` / `rollout_step_keys`, evaluation key
0). Figures measured before 2026-11-30 used a per-script key schedule, so they differ within noise.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import numpy as np

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import scripted_policy
from hivex_jax.envs.ocean_plastic_collection.params import TASK_NAMES
from hivex_jax.eval import rollout


def picture(env, params, path, world=6000, steps=120):
    """Save the top-down render after `steps` scripted decisions beside each vessel's trash grid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    obs, state = env.reset(hivex_jax.world_key(world), params)
    step = jax.jit(env.step)
    policy = jax.jit(scripted_policy)
    for t in range(steps):
        obs, state, *_ = step(jax.random.PRNGKey(t), state, policy(obs, params), params)
    frame = np.asarray(jax.jit(env.render)(state, params))
    a = env.num_agents
    fig = plt.figure(figsize=(4.2 + 1.6 * a, 4.2), dpi=110)
    grid = fig.add_gridspec(2, a + 2, width_ratios=[2.6, 2.6] + [1.6] * a)
    ax = fig.add_subplot(grid[:, :2])
    ax.imshow(frame)
    ax.set_title(f"world {world}, decision {steps} (scripted)", fontsize=9)
    ax.axis("off")
    names = ("orange", "magenta", "yellow", "cyan", "green", "red")
    for i in range(a):
        for row, (frame_index, label) in enumerate(((-1, "now"), (-2, "prev."))):
            sub = fig.add_subplot(grid[row, i + 2])
            sub.imshow(np.asarray(obs["visual"][i, :, :, frame_index]), cmap="gray", vmin=0, vmax=255)
            sub.set_title(f"{i} ({names[i % 6]}) {label}", fontsize=7)
            sub.set_xticks([])
            sub.set_yticks([])
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def ci95(x):
    return 1.96 * x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worlds", type=int, default=32)
    p.add_argument("--tasks", default="0,1,2,3")
    p.add_argument("--picture", default=None, help="also save a picture (render + trash grids) here")
    args = p.parse_args()
    env, params = hivex_jax.make("OceanPlasticCollection-v0")
    if args.picture:
        picture(env, params, args.picture)
    tasks = [int(t) for t in args.tasks.split(",")]
    worlds = range(6000, 6000 + args.worlds)
    stack = hivex_jax.stack_params([env.variant_params(params, task=task) for task in tasks])
    noop = env.action_space().noop()
    policies = {
        "scripted": lambda p: rollout.scripted_policy(env, p),
        "random": lambda _: rollout.random_policy(env),
        # no throttle, no steering: the vessels never move (the reference point for task 3)
        "idle": lambda _: lambda policy_params, key, obs, state: noop,
    }
    # totals [tasks, worlds, vessels, ...] per policy
    totals = {name: rollout.evaluate_params(env, stack, make, worlds) for name, make in policies.items()}
    print(
        f"{args.worlds} held-out worlds (seeds 6000..{6000 + args.worlds - 1}), {env.num_agents} vessels, "
        f"episodes of at most {int(params.max_steps)} decisions; per-vessel means\n"
    )
    print("| task | policy | return | pebbles collected | episode length | crossed border | collided |")
    print("|---|---|---|---|---|---|---|")
    for i, task in enumerate(tasks):
        for name, t in totals.items():
            ret = t["return"][i].mean(-1)
            stats = t["stats"]
            print(
                f"| {task} {TASK_NAMES[task]} | {name} | {ret.mean():.1f} ± {ci95(ret):.1f} "
                f"| {stats['pebbles_collected'][i].mean():.1f} | {t['length'][i].mean():.0f} "
                f"| {stats['border_crossings'][i].mean():.2f} | {stats['vessel_collisions'][i].mean():.2f} |"
            )


if __name__ == "__main__":
    main()
