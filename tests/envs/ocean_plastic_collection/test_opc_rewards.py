"""Reward terms computed by hand from the reference formulas (paper eq. 13-23, Table 10)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.envs.ocean_plastic_collection import rewards
from hivex_jax.envs.ocean_plastic_collection.params import (
    LOWEST_OVER_ALL_VESSELS,
    NEARBY_RUNNING_MAX,
    PARKED,
    REWARD_TERM_NAMES,
    TASK_WEIGHTS,
    OceanPlasticParams,
)

FAR = ((120.0, 120.0), (-120.0, 120.0), (-120.0, -120.0))  # bystander vessels, far from all
COLLECT, GLOBAL, BORDER, COLLIDED, CLOSE, NEARBY, TRASH = range(7)


def test_weight_table_is_paper_table_10(opc):
    expected = np.array(
        [
            # collect, lowest, border, collided, close, nearby, trash
            [1, 1, 1, 1, 0, 0, 0],  # 0 Plastic Collection
            [1, 1, 1, 1, 0, 1, 0],  # 1 Find Highest Polluted Area
            [1, 1, 1, 1, 1, 0, 0],  # 2 Group Up
            [-1, 0, 1, 1, 0, 0, 1],  # 3 Avoid Plastic
        ],
        np.float32,
    )
    np.testing.assert_array_equal(np.asarray(opc.params.task_weights), expected)
    np.testing.assert_array_equal(np.asarray(TASK_WEIGHTS, np.float32), expected)
    assert len(REWARD_TERM_NAMES) == 7
    assert opc.env.task_ids == (0, 1, 2, 3)
    assert opc.env.level_field is None and opc.env.level_values == ()


def test_collect_trash_counts_pebbles_on_the_swept_path(opc):
    # Vessel 0 cruises east at top speed (0.8 m per sub-step): it sweeps x in [0, 4] at z = 0.
    positions = [[0.0, 0.0], *FAR[1:]]
    velocities = [[0.8, 0.0], [0.0, 0.0], [0.0, 0.0]]
    pebbles = [(2.0, 0.0), (3.5, 1.0), (5.0, -2.9), (2.0, 10.0), (-3.5, 0.0)]
    state = opc.scene(positions, velocities=velocities, pebbles=pebbles)
    _, new, reward, term, _, info = opc.run(state, opc.act([1, 0, 0], [0, 0, 0]))
    end_x = float(new.positions[0, 0])
    assert end_x == pytest.approx(4.0, abs=1e-5)  # at terminal speed: 5 x 0.8 m
    # within 3 m of the segment (0,0)-(4,0): (2,0) d=0, (3.5,1) d=1, (5,-2.9) d=sqrt(1+8.41)=3.07 (no),
    # (2,10) no, (-3.5,0) d=3.5 (no)
    raw = np.asarray(info["raw_reward_terms"])
    assert raw[0, COLLECT] == 2.0
    assert raw[1, COLLECT] == 0.0 and raw[2, COLLECT] == 0.0
    np.testing.assert_allclose(np.asarray(info["stats"]["pebbles_collected"]), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(np.asarray(new.collected_total), [2.0, 0.0, 0.0])
    # Main task: collect 2 + 0.01 * min(2, 0, 0) = 2
    assert float(reward[0]) == pytest.approx(2.0)
    assert not bool(term.any())


def test_a_pebble_touched_by_two_vessels_goes_to_the_lower_index(opc):
    # Both stationary within 3 m of the pebble (they also touch each other; only trash terms checked).
    positions = [[0.0, 0.0], [0.0, 2.0], FAR[2]]
    state = opc.scene(positions, pebbles=[(0.0, 1.0)])
    _, _, _, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]))
    raw = np.asarray(info["raw_reward_terms"])
    assert raw[0, COLLECT] == 1.0 and raw[1, COLLECT] == 0.0
    np.testing.assert_allclose(np.asarray(info["stats"]["trash_contacts"]), [1.0, 1.0, 0.0])


def test_global_lowest_trash_collected_uses_cumulative_counts(opc):
    positions = [[0.0, 0.0], *FAR[1:]]
    state = opc.scene(positions, pebbles=[(1.0, 0.0), (0.0, 1.0)], collected_total=[3.0, 5.0, 7.0])
    _, new, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]))
    np.testing.assert_allclose(np.asarray(new.collected_total), [5.0, 5.0, 7.0])
    raw = np.asarray(info["raw_reward_terms"])
    np.testing.assert_allclose(raw[:, GLOBAL], [0.05, 0.05, 0.05], rtol=1e-6)  # 0.01 * min(5, 5, 7)
    np.testing.assert_allclose(np.asarray(reward), [2.05, 0.05, 0.05], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["stats"]["global_reward"]), [0.05] * 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["stats"]["local_reward"]), [2.0, 0.0, 0.0])


def test_global_lowest_ignores_vessels_that_are_out_by_default(opc):
    # Vessel 0 left the episode earlier with 0 pebbles; 1 and 2 hold 4 and 6 (vessel 1 collects one now).
    positions = [[150.0, -150.0], [0.0, 0.0], FAR[2]]
    state = opc.scene(
        positions, pebbles=[(1.0, 0.0)], alive=[False, True, True], collected_total=[0.0, 4.0, 6.0]
    )
    _, _, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]))
    raw = np.asarray(info["raw_reward_terms"])
    # 0.01 * min(5, 6) over the vessels still in the episode (not 0.01 * min(0, 5, 6) = 0)
    np.testing.assert_allclose(raw[1:, GLOBAL], [0.05, 0.05], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(reward), [0.0, 1.05, 0.05], rtol=1e-6)


def test_global_lowest_switch_counts_every_vessel(opc):
    positions = [[150.0, -150.0], [0.0, 0.0], FAR[2]]
    state = opc.scene(
        positions, pebbles=[(1.0, 0.0)], alive=[False, True, True], collected_total=[2.0, 4.0, 6.0]
    )
    params = opc.params.replace(lowest_collected_mode=jnp.int32(LOWEST_OVER_ALL_VESSELS))
    _, _, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
    raw = np.asarray(info["raw_reward_terms"])
    np.testing.assert_allclose(raw[1:, GLOBAL], [0.02, 0.02], rtol=1e-6)  # the out vessel's 2 counts
    np.testing.assert_allclose(np.asarray(reward), [0.0, 1.02, 0.02], rtol=1e-6)


def test_global_lowest_of_the_vessel_leaving_this_step_still_counts(opc):
    # A vessel crossing the border on this decision acted on it: its count is still in the minimum.
    positions = [[198.0, 0.0], [0.0, 0.0], FAR[2]]
    state = opc.scene(
        positions,
        velocities=[[0.8, 0.0], [0.0, 0.0], [0.0, 0.0]],
        collected_total=[1.0, 4.0, 6.0],
    )
    _, new, _, term, _, info = opc.run(state, opc.act([1, 0, 0], [0, 0, 0]))
    assert bool(term[0])
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"])[:, GLOBAL], [0.01] * 3, rtol=1e-6)
    _, _, _, _, _, info2 = opc.run(new, opc.act([0, 0, 0], [0, 0, 0]))
    np.testing.assert_allclose(np.asarray(info2["raw_reward_terms"])[1:, GLOBAL], [0.04, 0.04], rtol=1e-6)


def test_crossing_the_border_costs_100_and_ends_that_vessel(opc):
    positions = [[198.0, 0.0], *FAR[1:]]
    state = opc.scene(positions, velocities=[[0.8, 0.0], [0.0, 0.0], [0.0, 0.0]])
    _, new, reward, term, trunc, info = opc.run(state, opc.act([1, 1, 1], [0, 0, 0]))
    raw = np.asarray(info["raw_reward_terms"])
    assert raw[0, BORDER] == -100.0 and raw[1, BORDER] == 0.0
    assert float(reward[0]) == pytest.approx(-100.0)
    np.testing.assert_array_equal(np.asarray(term), [True, False, False])
    np.testing.assert_array_equal(np.asarray(new.alive), [False, True, True])
    # It stopped where it crossed (the first sub-step beyond x = 200: 198 + 0.8 * 3 = 200.4).
    assert float(new.positions[0, 0]) == pytest.approx(200.4, abs=1e-4)
    assert np.asarray(info["stats"]["border_crossings"]).tolist() == [1.0, 0.0, 0.0]
    # Out for the rest of the episode: no reward, no motion, stays terminated.
    _, after, reward2, term2, _, _ = opc.run(new, opc.act([1, 1, 1], [2, 0, 0]))
    assert float(reward2[0]) == 0.0 and bool(term2[0])
    np.testing.assert_array_equal(np.asarray(after.positions[0]), np.asarray(new.positions[0]))


def test_two_vessels_colliding_cost_100_each_and_both_end(opc):
    positions = [[0.0, 0.0], [6.0, 0.0], FAR[2]]
    forward = [[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]
    velocities = [[0.8, 0.0], [-0.8, 0.0], [0.0, 0.0]]
    state = opc.scene(positions, forward=forward, velocities=velocities)
    _, new, reward, term, _, info = opc.run(state, opc.act([1, 1, 0], [0, 0, 0]))
    raw = np.asarray(info["raw_reward_terms"])
    np.testing.assert_allclose(raw[:, COLLIDED], [-100.0, -100.0, 0.0])
    np.testing.assert_array_equal(np.asarray(term), [True, True, False])
    # They stop at first contact: after one sub-step they are 6 - 1.6 = 4.4 m apart (< 5 m).
    gap = float(jnp.linalg.norm(new.positions[0] - new.positions[1]))
    assert gap == pytest.approx(4.4, abs=1e-4)
    np.testing.assert_allclose(np.asarray(info["stats"]["vessel_collisions"]), [1.0, 1.0, 0.0])


@pytest.mark.parametrize("gap, expected", [(8.0, 1.0), (10.0, 1.0), (12.0, 0.0)])
def test_close_to_other_vessel_within_10(opc, gap, expected):
    params = opc.env.variant_params(opc.params, task=2)
    state = opc.scene([[0.0, 0.0], [gap, 0.0], FAR[2]])
    _, _, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
    raw = np.asarray(info["raw_reward_terms"])
    np.testing.assert_allclose(raw[:, CLOSE], [expected, expected, 0.0])
    np.testing.assert_allclose(np.asarray(reward), [expected, expected, 0.0])


def test_close_to_other_vessel_switch_to_equation_18(opc):
    params = opc.env.variant_params(opc.params, task=2).replace(close_vessel_reward=jnp.float32(10.0))
    state = opc.scene([[0.0, 0.0], [8.0, 0.0], FAR[2]])
    _, _, reward, _, _, _ = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
    np.testing.assert_allclose(np.asarray(reward), [10.0, 10.0, 0.0])


def test_nearby_trash_count_delta_formula():
    p = OceanPlasticParams()
    counts = [5.0, 3.0, 6.0, 6.0, 2.0, 4.0]
    previous = [5.0, 0.0, 3.0, 0.0, 0.0, 2.0]  # eq. 20-22: vs the previous step (starting at 0)
    running_max = [5.0, 0.0, 1.0, 0.0, 0.0, 0.0]  # prose: vs the highest count so far
    for mode, expected in ((0, previous), (NEARBY_RUNNING_MAX, running_max)):
        pm = p.replace(nearby_trash_mode=jnp.int32(mode))
        reference = jnp.zeros(1)
        got = []
        for c in counts:
            r, reference = rewards.nearby_trash_count_delta(jnp.asarray([c]), reference, pm)
            got.append(float(r[0]))
        assert got == expected, (mode, got)


def test_nearby_trash_count_delta_in_the_env(opc):
    params = opc.env.variant_params(opc.params, task=1)
    # Stationary vessel 0 with 4 pebbles between 5 and 25 m (out of reach), one at 26 m.
    pebbles = [(5.0, 0.0), (0.0, -10.0), (-17.0, 17.0), (24.9, 0.0), (0.0, 26.0)]
    state = opc.scene([[0.0, 0.0], *FAR[1:]], pebbles=pebbles)
    _, new, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
    assert float(info["raw_reward_terms"][0, NEARBY]) == 4.0  # count 4, old count 0
    assert float(reward[0]) == 4.0
    np.testing.assert_allclose(np.asarray(info["nearby_trash_count"]), [4.0, 0.0, 0.0])
    _, _, reward2, _, _, info2 = opc.run(new, opc.act([0, 0, 0], [0, 0, 0]), params)
    assert float(info2["raw_reward_terms"][0, NEARBY]) == 0.0 and float(reward2[0]) == 0.0


@pytest.mark.parametrize("magnitude", [-1.0, -100.0])
def test_avoid_plastic_task_pays_for_collecting_and_for_touching(opc, magnitude):
    params = opc.env.variant_params(opc.params, task=3).replace(trash_collision_reward=jnp.float32(magnitude))
    state = opc.scene([[0.0, 0.0], *FAR[1:]], pebbles=[(1.0, 0.0), (0.0, 2.0)])
    _, _, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
    # collect 2 x weight -1, collide-with-trash (eq. 23: once per step with any contact) x weight 1,
    # global weight 0
    assert float(reward[0]) == pytest.approx(-2.0 + magnitude)
    terms = np.asarray(info["reward_terms"])
    assert terms[0, COLLECT] == -2.0 and terms[0, TRASH] == magnitude and terms[0, GLOBAL] == 0.0
    np.testing.assert_allclose(np.asarray(info["stats"]["local_reward"]), [-2.0, 0.0, 0.0])


def test_reward_terms_sum_to_reward_for_every_task(opc):
    state = opc.scene(
        [[0.0, 0.0], [7.0, 0.0], [198.5, 0.0]],
        velocities=[[0.4, 0.0], [0.0, 0.0], [0.8, 0.0]],
        pebbles=[(2.0, 0.0), (10.0, 10.0)],
    )
    for task in opc.env.task_ids:
        params = opc.env.variant_params(opc.params, task=task)
        _, _, reward, _, _, info = opc.run(state, opc.act([1, 0, 1], [2, 1, 0]), params)
        terms = np.asarray(info["reward_terms"])
        raw = np.asarray(info["raw_reward_terms"])
        np.testing.assert_allclose(terms.sum(-1), np.asarray(reward), rtol=1e-6)
        np.testing.assert_allclose(terms, raw * np.asarray(TASK_WEIGHTS)[task], rtol=1e-6)


@pytest.mark.parametrize("mode, expected", [(0, [4.0, 0.0, 1.0]), (NEARBY_RUNNING_MAX, [4.0, 0.0, 0.0])])
def test_nearby_trash_count_delta_switch_in_the_env(opc, mode, expected):
    # Contradiction 3: counts 4, 2, 3 within 25 m. Equations (previous step): 4, 0, 1; prose (running
    # max): 4, 0, 0 (3 never exceeds the best count 4).
    params = opc.env.variant_params(opc.params, task=1).replace(nearby_trash_mode=jnp.int32(mode))
    ring = [(10.0, 0.0), (0.0, 10.0), (-10.0, 0.0), (0.0, -10.0)]
    state = opc.scene([[0.0, 0.0], *FAR[1:]], pebbles=ring)
    got = []
    for count in (4, 2, 3):
        # The first `count` pebbles of the ring afloat, the rest parked; vessels and counters carried on.
        afloat = jnp.arange(state.pebble_x.shape[0]) < count
        padded = jnp.zeros((state.pebble_x.shape[0] - 4, 2))
        ring_xz = jnp.concatenate([jnp.asarray(ring), padded])
        state = state.replace(
            pebble_x=jnp.where(afloat, ring_xz[:, 0], PARKED),
            pebble_z=jnp.where(afloat, ring_xz[:, 1], PARKED),
        )
        _, state, reward, _, _, info = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]), params)
        assert float(info["nearby_trash_count"][0]) == count
        got.append(float(info["raw_reward_terms"][0, NEARBY]))
        # task 1: nearby x 1 and 0.01 x min(collected) = 0; nothing else happens this step
        assert float(reward[0]) == pytest.approx(got[-1])
    assert got == expected
