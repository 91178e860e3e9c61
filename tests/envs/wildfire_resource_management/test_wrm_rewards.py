"""Reward terms against hand computations from the reference formulas (paper eq. 6-12, Table 9)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.wildfire_resource_management import rewards
from hivex_jax.envs.wildfire_resource_management.dynamics import ADD, NO_FIRE_DISTANCE, NOOP, REMOVE
from hivex_jax.envs.wildfire_resource_management.generator import neighbour_table
from hivex_jax.envs.wildfire_resource_management.params import (
    CLOSENESS_NORMALISED,
    COLLECTIVE_ONE_MINUS_RMSE,
    SELF_REWARD_RECEIVED,
    SELF_REWARD_SHARE,
    TASK_ORDER_CONFIG_COMMENT,
    WildfireParams,
    task_weight_row,
)

P = WildfireParams()


def broken_power_law(d_prime: float) -> float:
    return (1.0 + (1000.0 * d_prime / 270.0) ** 5) ** -0.5


def test_broken_power_law_reference_points():
    # p = 1 at d' = 0, 1/sqrt(2) at d' = s/1000 = 0.27, ~0.21 at 0.5, ~0.038 at 1 (reference §2.2)
    assert broken_power_law(0.27) == pytest.approx(2**-0.5)
    prev = jnp.asarray([NO_FIRE_DISTANCE, 300.0, 300.0, 100.0, 100.0, 50.0])
    dist = jnp.asarray([200.0, 250.0, 350.0, 50.0, 150.0, 50.0])
    got = np.asarray(rewards.tower_performance(prev, dist, P))
    # d1n = min(d, 200) / 200; approaching (d1 < d0): d' = 0.5 - 0.5 d1n, else 0.5 + 0.5 d1n
    d_prime = [0.0, 0.0, 1.0, 0.5 - 0.125, 0.5 + 0.375, 0.5 + 0.125]
    np.testing.assert_allclose(got, [broken_power_law(x) for x in d_prime], rtol=1e-5)
    assert got[0] == pytest.approx(1.0) and got[2] == pytest.approx(0.03785, abs=1e-4)
    assert broken_power_law(0.5) == pytest.approx(0.2095, abs=1e-4)


def test_closeness_reading_and_unseen_fire():
    p = P.replace(distance_mode=jnp.int32(CLOSENESS_NORMALISED))
    prev = jnp.asarray([100.0, 100.0, NO_FIRE_DISTANCE])
    dist = jnp.asarray([50.0, 150.0, NO_FIRE_DISTANCE])
    got = np.asarray(rewards.tower_performance(prev, dist, p))
    # closeness d1n = 1 - min(d, 200)/200: 0.75 approaching -> d' = 0.125; 0.25 receding -> 0.625;
    # nothing seen -> d1n = 0, not approaching -> d' = 0.5
    np.testing.assert_allclose(got, [broken_power_law(x) for x in (0.125, 0.625, 0.5)], rtol=1e-5)
    # default reading: an unseen fire counts as far and not approaching (d' = 1)
    unseen = rewards.tower_performance(jnp.asarray([NO_FIRE_DISTANCE]), jnp.asarray([NO_FIRE_DISTANCE]), P)
    assert float(unseen[0]) == pytest.approx(broken_power_law(1.0), rel=1e-5)


def test_self_reward_modes():
    perf = jnp.asarray([0.5, 1.0, 0.2])
    own = jnp.asarray([0.4, 0.0, 1.0])
    received = jnp.asarray([0.8, 0.3, 1.0])
    np.testing.assert_allclose(rewards.self_reward(perf, own, received, P), [0.2, 0.0, 0.2], rtol=1e-6)
    share = P.replace(self_reward_mode=jnp.int32(SELF_REWARD_SHARE))
    np.testing.assert_allclose(rewards.self_reward(perf, own, received, share), [0.25, 0.0, 0.2], rtol=1e-6)
    recv = P.replace(self_reward_mode=jnp.int32(SELF_REWARD_RECEIVED))
    np.testing.assert_allclose(rewards.self_reward(perf, own, received, recv), [0.4, 0.3, 0.2], rtol=1e-6)


def test_neighbourhood_reward_by_hand():
    nb = jnp.asarray(neighbour_table())
    perf = jnp.linspace(0.1, 0.9, 9)
    sent = jnp.zeros((9, 3)).at[0].set(jnp.asarray([0.2, 0.3, 0.5])).at[4].set(jnp.asarray([0.1, 0.0, 0.0]))
    got = np.asarray(rewards.neighbourhood_reward(perf, nb, sent, P))
    p = np.asarray(perf)
    # tower 0 (corner) -> towers 1, 3, 4; tower 4 (centre) -> 1, 3, 5; x3 = even-split normalisation
    assert got[0] == pytest.approx(3.0 * (0.2 * p[1] + 0.3 * p[3] + 0.5 * p[4]), rel=1e-5)
    assert got[4] == pytest.approx(3.0 * 0.1 * p[1], rel=1e-5)
    assert np.all(got[[1, 2, 3, 5, 6, 7, 8]] == 0.0)
    literal = P.replace(neighbour_resource_scale=jnp.float32(1.0))
    assert float(rewards.neighbourhood_reward(perf, nb, sent, literal)[0]) == pytest.approx(
        got[0] / 3, rel=1e-5
    )


def test_collective_modes():
    perf = jnp.asarray([1.0, 0.5, 0.0, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1])
    p = np.asarray(perf)
    assert float(rewards.collective_reward(perf, P)) == pytest.approx(np.sqrt(np.mean(p**2)), rel=1e-6)
    rmse = P.replace(collective_mode=jnp.int32(COLLECTIVE_ONE_MINUS_RMSE))
    expected = 1.0 - np.sqrt(np.mean((1.0 - p) ** 2))
    assert float(rewards.collective_reward(perf, rmse)) == pytest.approx(expected, rel=1e-6)


def test_task_weights_and_contradiction_20_switch():
    rows = [np.asarray(task_weight_row(P.replace(task=jnp.int32(t)))) for t in range(3)]
    np.testing.assert_array_equal(rows, [[1, 1, 1], [10, 1, 1], [1, 10, 1]])  # 1 = Keep All
    swapped = P.replace(task_order=jnp.int32(TASK_ORDER_CONFIG_COMMENT))
    rows = [np.asarray(task_weight_row(swapped.replace(task=jnp.int32(t)))) for t in range(3)]
    np.testing.assert_array_equal(rows, [[1, 1, 1], [1, 10, 1], [10, 1, 1]])  # 1 = Distribute All


@pytest.mark.parametrize("task", [0, 1, 2])
def test_step_reward_terms_by_hand(env, fns, task):
    """A step's reward terms are the formulas applied to the allocation after the action and to the
    performance from the sightings the towers acted on; the logged statistics follow HIVEX's."""
    params = env.variant_params(env.default_params(), task=task)
    _, state = fns.reset(hivex_jax.world_key(11), params)
    allocation = jnp.zeros((9, 4)).at[:, 0].set(0.3).at[:, 1].set(0.2).at[2].set(jnp.asarray([1.0, 0, 0, 0]))
    previous = jnp.linspace(100.0, 400.0, 9)
    distance = previous + jnp.asarray([-10.0, 10.0] * 4 + [0.0])
    state = state.replace(allocation=allocation, previous_distance=previous, distance=distance)
    action = jnp.full((9, 4), NOOP).at[0].set(jnp.asarray([ADD, REMOVE, ADD, NOOP])).at[2, 1].set(ADD)
    _, _, reward, _, _, info = fns.step(
        jax.random.PRNGKey(0), state, {"continuous": jnp.zeros((9, 0)), "discrete": action}, params
    )
    a = np.asarray(allocation).copy()
    a[0] = [0.4, 0.1, 0.1, 0.0]  # +0.1 self, -0.1 nb 1, +0.1 nb 2; tower 2 is out of budget
    nb = neighbour_table()
    d0, d1 = np.asarray(previous), np.asarray(distance)
    dn = np.minimum(d1, 200.0) / 200.0
    p = np.asarray(
        [
            broken_power_law(0.5 - 0.5 * x if c < o else 0.5 + 0.5 * x)
            for x, c, o in zip(dn, d1, d0, strict=True)
        ]
    )
    self_term = p * a[:, 0]
    nb_term = 3.0 * np.sum(p[nb] * a[:, 1:], axis=1)
    coll = np.sqrt(np.mean(p**2))
    w = np.asarray([[1, 1, 1], [10, 1, 1], [1, 10, 1]], np.float32)[task]
    raw = np.stack([self_term, nb_term, np.full(9, coll)], axis=1)
    np.testing.assert_allclose(info["raw_reward_terms"], raw, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(info["reward_terms"], raw * w, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(reward, (raw * w).sum(1), rtol=1e-5, atol=1e-7)
    stats = info["stats"]
    np.testing.assert_allclose(stats["individual_performance"], p, rtol=1e-5)
    np.testing.assert_allclose(stats["reward_for_moving_resources_to_self"], raw[:, 0] * w[0], rtol=1e-5)
    np.testing.assert_allclose(
        stats["reward_for_moving_resources_to_neighbours"], raw[:, 1] * w[1], rtol=1e-5
    )
    np.testing.assert_allclose(stats["collective_performance"], raw[:, 2] * w[2], rtol=1e-5)
    np.testing.assert_allclose(
        stats["individual_resource_count"], a.sum(1) - np.asarray(allocation).sum(1), atol=1e-6
    )
