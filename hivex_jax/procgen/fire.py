"""Cellular wildfire spread on a grid, shared by the fire environments.

Each burning cell ignites each of its 8 neighbours independently with probability
`base_rate * exp(wind_factor * cos(angle to the wind) + slope_factor * rise / distance)`, clipped to
[0, 1]: faster downwind and uphill (the standard ingredients of Rothermel-type spread models, kept to
two exponents). Callers scale `base_rate` by weather (humidity, temperature) and mask by fuel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# (row offset, column offset) of the 8 neighbours; rows grow downward (towards -z in world space).
NEIGHBOUR_OFFSETS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


def shift(grid: jax.Array, dr: int, dc: int) -> jax.Array:
    """out[r, c] = grid[r + dr, c + dc], zero outside the grid (no wrap-around)."""
    h, w = grid.shape[:2]
    padded = jnp.pad(grid, ((1, 1), (1, 1)) + ((0, 0),) * (grid.ndim - 2))
    return jax.lax.dynamic_slice(padded, (1 + dr, 1 + dc) + (0,) * (grid.ndim - 2), grid.shape)


def ignition_probability(
    burning: jax.Array,
    heights: jax.Array,
    wind: jax.Array,
    base_rate: jax.Array,
    wind_factor: jax.Array,
    slope_factor: jax.Array,
    cell_size: jax.Array | float,
) -> jax.Array:
    """P(cell catches fire this step) f32[H, W] from its burning neighbours.

    burning: f32/bool[H, W]; heights: f32[H, W] (m); wind: f32[2] (x, z) unit-ish vector the wind blows
    towards, or f32[H, W, 2]; base_rate: f32[] or f32[H, W] per-neighbour ignition probability in calm,
    flat conditions.
    """
    burning = burning.astype(jnp.float32)
    not_ignited = jnp.ones_like(heights)
    for dr, dc in NEIGHBOUR_OFFSETS:
        source = shift(burning, dr, dc)  # neighbour at (r+dr, c+dc) burning?
        # Spread direction from the neighbour to this cell in world (x, z): columns are +x, rows are -z.
        dist = jnp.sqrt(float(dr * dr + dc * dc))
        direction = jnp.asarray([-dc, dr], jnp.float32) / dist
        along_wind = jnp.sum(wind * direction, axis=-1)
        rise = (heights - shift(heights, dr, dc)) / (dist * cell_size)
        p = jnp.clip(base_rate * jnp.exp(wind_factor * along_wind + slope_factor * rise), 0.0, 1.0)
        not_ignited = not_ignited * (1.0 - p * source)
    return 1.0 - not_ignited
