"""Scripted "turn into the wind" vs random, over full 4999-decision episodes on held-out worlds."""

import jax
import jax.numpy as jnp

import hivex_jax
from hivex_jax.envs.wind_farm_control import scripted_policy

WORLDS = jnp.arange(6000, 6003, dtype=jnp.uint32)


def _episode_return(env, params, policy):
    def run(seed):
        obs, state = env.reset(hivex_jax.world_key(seed), params)

        def body(carry, k):
            obs, state, total = carry
            action = policy(obs, k)
            obs, state, r, *_ = env.step(k, state, action, params)
            return (obs, state, total + r), None

        keys = jax.random.split(jax.random.PRNGKey(seed), int(params.max_steps))
        (_, _, total), _ = jax.lax.scan(body, (obs, state, jnp.zeros(env.num_agents)), keys)
        return total

    return jax.jit(jax.vmap(run))(WORLDS)  # [worlds, agents]


def test_scripted_controller_reaches_090_and_random_far_less():
    env, params = hivex_jax.make("WindFarmControl-v0")
    space = env.action_space()
    scripted = _episode_return(env, params, lambda o, k: scripted_policy(o, params))
    random = _episode_return(env, params, lambda o, k: space.sample(k))
    top = float(params.max_steps)
    assert float(scripted.mean()) >= 0.9 * top
    assert float(scripted.min()) >= 0.85 * top
    assert float(random.mean()) <= 0.4 * top
