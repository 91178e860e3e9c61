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

import jax
import jax.numpy as jnp

from hivex_jax.envs.drone_based_reforestation.generator import World, ground_height, terrain_shape
from hivex_jax.envs.drone_based_reforestation.params import DroneParams

THROTTLE, STEER, CLIMB = 0, 1, 2


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
