"""Drone kinematics and battery (NOT FOUND in the reference; designed, documented in the docs page).

Each drone has a position (x, y, z; y up), a heading (yaw, rad; forward = (cos yaw, sin yaw) in the x-z
plane), a forward speed and a climb rate. Per physics substep:

* yaw -= steer * max_yaw_rate * dt (steer +1 turns right, i.e. clockwise seen from above);
* speed and climb rate follow throttle * max_speed and up/down * max_climb_rate with a first-order lag;
* the drone moves horizontally unless the ground at the new point is above its flight height (it is
  blocked by the hill and its speed drops to 0: climb first), and stays inside the arena;
* its height stays between ground (or lake surface) + ground_clearance and flight_ceiling.

The battery drains per substep (faster with a seed) and recharges at the station (once per decision).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from hivex_jax.envs.drone_based_reforestation import rewards
from hivex_jax.envs.drone_based_reforestation.generator import ground_height, terrain_shape
from hivex_jax.envs.drone_based_reforestation.params import (
    LANDSCAPE_DRONE_HEIGHT,
    STATION_ALWAYS,
    STATION_TERMS,
    DroneParams,
)
from hivex_jax.envs.drone_based_reforestation.types import DroneState, World
from hivex_jax.procgen.terrain import disc_union_distance

THROTTLE, STEER, CLIMB = 0, 1, 2
FAR = 1.0e4  # distance reported when there is no tree of a kind


def forward_xz(yaw: jax.Array) -> jax.Array:
    """Unit forward vectors f32[..., 2] (x, z) for headings `yaw` (rad)."""
    return jnp.stack([jnp.cos(yaw), jnp.sin(yaw)], axis=-1)


def right_xz(forward: jax.Array) -> jax.Array:
    """Unit right vectors f32[..., 2]: `forward` turned 90 degrees clockwise (seen from above, z up)."""
    return jnp.stack([forward[..., 1], -forward[..., 0]], axis=-1)


def fly(
    world: World,
    params: DroneParams,
    position: jax.Array,
    yaw: jax.Array,
    speed: jax.Array,
    climb_rate: jax.Array,
    ground: jax.Array,
    shape: jax.Array,
    controls: jax.Array,
    movable: jax.Array,
    substeps: int,
    unroll: bool = True,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """Integrate `substeps` physics steps.

    Per drone: position f32[A, 3]; yaw, speed, climb_rate, ground, shape f32[A] (ground height and
    terrain shape under the drone); controls f32[A, 3] in [-1, 1]; movable bool[A] (drones that are out
    keep their state). Returns the new (position, yaw, speed, climb_rate, ground, shape).
    """
    dt = params.substep_seconds
    lag = 1.0 - jnp.exp(-dt / params.response_seconds)
    yaw_rate = jnp.deg2rad(params.max_yaw_rate_degrees)
    e = params.arena_half_extent
    target_speed = controls[:, THROTTLE] * params.max_speed
    target_climb = controls[:, CLIMB] * params.max_climb_rate
    turn = -controls[:, STEER] * yaw_rate * dt
    m = movable

    def substep(_, carry):
        position, yaw, speed, climb_rate, ground, shape = carry
        yaw = jnp.where(m, yaw + turn, yaw)
        speed = jnp.where(m, speed + (target_speed - speed) * lag, speed)
        climb_rate = jnp.where(m, climb_rate + (target_climb - climb_rate) * lag, climb_rate)
        xz = position[:, (0, 2)]
        candidate = jnp.clip(xz + (speed * dt)[:, None] * forward_xz(yaw), -e, e)
        y = jnp.minimum(position[:, 1] + climb_rate * dt, params.flight_ceiling)
        shape_at_candidate = terrain_shape(world, candidate, params)
        ground_at_candidate = ground_height(shape_at_candidate, params)
        clear = y >= ground_at_candidate + params.ground_clearance
        moved = m & clear
        xz = jnp.where(moved[:, None], candidate, xz)
        ground = jnp.where(moved, ground_at_candidate, ground)
        shape = jnp.where(moved, shape_at_candidate, shape)
        speed = jnp.where(m & ~clear, 0.0, speed)
        y = jnp.where(m, jnp.clip(y, ground + params.ground_clearance, params.flight_ceiling), position[:, 1])
        position = jnp.stack([xz[:, 0], y, xz[:, 1]], axis=-1)
        return position, yaw, speed, climb_rate, ground, shape

    # unrolled by default: the loop body is small and a GPU while loop costs a launch round per iteration
    carry = (position, yaw, speed, climb_rate, ground, shape)
    position, yaw, speed, climb_rate, ground, shape = jax.lax.fori_loop(
        0, substeps, substep, carry, unroll=unroll
    )
    return position, yaw, speed, climb_rate, ground, shape


def battery_drain(holding_seed: jax.Array, params: DroneParams, substeps: int) -> jax.Array:
    """Energy used in one decision f32[A] (per-substep drain x substeps; more with a seed)."""
    per_substep = jnp.where(holding_seed, params.battery_drain_holding_seed, params.battery_drain_no_seed)
    return per_substep * substeps


# --------------------------------------------------------------------------------- one decision
# The step's mechanics after the flight, in order: distances, seed and battery, Running Back's return,
# exploration. Each hands the next a small NamedTuple (f32 / bool [A] per drone unless noted).


class Distances(NamedTuple):
    """f32[A] distances (m) after this step's flight; `xz` f32[A, 2], `on_land` bool[A]."""

    xz: jax.Array
    on_land: jax.Array
    forest: jax.Array  # to the closest existing forest
    planted: jax.Array  # to the closest planted seed (FAR if none)
    trees: jax.Array  # to the closest tree that counts for a drop
    station: jax.Array  # horizontal, to the station
    station_3d: jax.Array


