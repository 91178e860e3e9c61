"""The scripted controller of Wind Farm Control: turn each turbine into the wind it observes."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wind_farm_control.observations import LAYOUT
from hivex_jax.envs.wind_farm_control.params import WindFarmParams


def scripted_policy(obs: dict[str, jax.Array], params: WindFarmParams) -> dict[str, jax.Array]:
    """ "Turn into the wind": rotate towards the wind's source unless within half a rotation step."""
    facing = obs["vector"][:, LAYOUT["facing"]]
    wind = obs["vector"][:, LAYOUT["wind_direction"]]
    target = -wind  # face where the wind comes from
    cross = facing[:, 0] * target[:, 1] - facing[:, 1] * target[:, 0]  # > 0: target is to the left
    dot = jnp.sum(facing * target, axis=-1)
    error = jnp.arctan2(cross, dot)
    half_step = jnp.deg2rad(params.rotation_step_degrees) / 2
    yaw = jnp.where(error > half_step, 1, jnp.where(error < -half_step, 2, 0)).astype(jnp.int32)
    return {
        "continuous": jnp.zeros((facing.shape[0], 0), jnp.float32),
        "discrete": yaw[:, None],
    }
