"""Aerial Wildfire Suppression stress worlds (docs/worlds.md), each a pure function of the world key.

* `fire_at_village`: besides the world's own ignitions, every tree within `VILLAGE_FIRE_MARGIN` m of
  the village's edge is burning at the start: the village is threatened at once.
* `far_side_fire`: besides the world's own ignitions, every tree in the island's northern
  `FAR_SIDE_FRACTION` burns: the far side from the planes' southern spawn (a long first flight).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import StressWorld
from hivex_jax.envs.aerial_wildfire_suppression import generator
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import tree_counts
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, HEALTHY

VILLAGE_FIRE_MARGIN = 100.0
FAR_SIDE_FRACTION = 0.15


def burn(env, state, lit: jax.Array, params):
    """`(obs, state)` of a step-0 `state` with the healthy trees where `lit` bool[G, G] burning."""
    cells = jnp.where(lit & (state.cells == HEALTHY), jnp.uint8(BURNING), state.cells)
    state = state.replace(cells=cells, burning_count=tree_counts(cells)[1])
    return env._observe(state, params, zero_forward=params.forward_zero_at_reset > 0)[0], state


def fire_at_village(env, key: jax.Array, state, params):
    """Trees near the village burning. Returns `(obs, state)`."""
    xs, zs = generator.cell_centres(params, env.grid_size)
    d2 = (xs[None, :] - state.village[0]) ** 2 + (zs[:, None] - state.village[1]) ** 2
    return burn(env, state, d2 <= (params.village_radius + VILLAGE_FIRE_MARGIN) ** 2, params)


def far_side_fire(env, key: jax.Array, state, params):
    """The northern band burning. Returns `(obs, state)`."""
    _, zs = generator.cell_centres(params, env.grid_size)
    half = generator.island_half_extent(params)
    north = zs >= half * (1.0 - 2.0 * FAR_SIDE_FRACTION)
    return burn(env, state, jnp.broadcast_to(north[:, None], state.cells.shape), params)


STRESS_WORLDS = {
    "fire_at_village": StressWorld(
        fire_at_village, f"trees within {VILLAGE_FIRE_MARGIN:g} m of the village's edge burning at the start"
    ),
    "far_side_fire": StressWorld(
        far_side_fire, f"the northern {FAR_SIDE_FRACTION:.0%} of the island burning (planes spawn south)"
    ),
}
