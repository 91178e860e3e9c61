"""Shared by the AerialWildfireSuppression-v0 tests: the default env, its compiled functions (one
compilation serves every test file of this folder) and scene-building helpers."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.core.check import _jitted
from hivex_jax.envs.aerial_wildfire_suppression import AerialWildfireSuppression, scripted_policy
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_size
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, HEALTHY

ENV = AerialWildfireSuppression()
PARAMS = ENV.default_params()
G = ENV.grid_size
# The conformance checker's compiled functions: one compilation serves every test of this env.
RESET = _jitted(ENV).reset
STEP = _jitted(ENV).step
POLICY = jax.jit(scripted_policy)
SAMPLE = jax.jit(ENV.action_space(PARAMS).sample)
K = len(ENV.reward_term_names)


def action(steer=0.0, drop=0, a=3):
    return {
        "continuous": jnp.full((a, 1), steer, jnp.float32),
        "discrete": jnp.full((a, 1), drop, jnp.int32),
    }


@functools.lru_cache(maxsize=1)
def base_state():
    """World 0 with no fire, planes parked far apart over the island, heading north, empty tanks."""
    _, s = RESET(hivex_jax.world_key(0), PARAMS)
    cells = jnp.where(s.cells == BURNING, jnp.uint8(HEALTHY), s.cells)
    return s.replace(
        cells=cells,
        position=jnp.asarray([[-400.0, 300.0], [0.0, 300.0], [-400.0, -300.0]]),
        heading=jnp.full(3, jnp.pi / 2),
        holding=jnp.zeros(3, bool),
        in_zone=jnp.zeros(3, bool),
        burning_count=jnp.int32(0),
    )


def calm(**kw):
    """Params with no fire spread or burn-out (transitions happen only by hand)."""
    quiet = {"spread_probability": 0.0, "burn_duration": 1e9, "wet_duration": 1e9, **kw}
    return PARAMS.replace(**{k: jnp.float32(v) for k, v in quiet.items()})


def cell_of(x, z, params=PARAMS):
    cs = float(cell_size(params, G))
    half = G * cs / 2
    return int((half - z) // cs), int((x + half) // cs)


def set_cells(state, coords, code):
    cells = np.asarray(state.cells).copy()
    for r, c in coords:
        cells[r, c] = code
    return state.replace(cells=jnp.asarray(cells))
