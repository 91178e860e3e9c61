"""Gradients through Wind Farm Control's `step` (docs/api.md, "Gradients"): the yaw example of the page
matches finite differences and the hand-computed value; yaw is measured from the wind's source
(`local_wind_angle + pi`), and past 60 degrees off it the Generate Energy reward and its gradient are
exactly 0, while Avoid Damage's stays nonzero."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax

KEY = jax.random.PRNGKey(0)
NOOP = {"discrete": jnp.zeros((1, 1), jnp.int32)}  # choice 0 of the yaw branch


def reward_at_yaw(task: int = 0, from_source: bool = True):
    """`yaw_degrees -> reward` of one step of one turbine at world 0, no-op action, yaw measured from
    the direction the wind comes from (`from_source`) or, wrongly, from where it blows to."""
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=1, task=task)
    _, state = env.reset(hivex_jax.world_key(0), params)
    into_wind = state.local_wind_angle + (jnp.pi if from_source else 0.0)

    def reward(yaw_degrees):
        facing = into_wind + jnp.deg2rad(yaw_degrees)
        _, _, r, *_ = env.step(KEY, state.replace(facing_angle=facing), NOOP, params)
        return r.sum()

    return reward


@pytest.mark.parametrize("yaw", [-45.0, -10.0, 10.0, 30.0, 55.0])
def test_energy_gradient_matches_finite_differences_and_the_hand_computed_value(yaw):
    reward = reward_at_yaw()
    grad = float(jax.grad(reward)(yaw))
    h = 0.25  # degrees: the reward is smooth (cos) within 60 degrees of the wind's source
    finite = (float(reward(yaw + h)) - float(reward(yaw - h))) / (2 * h)
    assert grad == pytest.approx(finite, rel=2e-2)
    # one step from P = 0 with a = c = 0.1: r = 0.1 W, W = 2 cos(yaw) - 1 -> dr/dyaw = -0.2 sin(yaw) per rad
    assert float(reward(yaw)) == pytest.approx(0.1 * (2 * np.cos(np.deg2rad(yaw)) - 1), rel=1e-4)
    assert grad == pytest.approx(-0.2 * np.sin(np.deg2rad(yaw)) * np.pi / 180, rel=1e-3)


@pytest.mark.parametrize("yaw", [61.0, 90.0, 170.0, -120.0])
def test_energy_reward_and_gradient_are_exactly_zero_past_60_degrees(yaw):
    reward = reward_at_yaw()
    assert float(reward(yaw)) == 0.0 and float(jax.grad(reward)(yaw)) == 0.0


def test_yaw_measured_from_where_the_wind_blows_to_is_170_degrees_off():
    """The trap: `local_wind_angle + 10 deg` faces away from the wind, flat zero; `+ pi` is the fix."""
    wrong, right = reward_at_yaw(from_source=False), reward_at_yaw(from_source=True)
    assert float(wrong(10.0)) == 0.0 and float(jax.grad(wrong)(10.0)) == 0.0
    assert float(wrong(10.0)) == float(right(170.0))
    assert float(jax.grad(right)(10.0)) < 0.0  # turning back towards the source pays


def test_avoid_damage_gradient_is_nonzero_where_energy_is_flat():
    reward = reward_at_yaw(task=1)
    for yaw in (30.0, 120.0):  # alpha / 90 deg and 2 - alpha / 90 deg: slope -+1 / 90 deg
        grad = float(jax.grad(reward)(yaw))
        assert abs(grad) == pytest.approx(1.0 / 90.0, rel=1e-4)


def test_a_scanned_rollout_differentiates_with_respect_to_the_initial_yaw():
    """Five no-op steps in `jax.lax.scan`: the return's gradient w.r.t. the starting yaw is finite and
    that of finite differences (the wind moves, the rotor keeps its yaw, the performance accumulates)."""
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=1)
    _, state = env.reset(hivex_jax.world_key(0), params)

    def episode_return(yaw_degrees):
        start = state.replace(facing_angle=state.local_wind_angle + jnp.pi + jnp.deg2rad(yaw_degrees))

        def one(s, k):
            _, s, r, *_ = env.step(k, s, NOOP, params)
            return s, r.sum()

        _, rewards = jax.lax.scan(one, start, jax.random.split(KEY, 5))
        return rewards.sum()

    grad = float(jax.grad(episode_return)(20.0))
    finite = (float(episode_return(20.25)) - float(episode_return(19.75))) / 0.5
    assert np.isfinite(grad) and grad < 0.0
    assert grad == pytest.approx(finite, rel=2e-2)
