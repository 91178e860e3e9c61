"""The JAX wake model's own behaviour (no FLORIS needed): hand-checked cases, invariants, gradients,
and the env behind `wake_model` (wakes.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.wind_farm_control import generator, layouts, wakes
from hivex_jax.envs.wind_farm_control.params import FIRST_REAL_FARM

D = wakes.ROTOR_DIAMETER
K = wakes.WakeConstants()
solve_farm = jax.jit(wakes.solve_farm, static_argnames="model")  # one compile per shape, not per op


def solve(positions, yaw_deg, angle_deg=0.0, speed=8.0, ti=0.06, model="gauss"):
    return solve_farm(
        jnp.asarray(positions, jnp.float32),
        jnp.deg2rad(jnp.asarray(yaw_deg, jnp.float32)),
        jnp.deg2rad(jnp.float32(angle_deg)),
        jnp.float32(speed),
        jnp.float32(ti),
        K,
        model,
    )


def test_lone_turbine_is_the_free_stream_power_curve():
    flow = solve([[0.0, 0.0]], [0.0], speed=9.0)
    # shear 0.12 over +-D/4: cubic mean of 9 * ((90 + dz) / 90) ** 0.12 (hand computed)
    dz = np.asarray([-D / 4, 0.0, D / 4])
    u = 9.0 * ((90.0 + dz) / 90.0) ** 0.12
    expected = np.cbrt(np.mean(u**3))
    assert float(flow.effective_velocity[0]) == pytest.approx(expected, rel=1e-6)
    table = np.interp(expected, wakes.NREL5MW_WIND_SPEED, wakes.NREL5MW_POWER_KW) * 1e3
    assert float(flow.power[0]) == pytest.approx(table, rel=1e-5)
    assert float(wakes.free_stream_power(9.0, K)) == pytest.approx(table, rel=1e-5)


def test_yawed_lone_turbine_loses_cos_power():
    aligned = float(solve([[0.0, 0.0]], [0.0]).effective_velocity[0])
    yawed = solve([[0.0, 0.0]], [30.0])
    speed = aligned * np.cos(np.deg2rad(30.0)) ** (1.88 / 3)
    table = np.interp(speed, wakes.NREL5MW_WIND_SPEED, wakes.NREL5MW_POWER_KW) * 1e3
    assert float(yawed.power[0]) == pytest.approx(table, rel=1e-5)


def test_wake_slows_only_the_downstream_turbine_and_order_does_not_matter():
    row = np.asarray([[0.0, 0.0], [7 * D, 0.0]])
    flow = solve(row, [0.0, 0.0])
    assert float(flow.effective_velocity[1]) < 0.9 * float(flow.effective_velocity[0])
    # wind from the other side: roles swap; listing order is irrelevant
    back = solve(row, [0.0, 0.0], angle_deg=180.0)
    np.testing.assert_allclose(np.asarray(back.effective_velocity)[::-1], flow.effective_velocity, rtol=1e-6)
    swapped = solve(row[::-1], [0.0, 0.0])
    np.testing.assert_allclose(
        np.asarray(swapped.effective_velocity)[::-1], flow.effective_velocity, rtol=1e-6
    )
    # crosswind neighbours far apart do not interact
    side = solve([[0.0, 0.0], [0.0, 7 * D]], [0.0, 0.0])
    assert float(side.effective_velocity[0]) == pytest.approx(float(side.effective_velocity[1]))


def test_rotation_invariance():
    """Rotating the layout and the wind together leaves every turbine's speed unchanged."""
    pos = generator.pattern_table(8)[0] * 5 * D
    base = solve(pos, np.linspace(-20, 20, 8), angle_deg=10.0)
    a = np.deg2rad(37.0)
    rot = np.asarray([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    turned = solve(pos @ rot.T, np.linspace(-20, 20, 8), angle_deg=47.0)
    np.testing.assert_allclose(turned.effective_velocity, base.effective_velocity, rtol=1e-4)


@pytest.mark.parametrize("model", ["gauss", "jensen"])
def test_grad_of_farm_power_wrt_yaw_is_finite_and_matches_finite_differences(model):
    row = jnp.asarray([[0.0, 0.0], [6 * D, 0.3 * D], [12 * D, 0.0]], jnp.float32)

    def farm_power(yaw):
        return jnp.sum(solve_farm(row, yaw, 0.0, 8.0, 0.06, K, model).power) / 1e6

    yaw = jnp.deg2rad(jnp.asarray([15.0, -10.0, 5.0], jnp.float32))
    grad = jax.grad(farm_power)(yaw)
    assert bool(jnp.all(jnp.isfinite(grad)))
    eps = 1e-3
    for i in range(2):  # the last turbine's yaw only costs its own power
        bump = jnp.zeros(3).at[i].set(eps)
        fd = (farm_power(yaw + bump) - farm_power(yaw - bump)) / (2 * eps)
        assert float(grad[i]) == pytest.approx(float(fd), rel=0.05, abs=2e-3)
    assert float(grad[0]) != 0.0  # the front turbine's yaw steers the wake onto / off the others


def test_grad_at_zero_yaw_is_finite():
    row = jnp.asarray([[0.0, 0.0], [6 * D, 0.0]], jnp.float32)
    g = jax.grad(lambda y: jnp.sum(solve_farm(row, y, 0.0, 8.0, 0.06, K).power))(jnp.zeros(2))
    assert bool(jnp.all(jnp.isfinite(g)))


def test_vmap_over_worlds_equals_loop():
    pos = jnp.asarray(generator.pattern_table(4)[1] * 5 * D)
    yaws = jnp.deg2rad(jnp.asarray([[0.0, 10.0, -10.0, 0.0], [20.0, 0.0, 0.0, -5.0]]))
    angles = jnp.deg2rad(jnp.asarray([0.0, 30.0]))
    batch = jax.vmap(lambda y, a: solve_farm(pos, y, a, 8.0, 0.06, K).power)(yaws, angles)
    for i in range(2):
        one = solve_farm(pos, yaws[i], angles[i], 8.0, 0.06, K).power
        np.testing.assert_allclose(batch[i], one, rtol=1e-6)


def test_wake_steering_gains_on_a_row():
    """Yawing the front turbine of an aligned pair gains farm power (the known wake-steering result)."""
    row = [[0.0, 0.0], [5 * D, 0.0]]
    greedy = float(jnp.sum(solve(row, [0.0, 0.0]).power))
    steered = float(jnp.sum(solve(row, [25.0, 0.0]).power))
    assert steered > greedy


def test_bad_inputs_raise_eagerly():
    with pytest.raises(ValueError, match="overlap"):
        wakes.validate_farm([[0.0, 0.0], [50.0, 0.0]], 8.0, "gauss")
    with pytest.raises(ValueError, match="outside"):
        wakes.validate_farm([[0.0, 0.0], [500.0, 0.0]], 30.0, "gauss")
    with pytest.raises(ValueError, match="unknown wake model"):
        wakes.validate_farm([[0.0, 0.0]], 8.0, "curl")
    with pytest.raises(ValueError, match="wake_model"):
        hivex_jax.make("WindFarmControl-v0", wake_model="curl")
    with pytest.raises(ValueError, match="wind_speed"):
        hivex_jax.make("WindFarmControl-v0", wake_model="gauss", wind_speed=40.0)


def test_real_layouts_are_published_geometry():
    hr = layouts.horns_rev_1_utm()
    # published: first turbine (423974, 6151447), last (429492, 6147556), first column ends at 424452
    np.testing.assert_allclose(hr[0], [423974, 6151447], atol=1)
    np.testing.assert_allclose(hr[-1], [429492, 6147556], atol=1)
    np.testing.assert_allclose(hr[7], [424452, 6147556], atol=1)
    for farm, n, spacing in ((0, 80, 7.0), (1, 48, 3.3)):
        unit = layouts.real_farm_in_diameters(farm)
        assert unit.shape == (n, 2)
        gaps = np.linalg.norm(unit[:, None] - unit[None], axis=-1) + np.eye(n) * 1e9
        assert gaps.min() == pytest.approx(spacing, rel=0.05)


@pytest.mark.slow  # 80 turbines: ~40 s of compiling; the 8-turbine env tests cover the same path
def test_env_with_wakes_80_turbines_horns_rev():
    env, params = hivex_jax.make(
        "WindFarmControl-v0", num_agents=80, wake_model="gauss", pattern=FIRST_REAL_FARM
    )
    obs, state = env.reset(hivex_jax.world_key(6000), params)
    wakes.validate_farm(state.positions, params.wind_speed, env.wake_model)  # no overlaps
    action = {"continuous": jnp.zeros((80, 0)), "discrete": jnp.zeros((80, 1), jnp.int32)}
    step = jax.jit(env.step)
    _, state, reward, *_, info = step(jax.random.PRNGKey(0), state, action, params)
    assert reward.shape == (80,) and bool(jnp.all(jnp.isfinite(reward)))
    assert float(jnp.max(jnp.abs(obs["vector"][:, :2]))) <= 1.0
    assert info["stats"]["power_mw"].shape == (80,)


def test_env_power_term_is_waked_power_and_farm_share_pools_it():
    """Facing every turbine into a uniform wind: W = waked power / free power; share 1 gives the mean."""
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=4, wake_model="gauss", pattern=2)
    params = params.replace(
        wind_noise_degrees=jnp.float32(0.0),
        main_wind_swing_degrees=jnp.float32(0.0),
        main_wind_direction_range_degrees=jnp.float32(0.0),
        main_wind_direction_degrees=jnp.float32(0.0),  # +x: along the chain, full wakes
    )
    _, state = env.reset(hivex_jax.world_key(6000), params)
    facing = state.local_wind_angle + jnp.pi  # into the wind
    state = state.replace(facing_angle=facing, performance=jnp.zeros(4))
    noop = {"continuous": jnp.zeros((4, 0)), "discrete": jnp.zeros((4, 1), jnp.int32)}
    _, _, _, _, _, info = env.step(jax.random.PRNGKey(0), state, noop, params)
    assert float(jnp.max(jnp.abs(state.local_wind_angle))) < 1e-6
    flow = solve_farm(state.positions, jnp.zeros(4), state.local_wind_angle[0], 8.0, 0.06, K)
    w = flow.power / wakes.free_stream_power(8.0, K)
    assert float(w[0]) == pytest.approx(1.0, rel=1e-5) and float(w.min()) < 0.7  # waked behind
    # P starts at 0: P1 = 0.1 * W (eq. 2-4)
    np.testing.assert_allclose(info["raw_reward_terms"][:, 0], 0.1 * w, rtol=1e-4, atol=1e-6)
    pooled = params.replace(farm_power_share=jnp.float32(1.0))
    _, _, _, _, _, info2 = env.step(jax.random.PRNGKey(0), state, noop, pooled)
    np.testing.assert_allclose(info2["raw_reward_terms"][:, 0], 0.1 * jnp.mean(w), rtol=1e-4)
