"""Scripted collector vs the random policy on held-out worlds, per task (OPC has no level parameter).

Usage: PJRT_NPROC=1 python scripts/heuristic_ocean_plastic_collection.py [--worlds 32] [--tasks 0,1,2,3]
       [--picture docs/images/ocean_plastic_collection.png]
Prints a markdown table over worlds 6000..6000+N-1 for the scripted, the random and the idle (all
no-op) policy: mean per-vessel episode return +- 95% CI, pebbles collected per vessel, episode length
(decisions until every vessel is out or 1000), and the share of vessels that crossed the border or
collided. The scripted policy is built for task 0 (the main task).
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import scripted_policy
from hivex_jax.envs.ocean_plastic_collection.params import TASK_NAMES


def episode_runner(env, policy, steps):
    """Compiled `run(seeds, params)`: per-world totals of one full episode each (np arrays [worlds, ...]).

    `policy(obs, key, params)`; params are an argument, so every task reuses one compilation.
    """

    def run(seed, params):
        obs, state = env.reset(hivex_jax.world_key(seed), params)
        a = env.num_agents
        zero = {
            "return": jnp.zeros(a),
            "collected": jnp.zeros(a),
            "crossed": jnp.zeros(a),
            "collided": jnp.zeros(a),
            "length": jnp.zeros(()),
        }

        def body(carry, k):
            obs, state, totals, finished = carry
            k_act, k_env = jax.random.split(k)
            obs, state, r, _, _, info = env.step(k_env, state, policy(obs, k_act, params), params)
            live = (~finished).astype(jnp.float32)
            stats = info["stats"]
            totals = {
                "return": totals["return"] + live * r,
                "collected": totals["collected"] + live * stats["pebbles_collected"],
                "crossed": totals["crossed"] + live * stats["border_crossings"],
                "collided": totals["collided"] + live * stats["vessel_collisions"],
                "length": totals["length"] + live,
            }
            return (obs, state, totals, finished | info["done"]), None

        keys = jax.random.split(jax.random.PRNGKey(seed), steps)
        (_, _, totals, _), _ = jax.lax.scan(body, (obs, state, zero, jnp.zeros((), bool)), keys)
        return totals

    compiled = jax.jit(jax.vmap(run, in_axes=(0, None)))
    return lambda seeds, params: jax.tree.map(np.asarray, compiled(seeds, params))


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
    seeds = jnp.arange(6000, 6000 + args.worlds, dtype=jnp.uint32)
    space = env.action_space()
    print(
        f"{args.worlds} held-out worlds (seeds 6000..{6000 + args.worlds - 1}), {env.num_agents} vessels, "
        f"episodes of at most {int(params.max_steps)} decisions; per-vessel means\n"
    )
    print("| task | policy | return | pebbles collected | episode length | crossed border | collided |")
    print("|---|---|---|---|---|---|---|")
    steps = int(params.max_steps)
    runners = {
        "scripted": episode_runner(env, lambda o, k, p: scripted_policy(o, p), steps),
        "random": episode_runner(env, lambda o, k, p: space.sample(k), steps),
        # no throttle, no steering: the vessels never move (the reference point for task 3)
        "idle": episode_runner(env, lambda o, k, p: space.noop(), steps),
    }
    for task in (int(t) for t in args.tasks.split(",")):
        pt = env.variant_params(params, task=task)
        for name, runner in runners.items():
            t = runner(seeds, pt)
            ret = t["return"].mean(-1)
            print(
                f"| {task} {TASK_NAMES[task]} | {name} | {ret.mean():.1f} ± {ci95(ret):.1f} "
                f"| {t['collected'].mean():.1f} | {t['length'].mean():.0f} "
                f"| {t['crossed'].mean():.2f} | {t['collided'].mean():.2f} |"
            )


if __name__ == "__main__":
    main()
