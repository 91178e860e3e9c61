"""Wind Farm Control stress worlds (docs/worlds.md), each a pure function of the world key.

* `aligned_rows`: the turbines stand in one line along the main wind direction, `turbine_spacing`
  apart, centred on the farm: every turbine but the first sits in its upwind neighbour's wake (what
  counts with a wake model; without one, the line still shares one wind direction, so no diversity).
* `storm`: the wind's noise waves move 8x faster and are 3x shorter: gusty, quickly shifting local
  wind that a slow 2.4-degree-per-step yaw cannot follow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import StressWorld
from hivex_jax.envs.wind_farm_control.worlds import apply_world, world_fields

STORM_SPEEDUP = 8.0
STORM_SHORTENING = 3.0


def aligned_rows(env, key: jax.Array, state, params):
    """Turbines in a line along the main wind (full wakes). Returns `(obs, state)`."""
    world = world_fields(state)
    n = state.positions.shape[0]
    offsets = (jnp.arange(n, dtype=jnp.float32) - (n - 1) / 2) * params.turbine_spacing
    direction = jnp.stack([jnp.cos(world["main_wind_angle"]), jnp.sin(world["main_wind_angle"])])
    world["positions"] = offsets[:, None] * direction[None, :]
    return apply_world(env, key, state, world, params)


def storm(env, key: jax.Array, state, params):
    """Fast, short-scale wind shifts. Returns `(obs, state)`."""
    world = world_fields(state)
    world["wind_angular_speeds"] = world["wind_angular_speeds"] * STORM_SPEEDUP
    world["wind_wave_vectors"] = world["wind_wave_vectors"] * STORM_SHORTENING
    return apply_world(env, key, state, world, params)


STRESS_WORLDS = {
    "aligned_rows": StressWorld(aligned_rows, "turbines in one line along the main wind (full wakes)"),
    "storm": StressWorld(storm, f"wind noise {STORM_SPEEDUP:g}x faster, {STORM_SHORTENING:g}x shorter waves"),
}
