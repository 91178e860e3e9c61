"""Ocean Plastic Collection stress worlds (docs/worlds.md), each a pure function of the world key.

* `trash_fronts`: the hot spots sit on the four edges of the sea (centres at 85 % of the half-extent,
  spread round the edges) and the background trash only in the lattice's border cells: trash arriving
  from several sides at once, so vessels must split up.
* `far_corner`: all the trash (every hot spot and the background) in the sea's corner farthest from
  where the vessels start.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import StressWorld
from hivex_jax.envs.ocean_plastic_collection.params import BACKGROUND_LATTICE, MAX_HOTSPOTS
from hivex_jax.envs.ocean_plastic_collection.worlds import apply_world, world_fields

EDGE_FRACTION = 0.85


def edge_points(params) -> jax.Array:
    """f32[MAX_HOTSPOTS, 2]: points on the four edges (E, N, W, S, then again half-way along)."""
    e = EDGE_FRACTION * params.sea_half_extent
    sides = jnp.asarray([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], jnp.float32)
    along = jnp.asarray([[0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [1.0, 0.0]], jnp.float32)
    shift = jnp.repeat(jnp.asarray([0.0, 0.5], jnp.float32), 4)[:MAX_HOTSPOTS, None]
    k = jnp.arange(MAX_HOTSPOTS) % 4
    return (sides[k] + shift * along[k]) * e


def border_cells() -> jax.Array:
    """bool[L, L]: the lattice's border cells."""
    i = jnp.arange(BACKGROUND_LATTICE)
    edge = (i == 0) | (i == BACKGROUND_LATTICE - 1)
    return edge[:, None] | edge[None, :]


def trash_fronts(env, key: jax.Array, state, params):
    """Trash on all four edges. Returns `(obs, state)`."""
    world = world_fields(state)
    points = edge_points(params)
    world["hotspot_x"], world["hotspot_z"] = points[:, 0], points[:, 1]
    world["background"] = jnp.where(border_cells(), world["background"], 0.0)
    return apply_world(env, key, state, world, params)


def far_corner(env, key: jax.Array, state, params):
    """All trash in the corner farthest from the vessels' start. Returns `(obs, state)`."""
    world = world_fields(state)
    start = jnp.mean(state.positions, axis=0)
    sx = jnp.where(start[0] > 0, -1.0, 1.0)  # the opposite corner
    sz = jnp.where(start[1] > 0, -1.0, 1.0)
    e = EDGE_FRACTION * params.sea_half_extent
    world["hotspot_x"] = jnp.full_like(world["hotspot_x"], sx * e)
    world["hotspot_z"] = jnp.full_like(world["hotspot_z"], sz * e)
    last = BACKGROUND_LATTICE - 1
    row = jnp.where(sz > 0, 0, last)  # row 0 is the north (largest z) edge
    col = jnp.where(sx > 0, last, 0)
    world["background"] = jnp.zeros_like(world["background"]).at[row, col].set(1.0)
    return apply_world(env, key, state, world, params)


STRESS_WORLDS = {
    "trash_fronts": StressWorld(trash_fronts, "hot spots on all four edges, background only at the border"),
    "far_corner": StressWorld(far_corner, "all trash in the corner farthest from the vessels' start"),
}
