"""Bad input gets a clear error at trace time, never a silent broadcast."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS


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
    with pytest.raises(TypeError, match=r"action must be a dict .*; got an array of shape \(8, 1\)"):
        _step(env, params, state, jnp.zeros((8, 1), jnp.int32))
    with pytest.raises(TypeError, match="action must be a dict .*; got list"):
        _step(env, params, state, [[1]] * 8)
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


# ------------------------------------------------------------------ hostile actions
def test_nan_continuous_becomes_zero_then_everything_is_clipped():
    env, _ = hivex_jax.make("DroneBasedReforestation-v0")  # 3 agents, 3 continuous dims, 1 branch of 2
    nan, inf = float("nan"), float("inf")
    continuous = jnp.asarray([[nan, inf, -inf], [1e30, -1e30, 2.0], [-0.25, 1.0, -1.0]])
    discrete = jnp.asarray([[-5], [49], [1]], jnp.int32)
    out = env.validate_action({"continuous": continuous, "discrete": discrete})
    expected = [[0.0, 1.0, -1.0], [1.0, -1.0, 1.0], [-0.25, 1.0, -1.0]]  # +-inf clip like 1e30
    assert out["continuous"].dtype == jnp.float32
    assert out["continuous"].tolist() == expected
    assert out["discrete"].tolist() == [[0], [1], [1]]  # out of range -> nearest valid choice


def test_jaxmarl_env_uses_the_same_action_rule():
    pytest.importorskip("jaxmarl")
    env, _ = hivex_jax.make("jaxmarl/MPE_simple_spread_v3", action_type="Continuous")
    c = jnp.full((env.num_agents, env.continuous_dims), jnp.nan).at[:, 0].set(jnp.inf).at[:, 1].set(5.0)
    out = env.validate_action({"continuous": c})["continuous"]
    assert out[:, 0].tolist() == [1.0] * env.num_agents and out[:, 1].tolist() == [1.0] * env.num_agents
    assert out[:, 2:].tolist() == [[0.0] * (env.continuous_dims - 2)] * env.num_agents  # NaN -> 0
    with pytest.raises(ValueError, match=r"max_steps = 0 is outside its bounds \[1, 1e\+06\]"):
        hivex_jax.make("jaxmarl/MPE_simple_spread_v3", max_steps=0)


# ------------------------------------------------------------------ parameter bounds
def test_make_rejects_every_out_of_bounds_field_naming_value_and_bounds():
    with pytest.raises(ValueError, match=r"drag_coefficient = 0.0 is outside its bounds \[0.001, 1\]"):
        hivex_jax.make("WindFarmControl-v0", drag_coefficient=0.0)
    with pytest.raises(ValueError, match=r"max_steps = 0 is outside its bounds"):
        hivex_jax.make("OceanPlasticCollection-v0", max_steps=0)
    with pytest.raises(ValueError, match=r"spread_rate = nan is outside its bounds \[0, 1\]"):
        hivex_jax.make("WildfireResourceManagement-v0", spread_rate=float("nan"))
    # a bound that names a static option follows it
    with pytest.raises(ValueError, match=r"forest_patches = 9 is outside its bounds \[0, 8\]"):
        hivex_jax.make("DroneBasedReforestation-v0", max_forest_patches=8, forest_patches=9)
    env, params = hivex_jax.make("DroneBasedReforestation-v0", max_forest_patches=8, forest_patches=8)
    assert int(params.forest_patches) == 8


def test_validate_params_checks_replaced_and_batched_params_elementwise():
    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    assert env.validate_params(params) is params
    with pytest.raises(ValueError, match=r"water_girdle_width = 400.0 is outside its bounds \[150, 300\]"):
        env.validate_params(params.replace(water_girdle_width=jnp.float32(400.0)))
    weights = params.task_weights.at[2, 3].set(5000.0)  # one bad element of an array field
    with pytest.raises(ValueError, match=r"task_weights = \[5000.0\]"):
        env.validate_params(params.replace(task_weights=weights))
    batch = hivex_jax.stack_params([params, params.replace(num_ignitions=jnp.int32(4))])
    with pytest.raises(ValueError, match=r"num_ignitions = \[4\] is outside its bounds \[1, 3\]"):
        env.validate_params(batch)


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_defaults_lie_inside_their_bounds_and_clamping_leaves_them_bit_identical(env_id):
    env, params = hivex_jax.make(env_id)
    env.validate_params(params)
    for t in env.task_ids:  # every task's defaults too
        env.validate_params(env.variant_params(params, task=t))
    clamped = env.clamp_params(params)
    for name in env.param_bounds:  # concrete values inside their bounds: the very same constants
        assert getattr(clamped, name) is getattr(params, name), name
    traced = jax.jit(env.clamp_params)(params)  # traced: a clip that returns the same bits
    for name in env.param_bounds:
        a, b = np.asarray(getattr(params, name)), np.asarray(getattr(traced, name))
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


def test_traced_params_beyond_bounds_are_clamped_to_them(wfc):
    env, params, state = wfc
    at_bound = params.replace(drag_coefficient=jnp.float32(1e-3), motor_acceleration=jnp.float32(0.0))
    beyond = params.replace(drag_coefficient=jnp.float32(-5.0), motor_acceleration=jnp.float32(jnp.nan))
    action = {"discrete": jnp.full((8, 1), 2, jnp.int32)}
    out_at = _step(env, at_bound, state, action)
    out_beyond = _step(env, beyond, state, action)
    for x, y in zip(jax.tree.leaves(out_at), jax.tree.leaves(out_beyond), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    default = _step(env, params, state, action)  # and the clamp really changed something
    assert not np.array_equal(default[1].performance, out_at[1].performance)


def test_debug_checks_turn_bounds_and_hostile_actions_into_checkify_errors(wfc, monkeypatch):
    env, params, state = wfc
    good = {"discrete": jnp.full((8, 1), 1, jnp.int32)}
    bad_action = {"discrete": jnp.full((8, 1), 7, jnp.int32)}
    bad_params = params.replace(drag_coefficient=jnp.float32(-5.0))
    key = jax.random.PRNGKey(0)
    # fresh functions: the switch is read at trace time, and jit caches traces per function
    with hivex_jax.debug_checks():
        checked_step = checkify.checkify(jax.jit(lambda *a: env.step(*a)))
        assert checked_step(key, state, good, params)[0].get() is None
        message = checked_step(key, state, good, bad_params)[0].get()
        assert "drag_coefficient" in message and "outside its bounds [0.001, 1]" in message
        assert "outside [0, branch size)" in checked_step(key, state, bad_action, params)[0].get()
    # traced with the switch off: no checks, the clamp applies silently
    plain = checkify.checkify(jax.jit(lambda *a: env.step(*a)))
    assert plain(key, state, good, bad_params)[0].get() is None
    monkeypatch.setenv("HIVEX_DEBUG_CHECKS", "1")  # the environment variable is the same switch
    from_env = checkify.checkify(jax.jit(lambda *a: env.reset(*a)))
    assert "drag_coefficient" in from_env(key, bad_params)[0].get()
