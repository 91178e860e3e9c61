"""The pytree types Drone-Based Reforestation's modules share: the state and its world. Their own module,
below everything that reads them (generator, dynamics, observations, render, env), so no import goes in
a circle."""

from __future__ import annotations

import jax
from flax import struct

from hivex_jax.core.environment import EnvState


@struct.dataclass
class World:
    """One generated world (read-only during the episode)."""

    terrain_waves: jax.Array  # f32[K, 2]
    terrain_phases: jax.Array  # f32[K]
    forest_centres: jax.Array  # f32[N, 2], (x, z)
    forest_radii: jax.Array  # f32[N]; generator.ABSENT_RADIUS for unused patches
    station_xz: jax.Array  # f32[2]
    station: jax.Array  # f32[3] (x, y, z): the station's hover point, where drones spawn and charge
    # f32[TERRAIN_GRID, TERRAIN_GRID] (generator.py) a file world's terrain shape (row 0 north); None:
    # analytic only
    terrain_grid: jax.Array | None = None
    terrain_gridded: jax.Array | None = None  # bool[], use `terrain_grid` instead of the plane waves


@struct.dataclass
class DroneState(EnvState):
    """The drones and what they did this episode, in their world."""

    world: World
    position: jax.Array  # f32[A, 3] (x, y, z), y up
    yaw: jax.Array  # f32[A], rad; forward = (cos, sin) in (x, z)
    speed: jax.Array  # f32[A], m/s forward
    climb_rate: jax.Array  # f32[A], m/s
    ground: jax.Array  # f32[A], ground / lake-surface height under the drone
    shape_below: jax.Array  # f32[A], terrain shape under the drone (< water_level: over a lake)
    energy: jax.Array  # f32[A] in [0, 1]
    holding_seed: jax.Array  # bool[A]
    at_station: jax.Array  # bool[A], within the charging radius after the last decision
    pick_up_earned: jax.Array  # bool[A], the next pick-up pays (first seed, or after a valid drop)
    grounded: jax.Array  # bool[A], battery empty and out_of_energy_ends_episode == 0
    found_tree: jax.Array  # bool[A], Find Close Tree already paid
    run_back_active: jax.Array  # bool[A], returning after a drop
    run_back_quality: jax.Array  # f32[A], r_bm of the last drop
    run_back_start: jax.Array  # f32[A], increments to the station at the drop
    run_back_best: jax.Array  # f32[A], fewest increments reached since
    best_potential: jax.Array  # f32[A], highest reforestation potential found
    best_height: jax.Array  # f32[A], highest point found
    trip_distance: jax.Array  # f32[A], furthest from the station since the last return (m)
    furthest_distance: jax.Array  # f32[A], furthest from the station this episode (m)
    planted: jax.Array  # f32[P, 2], dropped seeds (ring buffer, newest overwrite oldest)
    planted_count: jax.Array  # i32[], seeds dropped on land so far
