"""Aerial Wildfire Suppression reward terms (reference §2.5, paper eq. 49-57), unweighted, per agent.

Each function returns f32[A]; the environment multiplies by the task's weight row (Table 12).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.aerial_wildfire_suppression.params import ALL_TREES_BURNING, AerialWildfireParams


def crossed_border(crashed: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 49: -100 when the plane crosses the border."""
    return params.crash_reward * crashed.astype(jnp.float32)


def pick_up_water(picked_up: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 50 (+1 per pick-up) plus the per-step -1/3000 the README and logs attach to this term."""
    return params.water_pickup_reward * picked_up.astype(jnp.float32) - params.water_pickup_step_penalty


def fire_out(event: jax.Array, num_agents: int, params: AerialWildfireParams) -> jax.Array:
    """Eq. 51: +10 to every plane when no tree on the island burns (once per episode by default)."""
    return jnp.broadcast_to(params.fire_out_reward * event.astype(jnp.float32), (num_agents,))


def too_close_to_village(event: jax.Array, num_agents: int, params: AerialWildfireParams) -> jax.Array:
    """Eq. 52: -50 to every plane when a burning tree is within 150 of the village centre."""
    return jnp.broadcast_to(params.too_close_reward * event.astype(jnp.float32), (num_agents,))


def burning_condition(counts: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Contradiction 11: some tree burns (text, default) or every unburnt tree burns (eq. 53).

    `counts` = `dynamics.tree_counts`: (unburnt, burning)."""
    unburnt, burning = counts[0], counts[1]
    any_burning = burning > 0
    all_burning = any_burning & (unburnt == 0)
    return jnp.where(params.time_step_burning_mode == ALL_TREES_BURNING, all_burning, any_burning)


def time_step_burning(condition: jax.Array, num_agents: int, params: AerialWildfireParams) -> jax.Array:
    """Eq. 53: -0.01 per step while the fire burns."""
    return jnp.broadcast_to(params.time_step_burning_reward * condition.astype(jnp.float32), (num_agents,))


def find_fire(found: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 54: +100 the first time a burning tree is within d_t = 150 of the plane."""
    return params.find_fire_reward * found.astype(jnp.float32)


def find_village(found: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 55: +100 the first time the plane is within 150 of the village."""
    return params.find_village_reward * found.astype(jnp.float32)


def extinguishing_trees(extinguished: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 56: +5 per tree burning at t-1 and wet at t by this plane's water."""
    return params.extinguish_reward * extinguished


def preparing_trees(prepared: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Eq. 57: +1 per tree not burning at t-1 and wet at t by this plane's water."""
    return params.prepare_reward * prepared
