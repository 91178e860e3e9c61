"""World generation for Wind Farm Control: turbine layouts (9 patterns) and the wind draw.

Layout coordinates are not published (reference §2.1, NOT FOUND); ours are designed, in units of
`turbine_spacing`, centred on the origin. Patterns 0-6 depend only on the turbine count and are built
once with NumPy; 7 (Field) jitters the grid and 8 (Random) scatters turbines, both from the world key.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.wind_farm_control.layouts import fit_to_agent_count, real_farm_in_diameters
from hivex_jax.envs.wind_farm_control.params import ALL_PATTERN_NAMES, FIRST_REAL_FARM, WindFarmParams
from hivex_jax.envs.wind_farm_control.turbine import ROTOR_DIAMETER
from hivex_jax.procgen.fields import FourierField, fourier_field

WIND_NOISE_WAVES = 16


def _grid(n: int, cols: int, row_gap: float = 1.0, stagger: float = 0.0) -> np.ndarray:
    rows = math.ceil(n / cols)
    out = []
    for i in range(n):
        r, c = divmod(i, cols)
        out.append((c - (cols - 1) / 2 + (stagger if r % 2 else 0.0), (r - (rows - 1) / 2) * row_gap))
    return np.asarray(out, np.float32)


def _circle(n: int) -> np.ndarray:
    if n == 1:
        return np.zeros((1, 2), np.float32)
    radius = max(n / (2 * math.pi), 1.0)  # neighbours one spacing apart along the ring
    a = 2 * math.pi * np.arange(n) / n
    return np.stack([radius * np.cos(a), radius * np.sin(a)], -1).astype(np.float32)


def _square(n: int) -> np.ndarray:
    if n == 1:
        return np.zeros((1, 2), np.float32)
    side = max(n / 4.0, 1.0)  # perimeter 4 * side, turbines one spacing apart
    out = []
    for i in range(n):
        u = 4.0 * i / n  # position along the perimeter in sides
        edge, f = int(u), u - int(u)
        corners = [(-1, -1), (1, -1), (1, 1), (-1, 1), (-1, -1)]
        (x0, z0), (x1, z1) = corners[edge], corners[edge + 1]
        out.append((side / 2 * (x0 + f * (x1 - x0)), side / 2 * (z0 + f * (z1 - z0))))
    return np.asarray(out, np.float32)


def _cross(n: int) -> np.ndarray:
    arms = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    out = [(0.0, 0.0)]
    for i in range(1, n):
        (dx, dz), k = arms[(i - 1) % 4], (i - 1) // 4 + 1
        out.append((dx * k, dz * k))
    return np.asarray(out[:n], np.float32)


def pattern_table(num_agents: int) -> np.ndarray:
    """Unit layouts f32[11, A, 2]: rows 0-8 in turbine spacings (7-8 filled at reset), rows 9-10 the real
    farms in rotor diameters (layouts.py)."""
    n = num_agents
    cols = math.ceil(math.sqrt(n))
    table = np.zeros((len(ALL_PATTERN_NAMES), n, 2), np.float32)
    table[0] = _grid(n, cols, row_gap=math.sqrt(3) / 2, stagger=0.5)  # Default: staggered rows
    table[1] = _grid(n, cols)  # Grid
    table[2] = _grid(n, n)  # Chain: one line across the wind
    table[3] = _circle(n)  # Circle
    table[4] = _square(n)  # Square: turbines on a square's perimeter
    table[5] = _cross(n)  # Cross: centre plus four arms
    table[6] = _grid(n, math.ceil(n / 2), row_gap=2.0)  # Two Rows, two spacings apart
    table[7] = _grid(n, cols)  # Field: jittered grid (jitter added at reset)
    for farm in range(len(ALL_PATTERN_NAMES) - FIRST_REAL_FARM):
        table[FIRST_REAL_FARM + farm] = fit_to_agent_count(real_farm_in_diameters(farm), n)
    return table


def turbine_positions(key: jax.Array, unit_table: jax.Array, params: WindFarmParams) -> jax.Array:
    """World positions f32[A, 2] (metres) for `params.pattern`."""
    n = unit_table.shape[1]
    k_jitter, k_random = jax.random.split(key)
    jitter = jax.random.uniform(k_jitter, (n, 2), minval=-1.0, maxval=1.0) * params.field_jitter
    scattered = jax.random.uniform(k_random, (n, 2), minval=-0.8, maxval=0.8)
    unit = unit_table[params.pattern] + jnp.where(params.pattern == 7, 1.0, 0.0) * jitter
    # real farms keep their spacing in rotor diameters (of the NREL 5 MW reference turbine)
    placed = unit * jnp.where(params.pattern >= FIRST_REAL_FARM, ROTOR_DIAMETER, params.turbine_spacing)
    return jnp.where(params.pattern == 8, scattered * params.farm_half_extent, placed)


def draw_wind(key: jax.Array, params: WindFarmParams) -> tuple[jax.Array, jax.Array, FourierField]:
    """Per-world wind: main direction (rad), swing phase (rad) and the space-time noise field."""
    k_dir, k_phase, k_field = jax.random.split(key, 3)
    spread = jnp.deg2rad(params.main_wind_direction_range_degrees) / 2
    main = jnp.deg2rad(params.main_wind_direction_degrees) + jax.random.uniform(
        k_dir, minval=-spread, maxval=spread
    )
    phase = jax.random.uniform(k_phase, minval=0.0, maxval=2 * jnp.pi)
    field = fourier_field(
        k_field, WIND_NOISE_WAVES, params.wind_noise_length_scale, params.wind_noise_time_scale
    )
    return main, phase, field