class SeedAndBattery(NamedTuple):
    """This step's seed drop, station visit and battery, per drone."""

    dropping: jax.Array
    seed_reward: jax.Array  # r_s of the drop (0 without one)
    distance_reward: jax.Array  # r_d of the drop
    planted: jax.Array  # f32[P, 2]
    planted_count: jax.Array  # i32[]
    at_station: jax.Array
    arrival: jax.Array
    pick_up: jax.Array
    pick_up_paid: jax.Array
    pick_up_earned: jax.Array
    holding: jax.Array
    charging: jax.Array
    energy: jax.Array
    out_of_energy: jax.Array
    drop_success: jax.Array


class RunningBack(NamedTuple):
    """Incremental Running Back: this step's reward and the return being tracked."""

    reward: jax.Array
    active: jax.Array
    quality: jax.Array
    start: jax.Array
    best: jax.Array


class Exploration(NamedTuple):
    """The exploration terms' increments and running maxima, and Find Close Tree."""

    fertility_delta: jax.Array
    best_potential: jax.Array
    landscape_delta: jax.Array
    best_height: jax.Array
    trip_delta: jax.Array
    return_reward: jax.Array
    trip_max: jax.Array
    furthest_delta: jax.Array
    furthest: jax.Array
    found: jax.Array


def planted_present(planted_count: jax.Array, max_planted_trees: int) -> jax.Array:
    """bool[P]: which slots of the planted-seed ring buffer hold a seed."""
    return jnp.arange(max_planted_trees) < jnp.minimum(planted_count, max_planted_trees)


def distances(
    state: DroneState, position: jax.Array, shape_here: jax.Array, params: DroneParams
) -> Distances:
    """Distances after the flight to the forest, the planted seeds and the station."""
    p_cap = state.planted.shape[0]
    station = state.world.station
    xz = position[:, (0, 2)]
    forest_d = disc_union_distance(xz, state.world.forest_centres, state.world.forest_radii)
    present = planted_present(state.planted_count, p_cap)
    to_planted = jnp.sqrt(jnp.sum((xz[:, None, :] - state.planted[None]) ** 2, axis=-1))
    planted_d = jnp.min(jnp.where(present[None, :], to_planted, FAR), axis=-1)
    return Distances(
        xz=xz,
        on_land=shape_here >= params.water_level,
        forest=forest_d,
        planted=planted_d,
        trees=jnp.where(params.drop_counts_new_trees == 1, jnp.minimum(forest_d, planted_d), forest_d),
        station=jnp.sqrt(jnp.sum((xz - station[jnp.asarray([0, 2])]) ** 2, axis=-1)),
        station_3d=jnp.sqrt(jnp.sum((position - station) ** 2, axis=-1)),
    )


