"""Drone-Based Reforestation observations: 10 floats per drone and a 16 x 16 grayscale downward camera.

Vector (reference §2.3; normalisation NOT FOUND, ours: horizontal / 200, vertical / 40):

| idx | component |
|---|---|
| 0 | distance to ground (height above ground or lake surface) / 40 |
| 1-3 | position (x - station x) / 200, y / 40, (z - station z) / 200 ("local": station frame) |
| 4-6 | forward vector (x, y, z); y is 0 (drones fly level) |
| 7 | drone-station height (spawn height) / 40 |
| 8 | holding seed (0 / 1) |
| 9 | energy in [0, 1] |

Camera: a square patch of ground centred under the drone, heading-up (row 0 = ahead, column 0 = left),
half-width `camera_min_half_width + height above ground * tan(fov / 2)` (clamped), rendered from the
world as gray levels (uint8; networks divide by 255):

| what | gray (0-1) |
|---|---|
| outside the arena | 0 |
| lake | 0.05 |
| forest (existing trees) | 0.15 |
| planted seed (a disc of radius d_otmin = 2.5 m, at least 0.7 pixel) | 0.22 |
| plain ground | 0.3 + 0.2 * relative terrain height |
| reforestation band (2.5-75 m from the forest) | 0.55 + 0.4 * potential (1 at the forest edge) |
| station pad (charging radius) | 1 |
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.drone_based_reforestation.dynamics import forward_xz, right_xz
from hivex_jax.envs.drone_based_reforestation.generator import select_shape, shape_from_field
from hivex_jax.envs.drone_based_reforestation.params import DroneParams
from hivex_jax.envs.drone_based_reforestation.rewards import reforestation_potential
from hivex_jax.envs.drone_based_reforestation.types import World
from hivex_jax.procgen.terrain import (
    disc_union_distance_on_grid,
    grid_squared_distances,
    plane_wave_field_on_grid,
)

LAYOUT = {
    "distance_to_ground": slice(0, 1),
    "position": slice(1, 4),
    "forward": slice(4, 7),
    "station_height": slice(7, 8),
    "holding_seed": slice(8, 9),
    "energy": slice(9, 10),
}
VECTOR_SIZE = 10

GRAY_OUTSIDE, GRAY_WATER, GRAY_FOREST, GRAY_SEED, GRAY_STATION = 0.0, 0.05, 0.15, 0.22, 1.0
GRAY_GROUND, GRAY_GROUND_RANGE = 0.3, 0.2
GRAY_BAND, GRAY_BAND_RANGE = 0.55, 0.4
ABSENT_SEED = 1.0e6  # where absent planted seeds are put for the camera (m; far outside any view)


def vector_obs(
    position: jax.Array,
    yaw: jax.Array,
    ground: jax.Array,
    holding_seed: jax.Array,
    energy: jax.Array,
    station: jax.Array,
    params: DroneParams,
) -> jax.Array:
    """f32[A, 10] (layout in `LAYOUT`); `station` f32[3] is the station point."""
    fwd = forward_xz(yaw)
    a = position.shape[0]
    h = params.height_scale
    p = params.position_scale
    return jnp.concatenate(
        [
            ((position[:, 1] - ground) / h)[:, None],
            ((position[:, 0] - station[0]) / p)[:, None],
            (position[:, 1] / h)[:, None],
            ((position[:, 2] - station[2]) / p)[:, None],
            fwd[:, 0:1],
            jnp.zeros((a, 1)),
            fwd[:, 1:2],
            jnp.broadcast_to(station[1] / h, (a, 1)),
            holding_seed.astype(jnp.float32)[:, None],
            energy[:, None],
        ],
        axis=-1,
    ).astype(jnp.float32)


def ground_gray(
    shape: jax.Array,
    forest_distance: jax.Array,
    seed: jax.Array,
    station_distance: jax.Array,
    inside: jax.Array,
    params: DroneParams,
) -> jax.Array:
    """Gray level f32[...] in [0, 1] of ground points (see the module table); `seed` marks planted seeds."""
    relative = jnp.clip((shape - params.water_level) / (1.0 - params.water_level), 0.0, 1.0)
    pot = reforestation_potential(forest_distance, params)
    gray = GRAY_GROUND + GRAY_GROUND_RANGE * relative
    gray = jnp.where(pot > 0.0, GRAY_BAND + GRAY_BAND_RANGE * pot, gray)
    gray = jnp.where(seed, GRAY_SEED, gray)
    gray = jnp.where(forest_distance <= 0.0, GRAY_FOREST, gray)
    gray = jnp.where(shape < params.water_level, GRAY_WATER, gray)
    gray = jnp.where(station_distance <= params.charge_radius, GRAY_STATION, gray)
    return jnp.where(inside, gray, GRAY_OUTSIDE)


def camera(
    world: World,
    params: DroneParams,
    position: jax.Array,
    yaw: jax.Array,
    ground: jax.Array,
    planted: jax.Array | None,
    planted_present: jax.Array | None,
    size: int,
) -> jax.Array:
    """uint8[A, size, size, 1]: each drone's downward camera (heading-up), computed from the world and
    the planted seeds f32[P, 2] (`planted_present` bool[P]; None when there are none, as at reset: a
    min over constants would otherwise be constant-folded by XLA, very slowly)."""
    fov_half = jnp.tan(jnp.deg2rad(params.camera_fov_degrees) / 2.0)
    station_xz = world.station_xz
    # offsets of pixel centres in units of the half-width: rows go from ahead (+) to behind (-)
    unit = (2.0 * jnp.arange(size, dtype=jnp.float32) + 1.0) / size - 1.0

    def one(pos: jax.Array, heading: jax.Array, ground_here: jax.Array) -> jax.Array:
        half = jnp.clip(
            params.camera_min_half_width + (pos[1] - ground_here) * fov_half,
            params.camera_min_half_width,
            params.camera_max_half_width,
        )
        centre = pos[jnp.asarray([0, 2])]
        fwd = forward_xz(heading)
        right = right_xz(fwd)
        rows = -unit * half  # along forward
        cols = unit * half  # along right
        field = plane_wave_field_on_grid(
            world.terrain_waves, world.terrain_phases, centre, fwd, right, rows, cols
        )
        forest = disc_union_distance_on_grid(
            world.forest_centres, world.forest_radii, centre, fwd, right, rows, cols
        )
        # planted seeds; no square roots needed. Absent seeds are moved far away before the grid is
        # built: masking the [P, size, size] distances instead runs ~8x slower on the CPU (XLA does
        # not fuse the select into the reduction).
        if planted is None or planted_present is None:  # given together, or neither (at reset)
            seed = jnp.zeros((size, size), bool)
        else:
            seeds = jnp.where(planted_present[:, None], planted, ABSENT_SEED)
            seed_sq = jnp.min(grid_squared_distances(seeds, centre, fwd, right, rows, cols), axis=0)
            seed_radius = jnp.maximum(params.drop_min_distance, 1.4 * half / size)  # >= 0.7 pixel
            seed = seed_sq <= seed_radius**2
        # world coordinates of the pixels (for the station disc and the arena border)
        px = centre[0] + rows[:, None] * fwd[0] + cols[None, :] * right[0]
        pz = centre[1] + rows[:, None] * fwd[1] + cols[None, :] * right[1]
        station_d = jnp.sqrt((px - station_xz[0]) ** 2 + (pz - station_xz[1]) ** 2)
        e = params.arena_half_extent
        inside = (jnp.abs(px) <= e) & (jnp.abs(pz) <= e)
        # select_shape returns the analytic shape untouched for an env made without terrain grids
        shape = select_shape(world, shape_from_field(field, params), jnp.stack([px, pz], axis=-1), params)
        gray = ground_gray(shape, forest, seed, station_d, inside, params)
        return jnp.round(gray * 255.0).astype(jnp.uint8)[..., None]

    return jax.vmap(one)(position, yaw, ground)
