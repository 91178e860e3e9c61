"""Wildfire Resource Management observation: 7 floats per tower (reference §2.2), stacked x2 outside.

| slice | feature | raw range | normalisation |
|---|---|---|---|
| 0:3 | closest observed fire (x, y, z), y = elevation | [-600, 600] | / island_half_extent; -1 if none seen |
| 3 | local temperature | [0, 42] C | / 42 |
| 4 | local humidity | [0, 100] % | / 100 |
| 5 | local overcast | [0, 100] % | / 100 |
| 6 | total support | [0, 1] | see `support_observation` |
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wildfire_resource_management.params import SUPPORT_RECEIVED, WildfireParams

LAYOUT = {
    "fire_position": slice(0, 3),
    "temperature": slice(3, 4),
    "humidity": slice(4, 5),
    "overcast": slice(5, 6),
    "support": slice(6, 7),
}
VECTOR_SIZE = 7
WEATHER_RANGE = (42.0, 100.0, 100.0)  # HIVEX UI ranges of temperature, humidity, overcast
NO_FIRE_SENTINEL = -1.0


def observe(
    fire_position: jax.Array,
    fire_found: jax.Array,
    weather: jax.Array,
    allocation: jax.Array,
    support: jax.Array,
    max_support: jax.Array,
    params: WildfireParams,
) -> dict[str, jax.Array]:
    """`{"vector": f32[A, 7]}` from the sighted fire f32[A, 3], weather f32[A, 3] (T, RH, overcast),
    the allocation f32[A, 4], received support f32[A] and the most each tower can receive f32[A]."""
    position = jnp.where(fire_found[:, None], fire_position / params.island_half_extent, NO_FIRE_SENTINEL)
    local = jnp.clip(weather, 0.0, jnp.asarray(WEATHER_RANGE)) / jnp.asarray(WEATHER_RANGE)
    handed_out = jnp.sum(allocation, axis=-1) / params.resource_budget
    held = support / (params.resource_budget * max_support)
    own_support = jnp.where(params.support_observation == SUPPORT_RECEIVED, held, handed_out)
    vector = jnp.concatenate([position, local, own_support[:, None]], axis=-1)
    return {"vector": jnp.clip(vector, -1.0, 1.0).astype(jnp.float32)}
