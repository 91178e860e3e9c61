"""AerialWildfireSuppression-v0 rewards, computed by hand per term, and the task weighting."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aws_helpers import ENV, PARAMS, RESET, STEP, G, action, base_state, calm, cell_of, set_cells

import hivex_jax
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_centres
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, EVERY_STEP, HEALTHY, TASK_WEIGHTS, WET


def test_crossing_the_border_costs_100_and_the_plane_is_out():
    s = base_state().replace(position=jnp.asarray([[745.0, 0.0], [0.0, 300.0], [-400.0, -300.0]]))
    s = s.replace(heading=jnp.asarray([0.0, jnp.pi / 2, jnp.pi / 2]))
    p = calm()
    _, s1, r, term, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)
    assert bool(term[0]) and not bool(term[1]) and not bool(s1.alive[0])
    np.testing.assert_allclose(float(info["raw_reward_terms"][0, 0]), -100.0)
    np.testing.assert_allclose(float(r[0]), -100.0 - 1.0 / 3000.0, rtol=1e-6)
    assert float(info["stats"]["crash_count"][0]) == 1.0
    _, s2, r2, term2, _, info2 = STEP(jax.random.PRNGKey(1), s1, action(steer=1.0, drop=1), p)
    np.testing.assert_array_equal(np.asarray(s2.position[0]), np.asarray(s1.position[0]))  # out: frozen
    assert float(r2[0]) == 0.0 and bool(term2[0]) and float(info2["stats"]["crash_count"][0]) == 0.0


@pytest.mark.parametrize("task,weight", [(0, 1.0), (5, 100.0), (7, 0.0)])
def test_pick_up_water_on_entering_the_water(task, weight):
    s = base_state().replace(position=jnp.asarray([[595.0, 0.0], [0.0, 300.0], [-400.0, -300.0]]))
    s = s.replace(heading=jnp.asarray([0.0, jnp.pi / 2, jnp.pi / 2]))
    p = ENV.variant_params(calm(), task=task)
    _, s1, r, term, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)
    raw = np.asarray(info["raw_reward_terms"][:, 1])
    np.testing.assert_allclose(raw, [1.0 - 1.0 / 3000, -1.0 / 3000, -1.0 / 3000], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["reward_terms"][:, 1]), weight * raw, rtol=1e-6)
    assert bool(s1.holding[0]) and not bool(s1.holding[1])
    assert bool(term[0]) == (task == 5) and not bool(term[1])
    # Staying over the water is no new pick-up.
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(1), s1, action(), p)
    assert float(info2["stats"]["water_pickup"][0]) == 0.0


def test_drop_wets_the_disc_and_pays_per_tree():
    s = base_state()
    r0, c0 = cell_of(0.0, 310.0)
    burning = [(r0 + dr, c0 + dc) for dr in range(-2, 3) for dc in range(-2, 3)]
    s = set_cells(s, burning, BURNING).replace(holding=jnp.asarray([False, True, False]))
    p = ENV.variant_params(calm(), task=1)  # Max Extinguished: extinguish weight 10
    _, s1, r, term, _, info = STEP(jax.random.PRNGKey(0), s, action(drop=1), p)
    # Plane 1 flies 10 m north to (0, 310) and drops there.
    xs, zs = (np.asarray(v) for v in cell_centres(p, G))
    disc = (xs[None, :] - 0.0) ** 2 + (zs[:, None] - 310.0) ** 2 <= 110.0**2
    old = np.asarray(s.cells)
    prepared = int(np.sum(disc & (old == HEALTHY)))
    extinguished = int(np.sum(disc & (old == BURNING)))
    assert extinguished == 25 and 100 < prepared + extinguished < 300  # ~140-300 trees per drop
    np.testing.assert_allclose(np.asarray(info["stats"]["preparing_trees"]), [0, prepared, 0])
    np.testing.assert_allclose(np.asarray(info["stats"]["extinguishing_trees"]), [0, extinguished, 0])
    np.testing.assert_allclose(float(info["raw_reward_terms"][1, 7]), 5.0 * extinguished)
    np.testing.assert_allclose(float(info["reward_terms"][1, 7]), 50.0 * extinguished)  # task 1: x10
    np.testing.assert_allclose(float(info["raw_reward_terms"][1, 8]), 1.0 * prepared)
    new = np.asarray(s1.cells)
    assert np.all(new[disc & np.isin(old, [HEALTHY, BURNING, WET])] == WET)
    np.testing.assert_array_equal(new[~disc], old[~disc])
    assert not bool(s1.holding[1]) and float(info["stats"]["water_drop"][1]) == 1.0
    assert float(info["stats"]["water_drop"][0]) == 0.0  # empty tanks drop nothing
    # Re-wetting wet trees is not preparing (default), but counts with the switch.
    again = s1.replace(holding=jnp.asarray([False, True, False]), position=s.position)
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(0), again, action(drop=1), p)
    assert float(info2["stats"]["preparing_trees"][1]) == 0.0
    p_rewet = p.replace(count_rewetting=jnp.int32(1))
    _, _, _, _, _, info3 = STEP(jax.random.PRNGKey(0), again, action(drop=1), p_rewet)
    assert float(info3["stats"]["preparing_trees"][1]) == prepared + extinguished


def test_overlapping_drops_credit_each_tree_once():
    s = base_state().replace(
        position=jnp.asarray([[0.0, 0.0], [60.0, 0.0], [-400.0, -300.0]]), holding=jnp.ones(3, bool)
    )
    p = calm()
    _, s1, _, _, _, info = STEP(jax.random.PRNGKey(0), s, action(drop=1), p)
    old, new = np.asarray(s.cells), np.asarray(s1.cells)
    became_wet = int(np.sum((old == HEALTHY) & (new == WET)))
    prepared = np.asarray(info["stats"]["preparing_trees"])
    assert prepared[0] > 0 and prepared[1] > 0
    assert prepared.sum() == became_wet  # no tree counted twice


def test_fire_out_pays_10_once_per_episode():
    s = set_cells(base_state(), [cell_of(-100.0, 0.0)], BURNING).replace(burning_count=jnp.int32(1))
    p = calm(burn_duration=1.0)  # the only fire burns out this step
    _, s1, _, _, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"][:, 2]), 10.0)
    np.testing.assert_allclose(np.asarray(info["stats"]["fire_out"]), 1.0)
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(1), s1, action(), p)
    np.testing.assert_allclose(np.asarray(info2["raw_reward_terms"][:, 2]), 0.0)
    _, _, _, _, _, info3 = STEP(
        jax.random.PRNGKey(1), s1, action(), p.replace(fire_out_mode=jnp.int32(EVERY_STEP))
    )
    np.testing.assert_allclose(np.asarray(info3["raw_reward_terms"][:, 2]), 10.0)


def test_fire_near_the_village_costs_50_once_and_x10_in_protect_village():
    s = base_state()
    vx, vz = (float(v) for v in s.village)
    near, far = cell_of(vx - 120.0, vz), cell_of(vx - 200.0, vz)
    p = ENV.variant_params(calm(), task=4)
    _, _, _, _, _, info_far = STEP(jax.random.PRNGKey(0), set_cells(s, [far], BURNING), action(), p)
    np.testing.assert_allclose(np.asarray(info_far["raw_reward_terms"][:, 3]), 0.0)
    s_near = set_cells(s, [near], BURNING)
    _, s1, _, _, _, info = STEP(jax.random.PRNGKey(0), s_near, action(), p)
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"][:, 3]), -50.0)
    np.testing.assert_allclose(np.asarray(info["reward_terms"][:, 3]), -500.0)
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(1), s1, action(), p)
    np.testing.assert_allclose(np.asarray(info2["raw_reward_terms"][:, 3]), 0.0)


def test_time_step_burning_any_versus_all_trees():
    s = set_cells(base_state(), [cell_of(-100.0, 0.0)], BURNING).replace(burning_count=jnp.int32(1))
    p = ENV.variant_params(calm(), task=3)
    _, _, r, _, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)
    np.testing.assert_allclose(np.asarray(info["reward_terms"][:, 4]), -0.01)
    np.testing.assert_allclose(np.asarray(r), -0.01 - 1.0 / 3000.0, rtol=1e-5)
    _, _, _, _, _, info_all = STEP(
        jax.random.PRNGKey(0), s, action(), p.replace(time_step_burning_mode=jnp.int32(1))
    )
    np.testing.assert_allclose(np.asarray(info_all["raw_reward_terms"][:, 4]), 0.0)  # healthy trees remain
    p0 = ENV.variant_params(calm(), task=0)
    _, _, _, _, _, info0 = STEP(jax.random.PRNGKey(0), s, action(), p0)
    np.testing.assert_allclose(np.asarray(info0["reward_terms"][:, 4]), 0.0)  # weight 0 outside task 3


def test_find_fire_and_find_village_pay_100_once_and_end_their_subtasks():
    s = base_state()
    vx, vz = (float(v) for v in s.village)
    fire_cell = cell_of(-400.0, 400.0)  # 90 m ahead of plane 0 after its move
    s = set_cells(s, [fire_cell], BURNING).replace(
        position=jnp.asarray([[-400.0, 300.0], [vx, vz - 150.0], [0.0, 0.0]]), burning_count=jnp.int32(1)
    )
    for task, column, agent in ((7, 5, 0), (8, 6, 1)):
        p = ENV.variant_params(calm(), task=task)
        _, s1, r, term, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)
        raw = np.asarray(info["raw_reward_terms"][:, column])
        expected = np.zeros(3)
        expected[agent] = 100.0
        np.testing.assert_allclose(raw, expected)
        np.testing.assert_allclose(float(r[agent]), 100.0)  # tasks 7, 8: only these terms and the border
        np.testing.assert_array_equal(np.asarray(term), expected > 0)
        _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(1), s1.replace(alive=jnp.ones(3, bool)), action(), p)
        assert float(info2["raw_reward_terms"][agent, column]) == 0.0  # once per plane


def test_reward_terms_are_raw_terms_times_the_task_row():
    _, s = RESET(hivex_jax.world_key(3), PARAMS)
    for task in range(9):
        p = ENV.variant_params(PARAMS, task=task)
        _, _, r, _, _, info = STEP(jax.random.PRNGKey(task), s, action(drop=1), p)
        w = np.asarray(TASK_WEIGHTS)[task]
        np.testing.assert_allclose(np.asarray(info["reward_terms"]), np.asarray(info["raw_reward_terms"]) * w)
        np.testing.assert_allclose(np.asarray(r), np.asarray(info["reward_terms"]).sum(-1), rtol=1e-5)
