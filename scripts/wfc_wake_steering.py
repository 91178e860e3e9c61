"""Wake steering: greedy (every rotor into the wind) vs a static yaw set optimised by gradient through
the JAX wake model, farm power on held-out wind conditions. Also draws the docs' wake-field figure.

Usage: PJRT_NPROC=1 python scripts/wfc_wake_steering.py [--seeds 5] [--steps 150] [--row] [--figure PATH]
(`--seeds 0 --figure PATH` only draws the figure.)
Per seed: draw 32 training wind conditions (direction within +-`spread` deg of along-the-rows, speed
6-10 m/s, TI 0.05-0.10), fit one yaw per turbine (bounded to +-30 deg) with Adam on their mean farm
power, then evaluate on 64 held-out conditions from the same ranges (another key). Prints the gain
over greedy, mean +- 95% CI (t, over seeds).
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

from baselines.studies.wfc_wakes import D, K, conditions, farm_power, optimise
from hivex_jax.envs.wind_farm_control import generator, wakes
from hivex_jax.envs.wind_farm_control.params import ALL_PATTERN_NAMES, FIRST_REAL_FARM

T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 8: 2.36, 10: 2.26}


def study(name, positions, seeds, steps, spread, model):
    gains, greedy_mw, opt_mw = [], [], []
    eval_power = jax.jit(lambda y, w: farm_power(positions, y, w, model))  # noqa: E731
    for seed in range(seeds):
        k_train, k_test, k_init = jax.random.split(jax.random.PRNGKey(seed), 3)
        yaw = optimise(positions, conditions(k_train, 32, spread), steps, model, k_init)
        held_out = conditions(k_test, 64, spread)
        g = float(eval_power(jnp.zeros(positions.shape[0]), held_out))
        o = float(eval_power(yaw, held_out))
        gains.append(100 * (o / g - 1))
        greedy_mw.append(g)
        opt_mw.append(o)
    t = T95.get(seeds, 1.96)
    ci = lambda x: t * np.std(x, ddof=1) / np.sqrt(len(x))  # noqa: E731
    print(
        f"| {name} | {positions.shape[0]} | ±{spread:g}° | {np.mean(greedy_mw):.2f} ± {ci(greedy_mw):.2f} "
        f"| {np.mean(opt_mw):.2f} ± {ci(opt_mw):.2f} | {np.mean(gains):+.2f} ± {ci(gains):.2f} % |",
        flush=True,
    )
    return yaw


def figure(path, positions, yaw, model):
    """Top-down hub-height speed map, greedy vs optimised, turbines as rotor lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lo, hi = np.array(positions.min(0)) - 2 * D, np.array(positions.max(0)) + 2 * D  # writable copies
    lo[0] -= 1 * D
    hi[0] += 8 * D
    xs, ys = np.linspace(lo[0], hi[0], 360), np.linspace(lo[1], hi[1], 200)
    pts = jnp.asarray(np.stack(np.meshgrid(xs, ys), -1), jnp.float32)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True, constrained_layout=True)
    powers = {}
    for ax, y, title in (
        (axes[0], jnp.zeros_like(yaw), "greedy: every rotor faces the wind"),
        (axes[1], yaw, "optimised static yaw (wake steering)"),
    ):
        flow = wakes.solve_farm(positions, y, 0.0, 8.0, 0.06, K, model)
        speed = wakes.hub_height_field(pts, positions, y, 0.0, 8.0, flow, K, model)
        im = ax.pcolormesh(
            xs / D, ys / D, np.asarray(speed), cmap="viridis", vmin=3.0, vmax=8.5, shading="auto"
        )
        for p, a in zip(np.asarray(positions), np.asarray(y), strict=True):
            # rotor line: perpendicular to the facing (into the wind = -x, turned by the yaw offset)
            face = np.pi + a
            dx, dy = -np.sin(face) * 0.5, np.cos(face) * 0.5
            ax.plot([p[0] / D - dx, p[0] / D + dx], [p[1] / D - dy, p[1] / D + dy], "w-", lw=2.5)
            if abs(np.rad2deg(a)) >= 0.5:
                ax.annotate(
                    f"{np.rad2deg(a):+.0f}°",
                    (p[0] / D, p[1] / D + 0.7),
                    color="white",
                    ha="center",
                    fontsize=8,
                    fontweight="bold",
                )
        powers[title] = float(jnp.sum(flow.power)) / 1e6
        ax.set_title(f"{title}\nfarm power {powers[title]:.2f} MW", fontsize=11)
        ax.set_aspect("equal")
        ax.set_xlabel("x / D (downwind)")
    axes[0].set_ylabel("y / D")
    fig.suptitle(
        f"{positions.shape[0]} turbines (NREL 5 MW, 5 D apart), FLORIS Gauss wake model in JAX: "
        "wind 8 m/s from the left, TI 6 %",
        fontsize=11,
    )
    fig.colorbar(im, ax=axes, label="hub-height wind speed (m/s)", shrink=0.75, pad=0.02)
    fig.savefig(path, dpi=110)
    print(
        f"wrote {path}: greedy {list(powers.values())[0]:.2f} MW, optimised {list(powers.values())[1]:.2f} MW"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--model", default="gauss")
    ap.add_argument("--row", action="store_true", help="also a 3-turbine row")
    ap.add_argument("--horns-rev", action="store_true", help="also the 80-turbine Horns Rev 1 study")
    ap.add_argument("--figure", default=None)
    args = ap.parse_args()
    print(
        f"model {args.model}; {args.seeds} seeds; {args.steps} Adam steps; 64 held-out conditions per seed\n"
    )
    print("| layout | turbines | wind direction | greedy MW | optimised MW | gain over greedy |")
    print("|---|---|---|---|---|---|")
    if args.row and args.seeds:
        row = jnp.asarray(np.stack([np.arange(3) * 5 * D, np.zeros(3)], -1), jnp.float32)
        study("row, 5 D", row, args.seeds, args.steps, 5.0, args.model)
    grid = jnp.asarray(generator.pattern_table(16)[1] * 5 * D, jnp.float32)
    if args.seeds:
        study("1 Grid 4 x 4, 5 D", grid, args.seeds, args.steps, 5.0, args.model)
    if args.horns_rev and args.seeds:
        hr = jnp.asarray(generator.pattern_table(80)[FIRST_REAL_FARM] * D, jnp.float32)
        study(ALL_PATTERN_NAMES[FIRST_REAL_FARM], hr, args.seeds, args.steps, 5.0, args.model)
    if args.figure:  # its own fit (seed 0's training conditions), so `--seeds 0` only draws it
        k_train, _, k_init = jax.random.split(jax.random.PRNGKey(0), 3)
        yaw = optimise(grid, conditions(k_train, 32, 5.0), args.steps, args.model, k_init)
        figure(args.figure, grid, yaw, args.model)


if __name__ == "__main__":
    main()
