"""Drone-Based Reforestation reward terms (paper eq. 24-48, reference §2.3), one function per term.

All functions are per drone (leading agent axis) and return the *unweighted* term; the env multiplies by
the task's weight row. Distances are horizontal (x, z) unless named `*_3d`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.drone_based_reforestation.params import FIND_TREE_PAPER_FORMULA, DroneParams


def reforestation_potential(distance_to_trees: jax.Array, params: DroneParams) -> jax.Array:
    """Remap(d, d_otmin, d_otmax -> 1, 0) inside the band [d_otmin, d_otmax], else 0 (eq. 26, 41)."""
    lo, hi = params.drop_min_distance, params.drop_max_distance
    pot = jnp.clip((hi - distance_to_trees) / (hi - lo), 0.0, 1.0)
    return jnp.where((distance_to_trees >= lo) & (distance_to_trees <= hi), pot, 0.0)


def valid_location(
    distance_to_trees: jax.Array, distance_to_new_trees: jax.Array, on_land: jax.Array, params: DroneParams
) -> jax.Array:
    """Eq. 24-25: d_otmin <= d_et <= d_otmax and d_nt >= d_otmin (and not in a lake, designed switch)."""
    lo, hi = params.drop_min_distance, params.drop_max_distance
    land_ok = on_land | (params.water_drop_invalid == 0)
    return (distance_to_trees >= lo) & (distance_to_trees <= hi) & (distance_to_new_trees >= lo) & land_ok


def drop_seed_reward(
    distance_to_trees: jax.Array,
    distance_to_new_trees: jax.Array,
    distance_to_station: jax.Array,
    on_land: jax.Array,
    params: DroneParams,
) -> tuple[jax.Array, jax.Array]:
    """Eq. 24-31 for a drop here: (seed reward r_s in [0, 20], distance reward r_d in [0, 10]).

    r_s = sdrm * Remap(d_et, 2.5, 75 -> 1, 0) if the location is valid; r_d = drm * sdd / e_w (clamped to
    [0, drm]) only when r_s > 0.
    """
    valid = valid_location(distance_to_trees, distance_to_new_trees, on_land, params)
    seed = jnp.where(
        valid, params.seed_reward_multiplier * reforestation_potential(distance_to_trees, params), 0.0
    )
    ratio = jnp.clip(distance_to_station / params.arena_half_extent, 0.0, 1.0)
    distance = jnp.where(seed > 0.0, params.distance_reward_multiplier * ratio, 0.0)
    return seed, distance


def energy_penalties(
    holding_seed: jax.Array, params: DroneParams, substeps: int
) -> tuple[jax.Array, jax.Array]:
    """Eq. 32-33 for one decision: (holding-seed term, no-seed term), each <= 0.

    -1/1000 (seed) or -1/2000 (no seed) per physics step (x substeps per decision) or per decision.
    """
    n = jnp.where(params.energy_penalty_per_substep == 1, float(substeps), 1.0)
    holding = jnp.where(holding_seed, -params.energy_penalty_holding_seed * n, 0.0)
    no_seed = jnp.where(holding_seed, 0.0, -params.energy_penalty_no_seed * n)
    return holding, no_seed


def drop_quality(seed_reward: jax.Array, distance_reward: jax.Array, params: DroneParams) -> jax.Array:
    """r_bm = (r_s + r_d) / (sdrm + drm) in [0, 1]: how good the last drop was (eq. 36)."""
    return (seed_reward + distance_reward) / (
        params.seed_reward_multiplier + params.distance_reward_multiplier
    )


def running_back_reward(
    active: jax.Array,
    quality: jax.Array,
    start_increments: jax.Array,
    best_increments: jax.Array,
    distance_3d: jax.Array,
    params: DroneParams,
) -> tuple[jax.Array, jax.Array]:
    """Eq. 35-38: (reward, new best increment count).

    Distances to the station are counted in increments of s = 2.5 m. Each increment closer than the closest
    so far pays r_p * r_bm / (d_init - d_charge / s), clipped to [0, r_p]; counting stops at the charging
    radius, so a whole return from d_init adds up to r_p * r_bm (r_p = 20). Only new closest approaches
    pay, so hovering back and forth earns nothing.
    """
    charge_increments = params.charge_radius / params.running_back_increment
    # counting stops at the charging radius, so a whole return pays exactly r_p * r_bm
    increments = jnp.maximum(jnp.floor(distance_3d / params.running_back_increment), charge_increments)
    closer = active & (increments < best_increments)
    span = jnp.maximum(start_increments - charge_increments, 1.0)
    budget = params.running_back_budget
    reward = jnp.clip(budget * quality * (best_increments - increments) / span, 0.0, budget)
    return jnp.where(closer, reward, 0.0), jnp.where(closer, increments, best_increments)


def group_up_reward(position: jax.Array, present: jax.Array, params: DroneParams) -> jax.Array:
    """+group_up_reward for each drone whose closest other present drone is closer than 5 m (3-D)."""
    a = position.shape[0]
    diff = position[:, None, :] - position[None, :, :]
    d = jnp.sqrt(jnp.sum(diff * diff, axis=-1))
    others = present[None, :] & ~jnp.eye(a, dtype=bool)
    closest = jnp.min(jnp.where(others, d, jnp.inf), axis=-1)
    return jnp.where(present & (closest < params.group_up_distance), params.group_up_reward, 0.0)


def running_max_delta(value: jax.Array, best: jax.Array, update: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(increase of the running maximum, new maximum) where `update`; the "Delta" terms of eq. 39-46."""
    delta = jnp.where(update, jnp.maximum(value - best, 0.0), 0.0)
    return delta, best + delta


def finds_close_tree(distance_to_trees: jax.Array, params: DroneParams) -> jax.Array:
    """Eq. 47-48 condition: within `find_tree_radius` m (default) or, as printed, d / e_w <= 20."""
    normalised = distance_to_trees / params.arena_half_extent <= params.find_tree_radius
    metres = distance_to_trees <= params.find_tree_radius
    return jnp.where(params.find_tree_mode == FIND_TREE_PAPER_FORMULA, normalised, metres)
