"""AerialWildfireSuppression-v0 picture and global state."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from aws_helpers import ENV, PARAMS, RESET, G

import hivex_jax
from hivex_jax.core.check import _jitted


def test_render_and_global_state():
    _, s = RESET(hivex_jax.world_key(0), PARAMS)
    frame = np.asarray(_jitted(ENV).render(s, PARAMS))
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8 and frame.std() > 10
    gs = _jitted(ENV).global_state(s, PARAMS)
    assert gs.shape == (3 * 9 + 11 + 2 * (G // 4) ** 2,) and bool(jnp.all(jnp.isfinite(gs)))
