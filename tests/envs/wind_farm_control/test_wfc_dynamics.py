import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.wind_farm_control import generator


@pytest.fixture(scope="module")
def env_params():
    return hivex_jax.make("WindFarmControl-v0")


def test_rotation_actions(env_params):
    env, params = env_params
    _, state = env.reset(hivex_jax.world_key(1), params)
    actions = jnp.asarray([[0], [1], [2], [1], [2], [0], [1], [2]], jnp.int32)
    _, new, *_ = jax.jit(env.step)(jax.random.PRNGKey(0), state, {"discrete": actions}, params)
    delta = np.asarray(jnp.angle(jnp.exp(1j * (new.facing_angle - state.facing_angle))))
    step = math.radians(2.4)
    expected = np.asarray([0, step, -step, step, -step, 0, step, -step])
    assert np.allclose(delta, expected, atol=1e-5)


def test_episode_is_truncated_at_max_steps_never_terminated(env_params):
    env, params = env_params
    params = params.replace(max_steps=jnp.int32(6))
    _, state = env.reset(hivex_jax.world_key(1), params)
    step = jax.jit(env.step)
    noop = env.action_space().noop()
    for t in range(1, 7):
        _, state, _, term, trunc, info = step(jax.random.PRNGKey(t), state, noop, params)
        assert not bool(term.any())
        assert bool(trunc.all()) == (t == 6)
        assert bool(info["done"]) == (t == 6)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 12, 16])
def test_layouts_are_distinct_and_inside_the_farm(n):
    table = generator.pattern_table(n)
    for pattern in range(8):
        pts = table[pattern]
        if n > 1:
            d = np.linalg.norm(pts[:, None] - pts[None], axis=-1) + np.eye(n) * 99
            assert d.min() > 0.5, f"pattern {pattern}: turbines overlap"
        assert np.abs(pts).max() * 100.0 < 1000.0  # inside the default farm at 100 m spacing


def test_patterns_give_different_layouts(env_params):
    env, params = env_params
    reset = jax.jit(env.reset)
    layouts = [
        reset(hivex_jax.world_key(0), env.variant_params(params, level=p))[1].positions for p in range(9)
    ]
    for i in range(9):
        for j in range(i + 1, 9):
            assert not np.allclose(layouts[i], layouts[j]), (i, j)


def test_wind_varies_in_space_and_time(env_params):
    env, params = env_params
    params = env.variant_params(params, level=8)  # random layout: turbines far apart
    _, state = env.reset(hivex_jax.world_key(4), params)
    w0 = np.asarray(state.local_wind_angle)
    assert np.ptp(w0) > math.radians(2)  # turbines see different local wind
    step = jax.jit(env.step)
    noop = env.action_space().noop()
    for t in range(300):
        _, state, *_ = step(jax.random.PRNGKey(t), state, noop, params)
    w1 = np.asarray(state.local_wind_angle)
    assert np.abs(w1 - w0).max() > math.radians(2)  # and it changes over time


def test_render_is_an_image_that_changes(env_params):
    env, params = env_params
    _, s0 = env.reset(hivex_jax.world_key(0), params)
    _, s1 = env.reset(hivex_jax.world_key(1), params)
    render = jax.jit(env.render)
    f0, f1 = render(s0, params), render(s1, params)
    assert f0.shape == (128, 128, 3) and f0.dtype == jnp.uint8
    assert int(jnp.abs(f0.astype(int) - f1.astype(int)).sum()) > 0
