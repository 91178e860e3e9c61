"""Ocean Plastic Collection reward terms (paper eq. 13-23), unweighted, f32[A] each."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.ocean_plastic_collection.params import (
    LOWEST_OVER_ALL_VESSELS,
    NEARBY_RUNNING_MAX,
    OceanPlasticParams,
)


def collect_trash(collected: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 13: +1 (collect_trash_reward) per pebble collected this step; `collected` f32[A]."""
    return collected * params.collect_trash_reward


def global_lowest_trash_collected(
    collected_total: jax.Array, active: jax.Array, params: OceanPlasticParams
) -> jax.Array:
    """Eq. 14-15: 0.01 x the lowest cumulative collected count f32[A], paid to every vessel.

    `active` bool[A]: vessels in the episode this decision. By default the minimum runs over them only
    (HIVEX restarts a vessel that is out, so a lost vessel's count never freezes the minimum);
    `lowest_collected_mode` = 1 takes it over every vessel. 0 when no vessel is active.
    """
    over_all = params.lowest_collected_mode == LOWEST_OVER_ALL_VESSELS
    counted = active | over_all
    lowest = jnp.min(jnp.where(counted, collected_total, jnp.inf))
    lowest = jnp.where(jnp.any(counted), lowest, 0.0)
    return jnp.full_like(collected_total, lowest * params.lowest_collected_factor)


def crossed_border(crossed: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 16: -100 on the step the vessel leaves [-e_h, e_h]^2."""
    return crossed.astype(jnp.float32) * params.crossed_border_reward


def collided_with_other_vessel(collided: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 17: -100 on the step the vessel touches another vessel."""
    return collided.astype(jnp.float32) * params.vessel_collision_reward


def close_to_other_vessel(neighbour_distance: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 18 / text: close_vessel_reward (+1 text, +10 eq.) while the nearest vessel is within 10."""
    return jnp.where(neighbour_distance <= params.close_vessel_distance, params.close_vessel_reward, 0.0)


def nearby_trash_count(ahead: jax.Array, starboard: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 19: f32[A], pebbles closer than d_threshold (25) to the vessel; offsets f32[A, N] (any frame)."""
    d2 = ahead * ahead + starboard * starboard
    near = d2 < params.nearby_trash_distance**2
    return jnp.sum(near, axis=-1).astype(jnp.float32)


def nearby_trash_count_delta(
    count: jax.Array, reference: jax.Array, params: OceanPlasticParams
) -> tuple[jax.Array, jax.Array]:
    """Eq. 20-22: (max(0, count - reference), new reference).

    The reference is the previous step's count (eq. 22, default) or, with `nearby_trash_mode` = 1,
    the highest count so far (the prose; reference contradiction 3).
    """
    reward = jnp.maximum(count - reference, 0.0)
    new_reference = jnp.where(
        params.nearby_trash_mode == NEARBY_RUNNING_MAX, jnp.maximum(reference, count), count
    )
    return reward, new_reference


def collide_with_trash(touched: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """Eq. 23: trash_collision_reward (-1 text, -100 eq.) on a step the vessel touches any pebble."""
    return touched.astype(jnp.float32) * params.trash_collision_reward
