"""Wildfire Resource Management stress worlds (docs/worlds.md), each a pure function of the world key.

* `four_fronts`: besides the world's own ignition, fires start in all four quadrants of the island
  (at the forest cell nearest each quadrant's centre), so every tower's neighbourhood is threatened
  at once and resources cannot simply flow towards one fire.
* `drought`: the world's flammability doubled (capped at 1 per neighbour and step) and its wind
  1.5x stronger: a dry, windy day on which the fire spreads fast.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import StressWorld
from hivex_jax.envs.wildfire_resource_management.generator import BURNING, FUEL
from hivex_jax.envs.wildfire_resource_management.worlds import apply_world, world_fields

DROUGHT_FLAMMABILITY = 2.0
DROUGHT_WIND = 1.5


def cell_centres(params, resolution: int) -> tuple[jax.Array, jax.Array]:
    """x f32[R] of each column and z f32[R] of each row (row 0 is the north edge)."""
    half = params.island_half_extent
    c = (jnp.arange(resolution, dtype=jnp.float32) + 0.5) * (2.0 * half / resolution) - half
    return c, -c


def quadrant_points(params) -> jax.Array:
    """f32[4, 2] (x, z): the centres of the island's four quadrants."""
    q = params.island_half_extent / 2.0
    return jnp.asarray([[-1.0, 1.0], [1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], jnp.float32) * q


def ignite_near(fire: jax.Array, points: jax.Array, params) -> jax.Array:
    """`fire` with the forest within `ignition_radius` of the forest cell nearest each point burning."""
    xs, zs = cell_centres(params, fire.shape[0])
    fuel = fire == FUEL
    d2 = (xs[None, None, :] - points[:, 0, None, None]) ** 2 + (
        zs[None, :, None] - points[:, 1, None, None]
    ) ** 2
    start = jnp.argmin(jnp.where(fuel[None], d2, jnp.inf).reshape(points.shape[0], -1), axis=-1)
    sx = xs[start % fire.shape[0]]
    sz = zs[start // fire.shape[0]]
    near = (xs[None, None, :] - sx[:, None, None]) ** 2 + (zs[None, :, None] - sz[:, None, None]) ** 2
    lit = jnp.any(near <= params.ignition_radius**2, axis=0) & fuel
    return jnp.where(lit, jnp.uint8(BURNING), fire)


def four_fronts(env, key: jax.Array, state, params):
    """Fires in all four quadrants (plus the world's own). Returns `(obs, state)`."""
    world = world_fields(state)
    world["fire"] = ignite_near(world["fire"], quadrant_points(params), params)
    return apply_world(env, key, state, world, params)


def drought(env, key: jax.Array, state, params):
    """Doubled flammability, 1.5x wind. Returns `(obs, state)`."""
    world = world_fields(state)
    world["flammability"] = jnp.minimum(world["flammability"] * DROUGHT_FLAMMABILITY, 1.0)
    world["wind_speed"] = world["wind_speed"] * DROUGHT_WIND
    return apply_world(env, key, state, world, params)


STRESS_WORLDS = {
    "four_fronts": StressWorld(four_fronts, "fires start in all four quadrants besides the world's own"),
    "drought": StressWorld(
        drought, f"flammability x{DROUGHT_FLAMMABILITY:g} (capped at 1), wind x{DROUGHT_WIND:g}"
    ),
}
