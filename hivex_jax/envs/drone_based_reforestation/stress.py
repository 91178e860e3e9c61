"""Drone-Based Reforestation stress worlds (docs/worlds.md), each a pure function of the world key.

* `far_from_forest`: the station (where drones spawn and recharge) moves to the corner of the arena
  (at 80 % of the half-extent, on dry land where a corner is dry) farthest from every forest patch,
  and the patches whose edge is within half the arena's half-extent of it are removed (the farthest
  patch always stays): each seed has a long, energy-hungry flight to fertile ground.
* `lone_forest`: only the world's largest forest patch is kept: little ground counts as close to
  trees, and it is easy to miss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import StressWorld
from hivex_jax.envs.drone_based_reforestation import generator
from hivex_jax.envs.drone_based_reforestation.worlds import apply_world, world_fields

CORNER_FRACTION = 0.8
#: patches whose edge is nearer the station than this fraction of the arena's half-extent are removed
CLEAR_FRACTION = 0.5


def forest_edge_distance(points: jax.Array, centres: jax.Array, radii: jax.Array) -> jax.Array:
    """f32[P]: distance (m) from each point f32[P, 2] to the nearest forest patch's edge (absent
    patches, radius ABSENT_RADIUS, are never nearest)."""
    d = jnp.sqrt(jnp.sum((points[:, None, :] - centres[None]) ** 2, axis=-1)) - radii[None]
    return jnp.min(d, axis=-1)


def far_from_forest(env, key: jax.Array, state, params):
    """Station in the dry corner farthest from the forest. Returns `(obs, state)`."""
    world = world_fields(state)
    c = CORNER_FRACTION * params.arena_half_extent
    corners = jnp.asarray([[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]], jnp.float32) * c
    distance = forest_edge_distance(corners, world["forest_centres"], world["forest_radii"])
    dry = generator.terrain_shape(state.world, corners, params) >= params.water_level + 0.05
    score = jnp.where(dry, distance, distance - 1e6)  # a wet corner only if all are wet
    station = corners[jnp.argmax(score)]
    # per patch: distance from the station to its edge
    edge = jnp.sqrt(jnp.sum((world["forest_centres"] - station) ** 2, axis=-1)) - world["forest_radii"]
    present = world["forest_radii"] != generator.ABSENT_RADIUS
    farthest = jnp.argmax(jnp.where(present, edge, -jnp.inf))
    keep = present & (
        (edge >= CLEAR_FRACTION * params.arena_half_extent) | (jnp.arange(edge.shape[0]) == farthest)
    )
    world["forest_radii"] = jnp.where(keep, world["forest_radii"], generator.ABSENT_RADIUS)
    world["station_xz"] = station
    return apply_world(env, key, state, world, params)


def lone_forest(env, key: jax.Array, state, params):
    """Only the largest forest patch kept. Returns `(obs, state)`."""
    world = world_fields(state)
    radii = world["forest_radii"]
    keep = jnp.arange(radii.shape[0]) == jnp.argmax(radii)
    world["forest_radii"] = jnp.where(keep, radii, generator.ABSENT_RADIUS)
    return apply_world(env, key, state, world, params)


STRESS_WORLDS = {
    "far_from_forest": StressWorld(far_from_forest, "station in the arena corner farthest from the forest"),
    "lone_forest": StressWorld(lone_forest, "only the largest forest patch is kept"),
}
