"""The scripted policy clearly beats random actions on held-out worlds (main task)."""

from __future__ import annotations

import jax
import numpy as np

from hivex_jax.core.registry import stack_params, world_key
from hivex_jax.envs.drone_based_reforestation.heuristics import evaluate


def test_scripted_beats_random_on_held_out_worlds(env):
    # worlds 6000 and 6001 (HIVEX's test seed), terrain levels 1 and 10, one batch
    seeds = np.asarray([6000, 6001, 6000, 6001], np.uint32)
    levels = [1, 1, 10, 10]
    params = stack_params([env.variant_params(env.default_params(), task=0, level=lv) for lv in levels])
    out = evaluate(env, params, jax.vmap(world_key)(seeds), jax.random.PRNGKey(0))
    scripted, rand = np.asarray(out["scripted"]["return"]), np.asarray(out["random"]["return"])
    assert np.all(scripted > rand + 20.0), (scripted, rand)
    assert np.all(np.asarray(out["scripted"]["stats"]["cumulative_tree_drop_reward"]) > 20.0)
    assert np.all(np.asarray(out["scripted"]["stats"]["tree_drop_count"]) >= 2.0)
