"""Wind Farm Control observation: 6 floats per turbine (reference §2.1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wind_farm_control.dynamics import unit
from hivex_jax.envs.wind_farm_control.params import WindFarmParams

#: named slices into obs["vector"]
LAYOUT = {"position": slice(0, 2), "facing": slice(2, 4), "wind_direction": slice(4, 6)}
VECTOR_SIZE = 6


def observe(
    positions: jax.Array, facing_angle: jax.Array, wind_angle: jax.Array, params: WindFarmParams
) -> dict[str, jax.Array]:
    """`{"vector": f32[A, 6]}`: position / farm_half_extent (x, z), facing (x, z), local wind (x, z)."""
    vector = jnp.concatenate(
        [positions / params.farm_half_extent, unit(facing_angle), unit(wind_angle)], axis=-1
    )
    return {"vector": vector.astype(jnp.float32)}
