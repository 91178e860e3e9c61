"""Bad input gets a clear error at trace time, never a silent broadcast."""

import jax
import jax.numpy as jnp
import pytest

import hivex_jax


@pytest.fixture(scope="module")
def wfc():
    env, params = hivex_jax.make("WindFarmControl-v0")
    _, state = jax.jit(env.reset)(hivex_jax.world_key(0), params)
    return env, params, state


def _step(env, params, state, action):
    return jax.jit(env.step)(jax.random.PRNGKey(0), state, action, params)


def test_wrong_action_shape(wfc):
    env, params, state = wfc
    bad = {"discrete": jnp.zeros((8,), jnp.int32)}
    with pytest.raises(ValueError, match=r"action\['discrete'\] must have shape \(8, 1\)"):
        _step(env, params, state, bad)
    batched = {"discrete": jnp.zeros((4, 8, 1), jnp.int32)}
    with pytest.raises(ValueError, match="jax.vmap"):
        _step(env, params, state, batched)


def test_wrong_action_dtype(wfc):
    env, params, state = wfc
    with pytest.raises(TypeError, match="integer array"):
        _step(env, params, state, {"discrete": jnp.zeros((8, 1), jnp.float32)})


def test_bare_array_and_unknown_keys(wfc):
    env, params, state = wfc
    with pytest.raises(TypeError, match="action must be a dict"):
        _step(env, params, state, jnp.zeros((8, 1), jnp.int32))
    with pytest.raises(ValueError, match="unknown action keys"):
        _step(env, params, state, {"discrete": jnp.zeros((8, 1), jnp.int32), "yaw": 1})


def test_wrong_params_type(wfc):
    env, params, state = wfc
    with pytest.raises(TypeError, match="params must be WindFarmParams"):
        env.reset(hivex_jax.world_key(0), {"task": 0})


def test_out_of_range_discrete_is_clipped(wfc):
    env, params, state = wfc
    big = _step(env, params, state, {"discrete": jnp.full((8, 1), 7, jnp.int32)})
    right = _step(env, params, state, {"discrete": jnp.full((8, 1), 2, jnp.int32)})
    assert jnp.allclose(big[1].facing_angle, right[1].facing_angle)
