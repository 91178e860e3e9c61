"""The cheaper reset path (`hivex_jax.wrappers.PregeneratedWorldPool`, what `hivex train` uses) gives
exactly the resets of its world seeds for this env, also for the task with random starts."""

from __future__ import annotations

import jax
import numpy as np

import hivex_jax
from hivex_jax.envs.drone_based_reforestation.params import TASK_PICK_UP_SEED
from hivex_jax.wrappers import PregeneratedWorldPool


def same(x: jax.Array, y: jax.Array) -> bool:
    """Integers, booleans and camera bytes exactly; floats to a few ulps (the pool is built under vmap,
    which fuses differently)."""
    x, y = np.asarray(x), np.asarray(y)
    if np.issubdtype(x.dtype, np.floating):
        return np.allclose(x, y, rtol=1e-6, atol=1e-5)
    return np.array_equal(x, y)


def test_pool_resets_are_the_seeds_resets(env, fns):
    # Pick-up Seed at Base draws random starts from the world seed: they must be pooled too
    params = env.variant_params(env.default_params(), task=TASK_PICK_UP_SEED, level=7)
    pool = PregeneratedWorldPool(env, "7:10", params, batch_size=3)
    reset = jax.jit(pool.reset)
    references = [fns.reset(hivex_jax.world_key(s), params) for s in (7, 8, 9)]
    seen = set()
    for k in range(6):
        pooled = reset(jax.random.PRNGKey(k), params)
        matches = [
            i
            for i, ref in enumerate(references)
            if all(same(x, y) for x, y in zip(jax.tree.leaves(pooled), jax.tree.leaves(ref), strict=True))
        ]
        assert len(matches) == 1  # one of the three worlds' resets (obs and whole state)
        seen.add(matches[0])
    assert len(seen) >= 2  # the key picks different worlds
