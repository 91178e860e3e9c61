"""Conformance (check_env) for every task and the agent counts, the registered default, extras."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import OceanPlasticCollection


@pytest.fixture(scope="module")
def registered():
    return hivex_jax.make("OceanPlasticCollection-v0")


def test_check_env_registered_default_main_task(registered):
    env, params = registered
    hivex_jax.check_env(env, params, eager=False)  # the mixed-task batch included


@pytest.mark.slow  # op-by-op eager execution, ~40% of the full check: the jitted checks above stay default
def test_check_env_registered_default_eager_agrees_with_jit(registered):
    env, params = registered
    hivex_jax.check_env(env, params, mixed=False)


@pytest.mark.parametrize("task", [1, 2, 3])
def test_check_env_other_tasks(registered, task):
    env, params = registered
    hivex_jax.check_env(env, env.variant_params(params, task=task), eager=False, mixed=False)


@pytest.mark.slow  # a second env object: compiles everything again (~30 s); HIVEX only ran 3 vessels
def test_check_env_single_vessel():
    env, params = hivex_jax.make("OceanPlasticCollection-v0", num_agents=1, num_pebbles=64)
    hivex_jax.check_env(env, params, eager=False, mixed=False)


def test_registered_default_stacks_two_frames(registered):
    env, params = registered
    space = env.observation_space(params)
    assert space["vector"].shape == (3, 12) and space["visual"].shape == (3, 25, 25, 2)
    assert space["visual"].dtype == jnp.uint8
    assert env.action_space(params).discrete_branches == (2, 3)
    assert env.action_space(params).continuous_dims == 0
    assert env.observation_layout()["position"] == slice(6, 8)  # newest frame last
    assert int(params.max_steps) == 1000
    assert env.unwrapped.physics_substeps == 5


def test_static_options_and_their_errors():
    env, _ = hivex_jax.make("OceanPlasticCollection-v0", num_agents=6, num_pebbles=128)
    assert env.num_agents == 6 and env.unwrapped.num_pebbles == 128
    with pytest.raises(ValueError, match="num_agents"):
        OceanPlasticCollection(num_agents=0)
    with pytest.raises(ValueError, match="num_pebbles"):
        OceanPlasticCollection(num_pebbles=0)
    with pytest.raises(ValueError, match="level"):
        OceanPlasticCollection().variant_params(OceanPlasticCollection().default_params(), level=1)


def test_global_state_and_render(opc):
    state = opc.base_state
    gs = jax.jit(opc.env.global_state)(state, opc.params)
    assert gs.shape == (8 * 3 + 1 + 64,) and gs.dtype == jnp.float32
    # the 8 x 8 pebble histogram holds every pebble
    assert float(jnp.sum(jnp.expm1(gs[-64:]))) == pytest.approx(opc.env.num_pebbles, rel=1e-4)
    frame = np.asarray(jax.jit(opc.env.render)(state, opc.params))
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    # vessel 0 is drawn in orange at its position (look just astern of the black heading tick)
    half = 200.0 * 1.06
    x, z = np.asarray(state.positions[0]) - 2.5 * np.asarray(state.forward[0])
    col = int((x / half + 1) * 128)
    row = int((1 - z / half) * 128)
    r, g, b = frame[row, col].astype(int)
    assert r > 200 and b < 100
