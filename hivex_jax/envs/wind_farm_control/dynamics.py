"""Wind Farm Control dynamics: the wind model and turbine yaw control."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wind_farm_control.params import WindFarmParams
from hivex_jax.procgen.fields import FourierField

NOOP, ROTATE_LEFT, ROTATE_RIGHT = 0, 1, 2


def wind_angle(
    main_angle: jax.Array,
    swing_phase: jax.Array,
    noise: FourierField,
    points: jax.Array,
    t: jax.Array,
    params: WindFarmParams,
    spatial_phase: jax.Array | None = None,
    schedule: jax.Array | None = None,
    scheduled: jax.Array | None = None,
) -> jax.Array:
    """Direction the wind blows towards (rad, counter-clockwise from +x) at `points` f32[..., 2].

    Main direction + a slow sinusoidal swing of the whole farm's wind + a smooth space-time noise
    field (std `wind_noise_degrees`), so that turbines at different places see different wind.
    `spatial_phase` (from `noise.spatial_phase(points)`, computed at reset for the fixed turbines)
    skips the per-step projection of the points onto the waves. Where `scheduled` (bool[]) is set, the
    farm-wide direction is the world's `schedule` (f32[K] knots, `scheduled_direction`) instead of main
    direction + swing; the noise is added either way.
    """
    swing = jnp.deg2rad(params.main_wind_swing_degrees) * jnp.sin(
        2 * jnp.pi * t / params.main_wind_swing_period + swing_phase
    )
    if spatial_phase is None:
        spatial_phase = noise.spatial_phase(points)
    local = jnp.deg2rad(params.wind_noise_degrees) * noise.from_spatial_phase(spatial_phase, t)
    farm = main_angle + swing
    # a select: the generated wind stays bit-identical when not scheduled (both are given, or neither)
    if schedule is not None and scheduled is not None:
        farm = jnp.where(scheduled, scheduled_direction(schedule, t, params), farm)
    return farm + local


def scheduled_direction(schedule: jax.Array, t: jax.Array, params: WindFarmParams) -> jax.Array:
    """Farm-wide wind direction f32[] at step `t` from knots f32[K] evenly spread over steps
    0..max_steps: linear between the two knots around `t` (one gather and a lerp per step)."""
    knots = schedule.shape[0]
    where = jnp.clip(t / params.max_steps.astype(jnp.float32), 0.0, 1.0) * (knots - 1)
    left = jnp.minimum(jnp.floor(where).astype(jnp.int32), knots - 2)
    frac = where - left.astype(jnp.float32)
    return schedule[left] * (1.0 - frac) + schedule[left + 1] * frac


def rotate(facing_angle: jax.Array, yaw_action: jax.Array, params: WindFarmParams) -> jax.Array:
    """Apply the yaw action (0 no-op, 1 rotate left = counter-clockwise, 2 rotate right)."""
    direction = jnp.where(yaw_action == ROTATE_LEFT, 1.0, jnp.where(yaw_action == ROTATE_RIGHT, -1.0, 0.0))
    new = facing_angle + direction * jnp.deg2rad(params.rotation_step_degrees)
    return jnp.mod(new + jnp.pi, 2 * jnp.pi) - jnp.pi


def unit(angle: jax.Array) -> jax.Array:
    """Unit vectors f32[..., 2] (x, z) for angles in radians."""
    return jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=-1)
