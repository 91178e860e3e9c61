"""Wildfire Resource Management rewards (reference §2.2, paper eq. 6-12).

Tower performance p from the closest fire's distance and approach (broken power law); the self term
(eq. 9, form switchable), the neighbourhood term (eq. 10) and the collective term (eq. 11-12).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wildfire_resource_management.params import (
    CLOSENESS_NORMALISED,
    COLLECTIVE_ONE_MINUS_RMSE,
    SELF_REWARD_RECEIVED,
    SELF_REWARD_SHARE,
    WildfireParams,
)


def normalised_distance(distance: jax.Array, params: WildfireParams) -> jax.Array:
    """d1n in [0, 1]: min(d, d_thresh) / d_thresh, or 1 minus that (`distance_mode`)."""
    dn = jnp.clip(distance / params.distance_threshold, 0.0, 1.0)
    return jnp.where(params.distance_mode == CLOSENESS_NORMALISED, 1.0 - dn, dn)


def tower_performance(previous_distance: jax.Array, distance: jax.Array, params: WildfireParams) -> jax.Array:
    """Eq. 6-8, f32[A]: d' = 0.5 -/+ 0.5 d1n (fire approaching: d1 < d0 / not), then the broken power
    law p = (1 + (1000 d' / s)^a)^(-1/2): p = 1 at d' = 0, 0.707 at d' = s/1000, ~0.038 at d' = 1."""
    dn = normalised_distance(distance, params)
    approaching = distance < previous_distance
    d_prime = jnp.where(approaching, 0.5 - 0.5 * dn, 0.5 + 0.5 * dn)
    x = params.performance_distance_scale * d_prime / params.performance_scale
    return jax.lax.rsqrt(1.0 + x**params.performance_exponent)


def self_reward(
    performance: jax.Array, own: jax.Array, received: jax.Array, params: WildfireParams
) -> jax.Array:
    """Eq. 9 R(p, r_distributed, r_supporting), f32[A]; the body is NOT FOUND, so `self_reward_mode`
    picks p * r_self (default), p * r_self / r_distributed, or p * r_distributed."""
    share = jnp.where(received > 1e-6, own / jnp.maximum(received, 1e-6), 0.0)
    weight = jnp.where(
        params.self_reward_mode == SELF_REWARD_SHARE,
        share,
        jnp.where(params.self_reward_mode == SELF_REWARD_RECEIVED, received, own),
    )
    return performance * weight


def neighbourhood_reward(
    performance: jax.Array, neighbours: jax.Array, sent: jax.Array, params: WildfireParams
) -> jax.Array:
    """Eq. 10, f32[A]: sum over the 3 neighbours j of p_j * r_{i->j} * neighbour_resource_scale.

    neighbours i32[A, 3]; sent f32[A, 3] resources tower i hands to each neighbour.
    """
    return params.neighbour_resource_scale * jnp.sum(performance[neighbours] * sent, axis=-1)


def collective_reward(performance: jax.Array, params: WildfireParams) -> jax.Array:
    """Eq. 11-12, f32[]: sqrt(mean(p^2)) over all towers (default), or 1 - sqrt(mean((1 - p)^2))."""
    rms = jnp.sqrt(jnp.mean(performance**2))
    rmse = jnp.sqrt(jnp.mean((1.0 - performance) ** 2))
    return jnp.where(params.collective_mode == COLLECTIVE_ONE_MINUS_RMSE, 1.0 - rmse, rms)