def seed_and_battery(
    state: DroneState,
    drop_action: jax.Array,
    movable: jax.Array,
    near: Distances,
    weights: jax.Array,
    params: DroneParams,
    substeps: int,
) -> SeedAndBattery:
    """Drop a seed (planted if on land), pick one up and recharge at the station, drain the battery."""
    p_cap = state.planted.shape[0]
    holding0 = state.holding_seed
    # Seeds are not dropped on the station pad (a drop/pick-up loop there would farm pick-ups).
    dropping = movable & holding0 & (drop_action == 1) & (near.station_3d > params.charge_radius)
    seed_r, distance_r = rewards.drop_seed_reward(
        near.trees, near.planted, near.station, near.on_land, params
    )
    seed_r = jnp.where(dropping, seed_r, 0.0)
    distance_r = jnp.where(dropping, distance_r, 0.0)
    holding1 = holding0 & ~dropping
    plant = dropping & near.on_land
    slot = (state.planted_count + jnp.cumsum(plant) - 1) % p_cap
    planted = state.planted.at[jnp.where(plant, slot, p_cap)].set(near.xz, mode="drop")

    # The station (seed pick-up and recharge) works in the tasks that use it (HIVEX logs no recharge
    # and no drop in tasks 1, 4 and 5: there drones fly the whole episode without a seed).
    station_on = (params.station_mode == STATION_ALWAYS) | jnp.any(weights[jnp.asarray(STATION_TERMS)] != 0.0)
    at_station = movable & station_on & (near.station_3d <= params.charge_radius)
    pick_up = at_station & ~holding1
    drained = state.energy - jnp.where(movable, battery_drain(holding0, params, substeps), 0.0)
    energy = jnp.clip(drained + jnp.where(at_station, params.recharge_per_decision, 0.0), 0.0, 1.0)
    # Empty below half a substep's drain: the f32 sum of 400 drains of 0.0025 must empty a battery
    # exactly on the 400th decision, whatever the rounding.
    out_of_energy = movable & (energy < 0.5 * params.battery_drain_no_seed)
    return SeedAndBattery(
        dropping=dropping,
        seed_reward=seed_r,
        distance_reward=distance_r,
        planted=planted,
        planted_count=state.planted_count + jnp.sum(plant, dtype=jnp.int32),
        at_station=at_station,
        arrival=at_station & ~state.at_station,
        pick_up=pick_up,
        pick_up_paid=pick_up & (state.pick_up_earned | (params.pick_up_requires_planting == 0)),
        pick_up_earned=(state.pick_up_earned & ~pick_up) | (dropping & (seed_r > 0.0)),
        holding=holding1 | pick_up,
        charging=at_station & (state.energy < 1.0),
        energy=jnp.where(out_of_energy, 0.0, energy),
        out_of_energy=out_of_energy,
        drop_success=dropping & ((params.drop_success_requires_valid == 0) | (seed_r > 0.0)),
    )


def running_back(
    state: DroneState, movable: jax.Array, seed: SeedAndBattery, near: Distances, params: DroneParams
) -> RunningBack:
    """Incremental Running Back: pay the return of the previous drop; a valid drop starts a new one."""
    rb_reward, rb_best = rewards.running_back_reward(
        state.run_back_active & movable,
        state.run_back_quality,
        state.run_back_start,
        state.run_back_best,
        near.station_3d,
        params,
    )
    new_run = seed.dropping & (seed.seed_reward > 0.0)
    start_inc = jnp.floor(near.station_3d / params.running_back_increment)
    quality = rewards.drop_quality(seed.seed_reward, seed.distance_reward, params)
    return RunningBack(
        reward=jnp.where(seed.dropping, 0.0, rb_reward),
        active=jnp.where(new_run, True, state.run_back_active) & ~seed.at_station,
        quality=jnp.where(new_run, quality, state.run_back_quality),
        start=jnp.where(new_run, start_inc, state.run_back_start),
        best=jnp.where(new_run, start_inc, rb_best),
    )


def exploration(
    state: DroneState,
    movable: jax.Array,
    position: jax.Array,
    ground: jax.Array,
    seed: SeedAndBattery,
    near: Distances,
    params: DroneParams,
) -> Exploration:
    """The exploration terms' running maxima (potential, height, distances) and Find Close Tree."""
    valid_here = rewards.valid_location(near.trees, near.planted, near.on_land, params)
    potential = jnp.where(valid_here, rewards.reforestation_potential(near.trees, params), 0.0)
    fertility_delta, best_potential = rewards.running_max_delta(potential, state.best_potential, movable)
    height = jnp.where(params.landscape_height_mode == LANDSCAPE_DRONE_HEIGHT, position[:, 1], ground)
    landscape_delta, best_height = rewards.running_max_delta(height, state.best_height, movable)
    trip_delta, trip_max = rewards.running_max_delta(near.station, state.trip_distance, movable)
    furthest_delta, furthest = rewards.running_max_delta(near.station, state.furthest_distance, movable)
    return Exploration(
        fertility_delta=fertility_delta,
        best_potential=best_potential,
        landscape_delta=landscape_delta,
        best_height=best_height,
        trip_delta=trip_delta,
        return_reward=jnp.where(seed.arrival, trip_max / params.far_distance_divisor, 0.0),
        trip_max=jnp.where(seed.arrival, near.station, trip_max),
        furthest_delta=furthest_delta,
        furthest=furthest,
        found=movable & ~state.found_tree & rewards.finds_close_tree(near.forest, params),
    )
