"""The scripted allocation beats the random policy on held-out worlds and follows the task weights."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.wildfire_resource_management import scripted_policy


def _episode_return(fns, params, world, policy, steps=100):
    obs, state = fns.reset(hivex_jax.world_key(world), params)
    total = np.zeros(9)
    for t in range(steps):
        obs, state, reward, _, _, info = fns.step(jax.random.PRNGKey(t), state, policy(obs, t), params)
        total += np.asarray(reward)
        if bool(info["done"]):
            break
    return total.mean(), state


def test_heuristic_beats_random_on_held_out_worlds(env, fns, params):
    policy = jax.jit(scripted_policy)
    space = env.action_space(params)
    p = env.variant_params(params, task=0, level=3)
    for world in (6000, 6001):
        heuristic, state = _episode_return(fns, p, world, lambda obs, t: policy(obs, p))
        rand, _ = _episode_return(
            fns, p, world, lambda obs, t, w=world: space.sample(jax.random.PRNGKey(w + t))
        )
        assert heuristic > 1.15 * rand  # same world, same fire: only the allocation differs
        # the main task pays neighbours x3 per unit: the whole budget goes to the neighbours
        np.testing.assert_allclose(state.allocation[:, 0], 0.0, atol=1e-6)
        np.testing.assert_allclose(state.allocation.sum(-1), 1.0, atol=1e-5)


def test_heuristic_follows_the_task_weights(params):
    obs = {"vector": jnp.zeros((9, 14))}
    keep_all = scripted_policy(obs, params.replace(task=jnp.int32(1)))["discrete"]
    distribute_all = scripted_policy(obs, params.replace(task=jnp.int32(2)))["discrete"]
    np.testing.assert_array_equal(keep_all[0], [1, 2, 2, 2])  # add to self, remove from neighbours
    np.testing.assert_array_equal(distribute_all[0], [2, 1, 1, 1])
