"""Aerial Wildfire Suppression worlds: the island's cells (forest, bare ground, lakes, village), the
terrain slope per block and the village centre.

`hivex_jax.worlds` reads and writes these fields; `apply_world` starts the key's episode on them
(ignition, weather and plane spawn drawn from the key exactly as `reset` draws them, after the
world's own draws), as `reset_episode` does on a finished world.
"""

from __future__ import annotations

import jax

from hivex_jax.core.world_spec import ARRAY, CODES, FieldSpec
from hivex_jax.envs.aerial_wildfire_suppression import generator
from hivex_jax.envs.aerial_wildfire_suppression.params import BARE, HEALTHY, LAKE, VILLAGE

FIELDS = (
    FieldSpec(
        "cells",
        CODES,
        codes=(BARE, HEALTHY, LAKE, VILLAGE),
        doc="u8[G, G] island cells before ignition: 0 bare, 1 tree, 5 lake, 6 village (pixel value = code)",
    ),
    FieldSpec(
        "slope", ARRAY, (-10.0, 10.0), doc="f32[B, B, 2] terrain gradient (dh/dx, dh/dz) per 4 x 4 block"
    ),
    FieldSpec("village", ARRAY, (-10_000.0, 10_000.0), doc="f32[2] village centre (x, z), metres"),
)
#: a single image or .npy file is the island's cells
PRIMARY_FIELD = "cells"


def world_fields(state) -> dict[str, jax.Array]:
    """The world of an Aerial Wildfire Suppression state (trees regrown: the forest before ignition)."""
    return {"cells": generator.regrow(state.cells), "slope": state.slope, "village": state.village}


def episode_draws(env, key: jax.Array) -> generator.WorldDraws:
    """The key's draws positioned where `reset` starts the episode (after the world's draws)."""
    total = generator.draws_needed(env.num_agents, env.blocks)
    draws = generator.WorldDraws(key, total)
    draws.used = total - generator.episode_draws_needed(env.num_agents)
    return draws


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: the key's episode (ignition, weather, planes) on `world`."""
    return env._new_episode(episode_draws(env, key), world["cells"], world["slope"], world["village"], params)
