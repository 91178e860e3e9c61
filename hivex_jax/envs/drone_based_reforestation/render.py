"""Top-down picture of a Drone-Based Reforestation world: terrain, lakes, forest, the reforestation band,
the station, planted seeds and the drones."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core import draw
from hivex_jax.envs.drone_based_reforestation.dynamics import forward_xz
from hivex_jax.envs.drone_based_reforestation.generator import terrain_shape
from hivex_jax.envs.drone_based_reforestation.params import DroneParams
from hivex_jax.envs.drone_based_reforestation.rewards import reforestation_potential
from hivex_jax.envs.drone_based_reforestation.types import DroneState
from hivex_jax.procgen.fields import grid_points
from hivex_jax.procgen.terrain import disc_union_distance

LOW_LAND = jnp.asarray([0.55, 0.62, 0.42])
HIGH_LAND = jnp.asarray([0.80, 0.74, 0.60])
WATER = jnp.asarray([0.20, 0.40, 0.70])
FOREST = jnp.asarray([0.08, 0.35, 0.12])
BAND = jnp.asarray([0.75, 0.90, 0.30])
STATION = jnp.asarray([0.95, 0.95, 0.95])
SEED = jnp.asarray([0.30, 0.60, 0.10])
DRONE_EMPTY = jnp.asarray([0.15, 0.55, 0.95])
DRONE_SEED = jnp.asarray([1.00, 0.55, 0.10])
DRONE_OUT = jnp.asarray([0.45, 0.45, 0.45])


def render_world(state: DroneState, params: DroneParams, size: int) -> jax.Array:
    """uint8[size, size, 3] of the whole arena (x right, z up). Ground shade = terrain height; blue =
    lakes; dark green = forest; yellow-green tint = reforestation band (brighter = higher potential);
    white ring = charging radius; small green dots = planted seeds; drones (discs >= 7 px across, dark
    outline): orange with a seed, blue without, grey when out; a dark tick shows each drone's heading."""
    world = state.world
    e = params.arena_half_extent
    pts = grid_points(size, e)
    shape = terrain_shape(world, pts, params)
    relative = jnp.clip((shape - params.water_level) / (1.0 - params.water_level), 0.0, 1.0)
    image = LOW_LAND + relative[..., None] * (HIGH_LAND - LOW_LAND)
    forest_d = disc_union_distance(pts, world.forest_centres, world.forest_radii)
    pot = reforestation_potential(forest_d, params)
    image = draw.blend(image, 0.55 * pot, BAND)
    image = draw.blend(image, (forest_d <= 0.0).astype(jnp.float32), FOREST)
    image = draw.blend(image, (shape < params.water_level).astype(jnp.float32), WATER)
    station_d = jnp.linalg.norm(pts - world.station_xz, axis=-1)
    ring = jnp.clip(1.5 - jnp.abs(station_d - params.charge_radius) * size / (2 * e), 0.0, 1.0)
    image = draw.blend(image, ring, STATION)

    p = state.planted.shape[0]
    planted_present = (jnp.arange(p) < jnp.minimum(state.planted_count, p)).astype(jnp.float32)
    seed_px = draw.world_to_pixel(state.planted, e, size)
    image = draw.discs(image, seed_px, max(size / 160.0, 1.0), jnp.tile(SEED, (p, 1)), planted_present)

    xz = state.position[:, (0, 2)]
    centres = draw.world_to_pixel(xz, e, size)
    colours = jnp.where(state.holding_seed[:, None], DRONE_SEED, DRONE_EMPTY)
    colours = jnp.where((state.alive & ~state.grounded)[:, None], colours, DRONE_OUT)
    # >= 7 px across with a dark outline, so a drone stands out on a 128-px GIF (a 2-px radius was lost
    # in the forest); picture only, the drones' cameras are computed elsewhere
    radius = max(size / 32.0, 3.5)
    outline = max(size / 128.0, 1.0)
    visible = jnp.ones(xz.shape[0])
    image = draw.discs(image, centres, radius + outline, jnp.zeros((xz.shape[0], 3)), visible)
    image = draw.discs(image, centres, radius, colours, visible)
    nose = draw.world_to_pixel(xz + forward_xz(state.yaw) * (2.2 * radius * 2 * e / size), e, size)
    image = draw.segments(image, centres, nose, max(size / 128.0, 1.0), jnp.zeros(3))
    return draw.to_uint8(image)
