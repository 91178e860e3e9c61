"""Reward terms against hand computations from the reference formulas (paper eq. 24-48, §2.3)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.envs.drone_based_reforestation import rewards
from hivex_jax.envs.drone_based_reforestation.params import (
    FIND_TREE_PAPER_FORMULA,
    REWARD_TERM_NAMES,
    TASK_NAMES,
    TASK_WEIGHTS,
    DroneParams,
)

P = DroneParams()


def test_weight_table_shape_and_rows():
    w = np.asarray(TASK_WEIGHTS)
    assert w.shape == (len(TASK_NAMES), len(REWARD_TERM_NAMES)) == (8, 12)
    col = {n: i for i, n in enumerate(REWARD_TERM_NAMES)}
    # energy terms are on in every task (paper Table 11)
    assert np.all(w[:, col["deplete_energy_holding_seed"]] == 1)
    assert np.all(w[:, col["deplete_energy_no_seed"]] == 1)
    assert w[2, col["pick_up_seed"]] == 100  # Pick-up Seed at Base
    assert w[1, col["find_close_tree"]] == 1 and w[:, col["find_close_tree"]].sum() == 1
    assert w[7, col["group_up"]] == 1 and w[:, col["group_up"]].sum() == 1
    assert list(w[:, col["drop_seed"]]) == [1, 0, 0, 1, 0, 0, 0, 0]


@pytest.mark.parametrize(
    "d, expected", [(2.5, 1.0), (75.0, 0.0), (38.75, 0.5), (2.4, 0.0), (80.0, 0.0), (20.0, 55 / 72.5)]
)
def test_reforestation_potential(d, expected):
    assert float(rewards.reforestation_potential(jnp.float32(d), P)) == pytest.approx(expected, abs=1e-6)


def test_drop_seed_reward_by_hand():
    # d_et = 20: r_s = 20 * (75 - 20) / 72.5; sdd = 100: r_d = 10 * 100 / 200
    seed, dist = rewards.drop_seed_reward(
        jnp.float32(20.0), jnp.float32(1e4), jnp.float32(100.0), jnp.bool_(True), P
    )
    assert float(seed) == pytest.approx(20 * 55 / 72.5, rel=1e-6)
    assert float(dist) == pytest.approx(5.0, rel=1e-6)
    # the distance reward is clamped to drm when the station is more than e_w away
    _, far = rewards.drop_seed_reward(jnp.float32(20.0), jnp.float32(1e4), jnp.float32(300.0), True, P)
    assert float(far) == pytest.approx(10.0)
    # invalid: too close to a new tree, outside the band, in a lake
    for d_et, d_nt, land in ((20.0, 2.0, True), (1.0, 1e4, True), (80.0, 1e4, True), (20.0, 1e4, False)):
        s, d = rewards.drop_seed_reward(jnp.float32(d_et), jnp.float32(d_nt), jnp.float32(100.0), land, P)
        assert float(s) == 0.0 and float(d) == 0.0
    # lakes allowed with the switch off
    s, _ = rewards.drop_seed_reward(
        jnp.float32(20.0),
        jnp.float32(1e4),
        jnp.float32(100.0),
        False,
        P.replace(water_drop_invalid=jnp.int32(0)),
    )
    assert float(s) > 0.0


def test_energy_penalties_per_substep_and_per_decision():
    h, n = rewards.energy_penalties(jnp.asarray([True, False]), P, 5)
    np.testing.assert_allclose(h, [-5 / 1000, 0.0], rtol=1e-6)
    np.testing.assert_allclose(n, [0.0, -5 / 2000], rtol=1e-6)
    h, n = rewards.energy_penalties(
        jnp.asarray([True, False]), P.replace(energy_penalty_per_substep=jnp.int32(0)), 5
    )
    np.testing.assert_allclose(h, [-1 / 1000, 0.0], rtol=1e-6)
    np.testing.assert_allclose(n, [0.0, -1 / 2000], rtol=1e-6)


def test_running_back_by_hand_and_total_budget():
    # drop 50 m away (20 increments), quality 0.5: each increment pays 20 * 0.5 / (20 - 7.5 / 2.5)
    r, best = rewards.running_back_reward(
        jnp.bool_(True), jnp.float32(0.5), jnp.float32(20.0), jnp.float32(20.0), jnp.float32(47.0), P
    )
    assert float(best) == 18.0
    assert float(r) == pytest.approx(20 * 0.5 * 2 / 17, rel=1e-6)
    # moving away or staying pays nothing; inactive pays nothing
    r2, _ = rewards.running_back_reward(True, jnp.float32(0.5), 20.0, 18.0, jnp.float32(49.0), P)
    r3, _ = rewards.running_back_reward(False, jnp.float32(0.5), 20.0, 20.0, jnp.float32(10.0), P)
    assert float(r2) == 0.0 and float(r3) == 0.0
    # a whole return from 50 m down to the charging radius adds up to r_p * quality
    total, best = 0.0, jnp.float32(20.0)
    for d in np.arange(50.0, 7.0, -1.0):
        r, best = rewards.running_back_reward(True, jnp.float32(0.5), 20.0, best, jnp.float32(d), P)
        total += float(r)
    assert total == pytest.approx(20 * 0.5, rel=1e-5)


def test_group_up():
    pos = jnp.asarray([[0.0, 10.0, 0.0], [4.0, 10.0, 0.0], [30.0, 10.0, 0.0]])
    r = rewards.group_up_reward(pos, jnp.asarray([True, True, True]), P)
    np.testing.assert_allclose(r, [10.0, 10.0, 0.0])
    r = rewards.group_up_reward(pos, jnp.asarray([True, False, True]), P)  # absent drones don't count
    np.testing.assert_allclose(r, [0.0, 0.0, 0.0])
    r1 = rewards.group_up_reward(pos[:1], jnp.asarray([True]), P)  # a lone drone never groups up
    np.testing.assert_allclose(r1, [0.0])


def test_running_max_delta():
    delta, best = rewards.running_max_delta(jnp.asarray([3.0, 1.0, 5.0]), jnp.asarray([2.0, 2.0, 0.0]), True)
    np.testing.assert_allclose(delta, [1.0, 0.0, 5.0])
    np.testing.assert_allclose(best, [3.0, 2.0, 5.0])
    delta, best = rewards.running_max_delta(jnp.asarray([3.0]), jnp.asarray([2.0]), jnp.asarray([False]))
    assert float(delta[0]) == 0.0 and float(best[0]) == 2.0


def test_find_close_tree_contradiction_4():
    d = jnp.asarray([19.0, 21.0, 3000.0])
    np.testing.assert_array_equal(rewards.finds_close_tree(d, P), [True, False, False])
    paper = P.replace(find_tree_mode=jnp.int32(FIND_TREE_PAPER_FORMULA))
    np.testing.assert_array_equal(rewards.finds_close_tree(d, paper), [True, True, True])  # always true
