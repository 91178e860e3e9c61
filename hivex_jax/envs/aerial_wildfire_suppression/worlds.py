"""Aerial Wildfire Suppression worlds: the island's cells (forest, bare ground, lakes, village), the
terrain slope per block and the village centre.

`hivex_jax.worlds` reads and writes these fields; `apply_world` starts the key's episode on them
(ignition, weather and plane spawn drawn from the key exactly as `reset` draws them, after the
world's own draws), as `reset_episode` does on a finished world.

A terrain height map comes in as the input field `heights` (f32[G, G] ground height per island cell,
metres; an image's grey 0..1 is 0..200 m, the relief of terrain level 10): import converts it to the
world field `slope`, each 4 x 4-cell block's least-squares plane gradient over its 16 cell centres.
The generator's slope is the mean gradient of its bilinear terrain over the block, and a bilinear
patch's least-squares plane over a symmetric grid has exactly that gradient, so the generated cell
heights give back the generated slope (tested). `heights` sets only the slope (the fire's uphill
spread, the hill shading): lakes, trees and the village are the `cells` field. Export writes `slope`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.world_spec import ARRAY, CODES, GRID, FieldSpec
from hivex_jax.envs.aerial_wildfire_suppression import generator
from hivex_jax.envs.aerial_wildfire_suppression.params import BARE, HEALTHY, LAKE, TERRAIN_BLOCK, VILLAGE

#: the slope field's bounds (rise per metre), also the check on a converted height map
SLOPE_RANGE = (-10.0, 10.0)
FIELDS = (
    FieldSpec(
        "cells",
        CODES,
        codes=(BARE, HEALTHY, LAKE, VILLAGE),
        doc="u8[G, G] island cells before ignition: 0 bare, 1 tree, 5 lake, 6 village (pixel value = code)",
    ),
    FieldSpec(
        "slope", ARRAY, SLOPE_RANGE, doc="f32[B, B, 2] terrain gradient (dh/dx, dh/dz) per 4 x 4 block"
    ),
    FieldSpec("village", ARRAY, (-10_000.0, 10_000.0), doc="f32[2] village centre (x, z), metres"),
)
#: a single image or .npy file is the island's cells
PRIMARY_FIELD = "cells"
#: what the world seed changes in an episode on a file world that gives every field (docs/worlds.md)
SEED_ON_FILE_WORLD = (
    "the ignition, the weather and the planes' spawn at reset, and the fire's spread and "
    "burn-out every step (the step key)"
)
#: True: two seeds on such a file world play the same episode under the same actions, so an
#: evaluation plays each such file world once (tests/eval/test_eval_distinct_episodes.py)
FILE_WORLD_SEED_FREE = False
#: import-only: a height map, converted to `slope` (never exported)
INPUT_FIELDS = (
    FieldSpec(
        "heights",
        GRID,
        (-1000.0, 10_000.0),
        doc="f32[G, G] ground height per island cell, metres (import only: converted to `slope`); an "
        "image's grey 0..1 maps to 0..200 m",
        image_range=(0.0, 200.0),
    ),
)


def input_shapes(env, params) -> dict[str, jax.ShapeDtypeStruct]:
    """Shapes of the input fields: `heights` f32[G, G]."""
    return {"heights": jax.ShapeDtypeStruct((env.grid_size, env.grid_size), jnp.float32)}


def slope_from_heights(heights: np.ndarray, cell_size: float) -> np.ndarray:
    """f32[B, B, 2] (dh/dx, dh/dz) per 4 x 4-cell block of cell heights f[G, G] (row 0 north): the
    least-squares plane's gradient over the block's cell centres, `cell_size` metres apart."""
    g = heights.shape[0]
    b = g // TERRAIN_BLOCK
    blocks = np.asarray(heights, np.float64).reshape(b, TERRAIN_BLOCK, b, TERRAIN_BLOCK)
    offset = np.arange(TERRAIN_BLOCK) - (TERRAIN_BLOCK - 1) / 2.0  # cell centres from the block centre
    norm = TERRAIN_BLOCK * np.sum(offset**2) * cell_size  # sum of squared offsets, metres
    dx = np.einsum("irjc,c->ij", blocks, offset) / norm
    dz = -np.einsum("irjc,r->ij", blocks, offset) / norm  # rows grow towards -z
    return np.stack([dx, dz], axis=-1).astype(np.float32)


def complete_world(env, params, world: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """A loaded world with `heights` converted to `slope` (one of the two may be given, not both)."""
    if "heights" not in world:
        return world
    if "slope" in world:
        raise UserError(
            f"{where}: gives both 'heights' and 'slope'; expected one terrain (heights is converted to slope)"
        )
    world = dict(world)
    cell = float(generator.cell_size(params, env.grid_size))
    world["slope"] = slope = slope_from_heights(world.pop("heights"), cell)
    lo, hi = SLOPE_RANGE
    if slope.min() < lo or slope.max() > hi:
        raise UserError(
            f"{where}: heights give slopes in [{slope.min():.3g}, {slope.max():.3g}] (rise per metre); "
            f"expected within [{lo:g}, {hi:g}]"
        )
    return world


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
