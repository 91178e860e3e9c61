"""The pytree types Ocean Plastic Collection's modules share: the state and its trash map. Their own
module, below everything that reads them (generator, dynamics, render, worlds, env), so no import goes
in a circle."""

from __future__ import annotations

import jax
from flax import struct

from hivex_jax.core.environment import EnvState


@struct.dataclass
class TrashMap:
    """One world's trash population map (drawn at reset, read by respawns and `render`)."""

    hotspot_x: jax.Array  # f32[H], centre x, metres
    hotspot_z: jax.Array  # f32[H], centre z, metres
    hotspot_radii: jax.Array  # f32[H], std of the near-Gaussian offset, metres
    hotspot_weights: jax.Array  # f32[H], probabilities (0 for unused slots)
    hotspot_cumulative: jax.Array  # f32[H]
    background_weights: jax.Array  # f32[L*L], cell probabilities, index = row_z * L + column_x
    background_cumulative: jax.Array  # f32[L*L]


@struct.dataclass
class OceanPlasticState(EnvState):
    """The vessels, the pebbles and the world they were drawn from (the trash map, islands)."""

    positions: jax.Array  # f32[A, 2], metres (x, z)
    velocities: jax.Array  # f32[A, 2], metres per physics sub-step
    forward: jax.Array  # f32[A, 2], unit heading vectors (x, z)
    pebble_x: jax.Array  # f32[N], metres (stored per coordinate: (N, 2) vectorises badly on CPUs)
    pebble_z: jax.Array  # f32[N], metres; collected pebbles sit at PARKED (params.py) when respawn is off
    collected_total: jax.Array  # f32[A], pebbles collected this episode (eq. 14's t_i)
    nearby_reference: jax.Array  # f32[A], ntc_old of eq. 20-22 (or the running max)
    respawn_x: jax.Array  # f32[R], the next R respawn positions (drawn one step ahead, see step_env)
    respawn_z: jax.Array  # f32[R]
    trash_map: TrashMap
    rng_seed: jax.Array  # u32[], hash seed of this world's respawn draws
    # bool[OBSTACLE_GRID, OBSTACLE_GRID] a file world's islands (none generated); None without the option
    obstacles: jax.Array | None
