"""Rewards computed by hand from reference eq. 1-5 (§2.1)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.wind_farm_control import rewards
from hivex_jax.envs.wind_farm_control.params import THETA_LINEAR, WindFarmParams

P = WindFarmParams()
D = math.radians


def w_of(misalign_deg, params=P):
    theta = rewards.alignment_theta(jnp.float32(D(misalign_deg)), params)
    return float(rewards.wind_power_fraction(theta))


def test_power_fraction_cosine_reading():
    assert w_of(0.0) == pytest.approx(1.0)
    assert w_of(45.0) == pytest.approx((math.cos(D(45)) - 0.5) / 0.5, abs=1e-6)  # 0.41421
    assert w_of(60.0) == pytest.approx(0.0, abs=1e-6)
    assert w_of(75.0) == 0.0


def test_power_fraction_linear_reading():
    lin = P.replace(theta_mode=jnp.int32(THETA_LINEAR))
    assert w_of(22.5, lin) == pytest.approx(0.5, abs=1e-6)  # theta = 0.75
    assert w_of(45.0, lin) == pytest.approx(0.0, abs=1e-6)
    assert w_of(0.0, lin) == pytest.approx(1.0)


def test_performance_state_eq2_to_4():
    # P <- P - 0.1 P + 0.1 W: from 0 with W = 1: 0.1, 0.19, 0.271
    p = jnp.float32(0.0)
    expected = [0.1, 0.19, 0.271]
    for e in expected:
        p = rewards.update_performance(p, jnp.float32(1.0), P)
        assert float(p) == pytest.approx(e, abs=1e-6)
    # decays with W = 0: 0.5 -> 0.45
    assert float(rewards.update_performance(jnp.float32(0.5), 0.0, P)) == pytest.approx(0.45)
    # three sub-updates per decision: 1 - 0.9^3 of the way to W
    three = P.replace(performance_updates_per_step=jnp.int32(3))
    assert float(rewards.update_performance(jnp.float32(0.0), 0.8, three)) == pytest.approx(
        0.8 * (1 - 0.9**3), abs=1e-6
    )
    assert float(rewards.generate_energy_reward(jnp.float32(1.3))) == 1.0


@pytest.mark.parametrize("alpha,expected", [(0, 0.0), (45, 0.5), (90, 1.0), (135, 0.5), (180, 0.0)])
def test_avoid_damage_eq5(alpha, expected):
    wind = jnp.float32(0.3)  # blowing towards 0.3 rad
    facing = wind + D(alpha)
    assert float(rewards.avoid_damage_reward(facing, wind)) == pytest.approx(expected, abs=1e-5)


def _state_with(env, params, facing, wind):
    _, state = env.reset(hivex_jax.world_key(3), params)
    n = env.num_agents
    return state.replace(
        facing_angle=jnp.full((n,), facing, jnp.float32),
        local_wind_angle=jnp.full((n,), wind, jnp.float32),
        performance=jnp.zeros((n,), jnp.float32),
    )


def test_env_step_pays_generate_energy_with_persistent_state():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=1)
    wind = 1.0
    state = _state_with(env, params, wind + math.pi + D(45), wind)  # 45 deg off the wind's source
    noop = env.action_space().noop()
    step = jax.jit(env.step)
    w = (math.cos(D(45)) - 0.5) / 0.5
    p = 0.0
    for _ in range(3):
        _, state, r, term, trunc, info = step(jax.random.PRNGKey(0), state, noop, params)
        # wind at the turbine moves slightly between steps; pin it so W stays the hand value
        state = state.replace(local_wind_angle=jnp.full((1,), wind, jnp.float32))
        p = 0.9 * p + 0.1 * w
        assert float(r[0]) == pytest.approx(p, abs=1e-5)
        assert np.allclose(info["reward_terms"][0], [p, 0.0], atol=1e-5)
        assert float(info["stats"]["individual_performance"][0]) == pytest.approx(p, abs=1e-5)


def test_env_step_task1_pays_avoid_damage_only():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=1, task=1)
    wind = -0.4
    state = _state_with(env, params, wind + D(90), wind)  # blades parallel to the wind: max 1
    _, _, r, *_, info = jax.jit(env.step)(jax.random.PRNGKey(0), state, env.action_space().noop(), params)
    assert float(r[0]) == pytest.approx(1.0, abs=1e-5)
    assert float(info["stats"]["individual_performance"][0]) == 0.0  # weighted: 0 in task 1
    assert float(info["raw_reward_terms"][0, 0]) == 0.0  # 90 deg off: W = 0
