"""JAX wake model (hivex_jax/envs/wind_farm_control/wakes.py) vs FLORIS 4, the docs' comparison table.

Usage: PJRT_NPROC=1 python scripts/wfc_wakes_floris_table.py   (needs `pip install floris`)
For each layout x model: the worst relative error of any turbine's rotor-average speed and the worst
power error (% of rated) over 8 wind directions x 3 speeds x 3 yaw settings (72 flow cases).
"""

from __future__ import annotations

import functools

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import floris
import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.wind_farm_control import generator, wakes
from hivex_jax.envs.wind_farm_control.params import ALL_PATTERN_NAMES, FIRST_REAL_FARM

D = wakes.ROTOR_DIAMETER
DIRECTIONS = (0.0, 5.0, 30.0, 45.0, 90.0, 137.0, 180.0, 270.0)  # deg, the way the wind blows
SPEEDS = (6.0, 9.0, 12.0)
TI = 0.06


@functools.cache
def batched_solver(model: str):
    """jit(vmap(solve_farm)) over flow cases (yaw, direction, speed), for one model."""
    k = wakes.WakeConstants()
    return jax.jit(jax.vmap(lambda p, y, a, s: wakes.solve_farm(p, y, a, s, TI, k, model), (None, 0, 0, 0)))


def layouts() -> dict[str, np.ndarray]:
    """name -> f64[A, 2] metres."""
    out = {"row 5 x 6D": np.stack([np.arange(5) * 6 * D, np.zeros(5)], -1)}
    table = generator.pattern_table(8)
    for p in range(8):
        out[f"{p} {ALL_PATTERN_NAMES[p]} (8, 5 D)"] = table[p].astype(np.float64) * 5 * D
    rng = np.random.default_rng(0)  # pattern 8 Random: one draw, rejected until no rotors overlap
    while True:
        pts = rng.uniform(-0.8, 0.8, (8, 2)) * 3000.0
        gaps = np.linalg.norm(pts[:, None] - pts[None], axis=-1) + np.eye(8) * 1e9
        if gaps.min() > 2 * D:
            out["8 Random (8, one draw)"] = pts
            break
    for farm, n in ((0, 80), (1, 48)):
        p = FIRST_REAL_FARM + farm
        out[f"{p} {ALL_PATTERN_NAMES[p]} ({n})"] = generator.pattern_table(n)[p].astype(np.float64) * D
    return out


def compare(model: str, positions: np.ndarray) -> tuple[float, float, int]:
    """(max relative speed error, max power error as a fraction of rated, cases) over the grid."""
    n = len(positions)
    rng = np.random.default_rng(1)
    yaws = [np.zeros(n), np.where(np.arange(n) % 2 == 0, 20.0, -20.0), rng.uniform(-25, 25, n)]
    cases = [(a, s, y) for a in DIRECTIONS for s in SPEEDS for y in yaws]
    angle = np.array([c[0] for c in cases])
    speed = np.array([c[1] for c in cases])
    yaw = np.stack([c[2] for c in cases])
    # one FLORIS run over all flow cases (its findex axis) and one vmapped JAX solve
    fm = floris.FlorisModel(wakes.floris_configuration(model))
    fm.set(
        layout_x=positions[:, 0],
        layout_y=positions[:, 1],
        wind_directions=(270.0 - angle) % 360.0,
        wind_speeds=speed,
        turbulence_intensities=np.full(len(cases), TI),
        yaw_angles=-yaw,
    )
    fm.run()
    fv, fp = fm.turbine_average_velocities, fm.get_turbine_powers()
    flow = batched_solver(model)(
        jnp.asarray(positions, jnp.float32),
        jnp.deg2rad(jnp.asarray(yaw, jnp.float32)),
        jnp.deg2rad(jnp.asarray(angle, jnp.float32)),
        jnp.asarray(speed, jnp.float32),
    )
    worst_v = float(np.max(np.abs(np.asarray(flow.effective_velocity) / fv - 1)))
    worst_p = float(np.max(np.abs(np.asarray(flow.power) - fp))) / wakes.RATED_POWER_W
    return worst_v, worst_p, len(cases)


def main() -> None:
    print(f"FLORIS {floris.__version__}, jax {jax.__version__} (float32)\n")
    print(
        "| layout | turbines | gauss: max speed error | gauss: max power error (% rated) "
        "| jensen: max speed error | jensen: max power error (% rated) |"
    )
    print("|---|---|---|---|---|---|")
    for name, positions in layouts().items():
        g = compare("gauss", positions)
        j = compare("jensen", positions)
        print(
            f"| {name} | {len(positions)} | {g[0]:.1e} | {100 * g[1]:.1e} | {j[0]:.1e} | {100 * j[1]:.1e} |",
            flush=True,
        )
    print(
        f"\n{g[2]} flow cases per layout and model: "
        f"{len(DIRECTIONS)} directions x {len(SPEEDS)} speeds x 3 yaw sets"
    )


if __name__ == "__main__":
    main()
