"""API conformance (check_env) for every task and terrain level, and the registered default's layout."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import hivex_jax
from hivex_jax.core.check import check_env
from hivex_jax.envs.wildfire_resource_management import WildfireResourceManagement


def test_check_env_default_and_mixed_batch(env, params):
    # Jit: spaces, determinism, world seeds, one vmapped batch mixing 3 tasks x 10 levels. On the
    # unwrapped env, whose compiled functions the other tests share (the registered FrameStack is
    # checked below and by the wrapper's own tests).
    check_env(env, params, eager=False)


@pytest.mark.slow  # op-by-op eager execution, ~half of the full check: the jitted checks above stay default
def test_check_env_default_eager_agrees_with_jit(env, params):
    check_env(env, params, mixed=False)


@pytest.mark.parametrize("task", [0, 1, 2])
def test_check_env_every_task_and_level(env, params, task):
    for level in range(1, 11):
        check_env(env, env.variant_params(params, task=task, level=level), eager=False, mixed=False)


def test_registered_default_layout(registered):
    env, params = registered
    space = env.observation_space(params)
    assert set(space.keys()) == {"vector"}  # WRM has no visual observation
    assert space["vector"].shape == (9, 14)  # 7 features x 2 stacked frames (HIVEX)
    action_space = env.action_space(params)
    assert action_space.continuous_dims == 0 and action_space.discrete_branches == (3, 3, 3, 3)
    assert int(params.max_steps) == 500
    assert env.observation_layout()["support"] == slice(13, 14)  # newest frame
    assert env.level_field == "terrain_level" and env.level_values == tuple(range(1, 11))
    assert env.task_names == ("Distribute Resources", "Keep All", "Distribute All")
    assert env.reward_term_names == ("self", "neighbourhood", "collective")
    obs, _ = jax.jit(env.reset)(hivex_jax.world_key(0), params)
    assert bool(jnp.all(obs["vector"][:, :7] == 0.0))  # the older frame starts as zeros (ML-Agents)
    assert bool(jnp.any(obs["vector"][:, 7:] != 0.0))  # the newest frame last


def test_static_options():
    with pytest.raises(ValueError, match="fire_resolution"):
        WildfireResourceManagement(fire_resolution=30)
    env, params = hivex_jax.make("WildfireResourceManagement-v0", fire_resolution=16, task=2, terrain_level=7)
    assert env.env.fire_resolution == 16 and int(params.task) == 2 and int(params.terrain_level) == 7
    with pytest.raises(ValueError, match="unknown task"):
        hivex_jax.make("WildfireResourceManagement-v0", task=3)
