"""Scripted vs random policy on held-out worlds for every terrain level (Drone-Based Reforestation, main
task). Prints a markdown table (mean +- standard error over worlds of the per-drone episode return);
`--picture PATH` instead draws the docs picture (three worlds after some scripted steps, with cameras).
Built on `hivex_jax.eval.rollout.evaluate_params`: the ten levels run as one stack of `EnvParams` (one
compile per policy), with the evaluation module's keys (`seeding.rollout_key` / `rollout_step_keys`,
evaluation key 0). Figures measured before 2026-11-30 used a per-script key schedule, so they differ
within noise.

    PJRT_NPROC=1 python scripts/heuristic_drone_based_reforestation.py --worlds 8
    PJRT_NPROC=1 python scripts/heuristic_drone_based_reforestation.py \\
        --picture docs/images/drone_based_reforestation.png
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import numpy as np

from hivex_jax.core.registry import stack_params, world_key
from hivex_jax.envs.drone_based_reforestation import DroneBasedReforestation
from hivex_jax.eval.rollout import evaluate_params, random_policy, scripted_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=8, help="held-out worlds 6000 .. 6000+N-1")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--num-agents", type=int, default=3)
    parser.add_argument("--picture", default=None, help="draw the docs picture to this PNG and exit")
    args = parser.parse_args()
    if args.picture:
        picture(args.picture)
        return

    env = DroneBasedReforestation(num_agents=args.num_agents)
    levels = list(env.level_values)
    seeds = np.arange(6000, 6000 + args.worlds)
    stack = stack_params(
        [env.variant_params(env.default_params(), task=args.task, level=lv) for lv in levels]
    )
    # totals [levels, worlds, drones, ...]
    out = {
        "scripted": evaluate_params(env, stack, lambda p: scripted_policy(env, p), seeds),
        "random": evaluate_params(env, stack, lambda _: random_policy(env), seeds),
    }

    def cell(x: np.ndarray) -> str:
        return f"{x.mean():.2f} ± {x.std(ddof=1) / np.sqrt(x.size):.2f}" if x.size > 1 else f"{x.mean():.2f}"

    span = f"worlds {seeds[0]}..{seeds[-1]}"
    print(f"task {args.task}, {args.num_agents} drones, {span} (mean ± s.e. over worlds)\n")
    print(
        "| terrain level | scripted return | random return | scripted tree drops | scripted drop reward "
        "| scripted / random episode length | random highest point found |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, lv in enumerate(levels):
        scripted, rand = out["scripted"], out["random"]
        s_ret = scripted["return"][i].mean(-1)  # mean over drones of the episode return
        r_ret = rand["return"][i].mean(-1)
        drops = scripted["stats"]["tree_drop_count"][i].mean(-1)
        drop_reward = (
            scripted["stats"]["cumulative_tree_drop_reward"][i]
            + scripted["stats"]["cumulative_distance_reward"][i]
        ).mean(-1)
        s_len = scripted["active_steps"][i].mean(-1)  # mean over drones of the decisions each took
        r_len = rand["active_steps"][i].mean(-1)
        r_high = rand["stats"]["highest_point_on_terrain_found"][i].mean(-1)
        print(
            f"| {lv} | {cell(s_ret)} | {cell(r_ret)} | {cell(drops)} | {cell(drop_reward)} "
            f"| {s_len.mean():.1f} / {r_len.mean():.1f} | {cell(r_high)} |"
        )


def picture(path: str) -> None:
    """Three held-out worlds (levels 1, 5, 10) after some scripted decisions, the drones' cameras below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hivex_jax.envs.drone_based_reforestation import scripted_policy

    env = DroneBasedReforestation(render_size=320)
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.0), gridspec_kw={"height_ratios": [3, 1]})
    step, policy, render = jax.jit(env.step), jax.jit(scripted_policy), jax.jit(env.render)
    for col, (seed, level, steps) in enumerate([(6000, 1, 120), (6001, 5, 150), (6002, 10, 180)]):
        params = env.variant_params(env.default_params(), level=level)
        obs, state = jax.jit(env.reset)(world_key(seed), params)
        for i in range(steps):
            obs, state, *_ = step(jax.random.PRNGKey(i), state, policy(obs, params), params)
        axes[0, col].imshow(np.asarray(render(state, params)))
        axes[0, col].set_title(f"world {seed}, terrain level {level}, step {steps}")
        cams = np.asarray(obs["visual"][..., 0])
        strip = np.concatenate([np.pad(c, 1, constant_values=255) for c in cams], axis=1)
        axes[1, col].imshow(strip, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        axes[1, col].set_title("16x16 cameras of drones 0, 1, 2 (heading up)", fontsize=9)
    legend = (
        "ground: shade = terrain height\nblue: lakes\ndark green: forest (existing trees)\n"
        "yellow-green tint: reforestation band\n  (2.5-75 m from the forest; brighter = closer)\n"
        "white ring: station charging radius (7.5 m)\nsmall green dots: planted seeds\n"
        "drones: orange = carrying a seed,\n  blue = empty, grey = out; tick = heading"
    )
    axes[0, 3].text(0.0, 0.95, legend, va="top", fontsize=11, family="monospace")
    cameras = (
        "camera gray levels: black = outside arena,\nlake 13, forest 38, seed 56,\n"
        "ground 77-128, band 140-242, station 255"
    )
    axes[1, 3].text(0.0, 0.9, cameras, va="top", fontsize=10, family="monospace")
    for ax in axes.ravel():
        ax.axis("off")
    plt.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
