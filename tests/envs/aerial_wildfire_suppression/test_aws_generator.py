"""AerialWildfireSuppression-v0 worlds: a new episode on the same world (regrown forest) and the
auto-reset that uses it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from aws_helpers import ENV, PARAMS, RESET, STEP, action

import hivex_jax
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, BURNT, HEALTHY, WET


def test_reset_episode_keeps_the_world_and_same_world_autoreset_uses_it():
    from hivex_jax.wrappers import SameWorldAutoReset

    _, s = RESET(hivex_jax.world_key(5), PARAMS)
    for _ in range(3):
        _, s, *_ = STEP(jax.random.PRNGKey(0), s, action(drop=1), PARAMS)
    _, fresh = jax.jit(ENV.reset_episode)(jax.random.PRNGKey(7), s, PARAMS)
    old, new = np.asarray(s.cells), np.asarray(fresh.cells)
    tree = lambda c: np.isin(c, [HEALTHY, BURNING, BURNT, WET])  # noqa: E731
    np.testing.assert_array_equal(tree(old), tree(new))  # same forest
    np.testing.assert_array_equal(old[~tree(old)], new[~tree(new)])  # same lakes, village, bare ground
    assert set(np.unique(new[tree(new)])) == {HEALTHY, BURNING} and int(fresh.burning_count) > 0
    np.testing.assert_array_equal(np.asarray(fresh.slope), np.asarray(s.slope))
    assert int(fresh.step) == 0 and bool(jnp.all(fresh.holding)) and int(fresh.num_trees) == int(s.num_trees)

    wrapped = SameWorldAutoReset(ENV)
    p = PARAMS.replace(max_steps=jnp.int32(2))
    _, ws = jax.jit(wrapped.reset)(hivex_jax.world_key(5), p)  # jitted: an eager AWS reset takes ~15 s
    step = jax.jit(wrapped.step)
    _, ws1, _, _, _, info1 = step(jax.random.PRNGKey(1), ws, action(), p)
    _, ws2, _, _, trunc, info2 = step(jax.random.PRNGKey(2), ws1, action(), p)
    assert not bool(info1["done"]) and bool(info2["done"]) and bool(jnp.all(trunc))
    assert int(ws2.step) == 0  # a new episode ...
    np.testing.assert_array_equal(tree(np.asarray(ws2.cells)), tree(np.asarray(ws.cells)))  # ... same world
