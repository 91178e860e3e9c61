"""Wind Farm Control rewards: Generate Energy (eq. 1-4, persistent performance P) and Avoid Damage (eq. 5)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wind_farm_control.params import THETA_LINEAR, WindFarmParams


def misalignment(facing_angle: jax.Array, wind_angle: jax.Array) -> jax.Array:
    """Angle (rad, in [0, pi]) between the turbine's facing and the direction the wind comes from."""
    # Facing into the wind means facing opposite to where it blows: wind_angle + pi.
    d = facing_angle - (wind_angle + jnp.pi)
    return jnp.abs(jnp.mod(d + jnp.pi, 2 * jnp.pi) - jnp.pi)


def alignment_theta(misalign: jax.Array, params: WindFarmParams) -> jax.Array:
    """theta of eq. 1: cos(misalignment) (default) or 1 - misalignment/90deg (contradiction 18)."""
    linear = 1.0 - misalign / (jnp.pi / 2)
    return jnp.where(params.theta_mode == THETA_LINEAR, linear, jnp.cos(misalign))


def wind_power_fraction(theta: jax.Array) -> jax.Array:
    """W(theta) of eq. 1: 0 below 0.5, linear from 0 at 0.5 to 1 at 1."""
    return jnp.clip((theta - 0.5) / 0.5, 0.0, 1.0)


def update_performance(performance: jax.Array, w: jax.Array, params: WindFarmParams) -> jax.Array:
    """Eq. 2-4, applied `performance_updates_per_step` times: P <- P - c*P + a*W (closed form)."""
    c, a = params.drag_coefficient, params.motor_acceleration
    n = params.performance_updates_per_step.astype(jnp.float32)
    fixed_point = a * w / c
    return fixed_point + (1.0 - c) ** n * (performance - fixed_point)


def generate_energy_reward(performance: jax.Array) -> jax.Array:
    """Eq. 4: the per-step reward is the performance state clipped to [0, 1]."""
    return jnp.clip(performance, 0.0, 1.0)


def avoid_damage_reward(facing_angle: jax.Array, wind_angle: jax.Array) -> jax.Array:
    """Eq. 5: alpha/90 for alpha <= 90 deg, 2 - alpha/90 above; alpha = angle(wind, facing) in [0, 180]."""
    alpha = misalignment(facing_angle, wind_angle + jnp.pi)  # angle to the wind's own direction
    ratio = alpha / (jnp.pi / 2)
    return jnp.where(ratio <= 1.0, ratio, 2.0 - ratio)
