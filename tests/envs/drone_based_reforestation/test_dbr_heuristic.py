"""The scripted policy clearly beats random actions on held-out worlds (main task), scored by the one
evaluator (`hivex_jax.eval`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax import stack_params
from hivex_jax.eval import evaluate_params, find_scripted_policy


@pytest.mark.slow
def test_scripted_beats_random_on_held_out_worlds(env):
    # worlds 6000 and 6001 (HIVEX's test seed) on terrain levels 1 and 10
    params = stack_params([env.variant_params(env.default_params(), task=0, level=lv) for lv in (1, 10)])
    scripted, space = find_scripted_policy(env), env.action_space()

    def make_policy(env_params):
        # policy_params picks the scripted (True) or the random (False) action: both in one program
        def policy(use_scripted, key, obs, state):
            chosen = (scripted(obs, env_params), space.sample(key))
            return jax.tree.map(lambda s, r: jnp.where(use_scripted, s, r), *chosen)

        return policy

    totals = evaluate_params(env, params, make_policy, [6000, 6001], jnp.asarray([True, False]), batched=True)
    returns = np.asarray(totals["return"]).mean(-1)  # [policy, level, world], mean over drones
    assert np.all(returns[0] > returns[1] + 20.0), returns
    stats = {k: np.asarray(v).mean(-1)[0] for k, v in totals["stats"].items()}  # the scripted policy's
    assert np.all(stats["cumulative_tree_drop_reward"] > 20.0), stats["cumulative_tree_drop_reward"]
    assert np.all(stats["tree_drop_count"] >= 2.0), stats["tree_drop_count"]
