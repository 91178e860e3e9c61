"""Whole-step behaviour on hand-made states over flat ground (terrain level 1: ground at half the level's
amplitude, station point 2 m above it, station at the origin): every reward term, seeds, the station,
energy and endings."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from dbr_helpers import KEY, action, flat_state

import hivex_jax
from hivex_jax.envs.drone_based_reforestation.params import (
    DROP_SEED,
    DROP_SUCCESS,
    FAR_DISTANCE_DELTA,
    FERTILITY_DELTA,
    FIND_CLOSE_TREE,
    GROUP_UP,
    LANDSCAPE_DELTA,
    PICK_UP,
    RETURN_FURTHEST,
    RUNNING_BACK,
    TASK_DROP_SEED,
    TASK_EXPLORE_AND_RETURN,
    TASK_FIND_CLOSEST_FOREST,
    TASK_GROUP_UP,
    TASK_HIGHEST_POINT,
    TASK_HIGHEST_POTENTIAL,
    TASK_PICK_UP_SEED,
    TERRAIN_LEVELS_LINEAR,
)

FOREST = ((100.0, 0.0, 20.0),)  # forest edge at x = 80 on the x axis
SEED_REWARD_20M = 20 * (75 - 20) / 72.5  # d_et = 20 m


@pytest.fixture(scope="module")
def params(env):
    return env.default_params()


def run(fns, state, act, params):
    return fns.step(KEY, state, act, params)


def test_drop_seed_valid_invalid_and_no_seed(env, fns, base_state, params):
    # drone 0: 20 m from the forest and 60 m from the station; drone 1: inside the forest; drone 2: no seed
    xz = [[60.0, 0.0], [100.0, 0.0], [60.0, 30.0]]
    s = flat_state(env, params, base_state, xz, holding=jnp.asarray([True, True, False]), forest=FOREST)
    obs, s1, reward, term, trunc, info = run(fns, s, action(env, drop=1), params)
    raw = np.asarray(info["raw_reward_terms"])
    expected_drop = SEED_REWARD_20M + 10 * 60 / 200
    np.testing.assert_allclose(raw[:, DROP_SEED], [expected_drop, 0.0, 0.0], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(s1.holding_seed), [False, False, False])
    assert int(s1.planted_count) == 2  # both drops landed on land
    np.testing.assert_allclose(np.asarray(s1.planted[:2]), [[60.0, 0.0], [100.0, 0.0]], atol=1e-4)
    np.testing.assert_array_equal(np.asarray(info["stats"]["tree_drop_count"]), [1, 1, 0])
    np.testing.assert_allclose(
        np.asarray(info["stats"]["cumulative_tree_drop_reward"]), [SEED_REWARD_20M, 0, 0], rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(info["stats"]["cumulative_distance_reward"]), [3.0, 0, 0], rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(info["stats"]["cumulative_distance_to_existing_trees"]), [20.0, 0.0, 0.0], atol=1e-4
    )
    np.testing.assert_array_equal(np.asarray(s1.run_back_active), [True, False, False])
    # main task: drop + energy (holding seeds at the start of the decision) + nothing else
    np.testing.assert_allclose(
        np.asarray(reward), [expected_drop - 0.005, -0.005, -0.0025], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(np.asarray(jnp.sum(info["reward_terms"], -1)), np.asarray(reward), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(s1.energy), [0.995, 0.995, 0.9975], rtol=1e-6)
    assert not bool(jnp.any(term))


def test_drop_next_to_a_planted_seed_and_new_tree_switch(env, fns, base_state, params):
    xz = [[60.0, 0.0], [60.0, 60.0], [-60.0, 0.0]]
    planted = [(61.0, 0.0), (60.0, 57.0)]
    s = flat_state(env, params, base_state, xz, holding=True, forest=FOREST, planted=planted)
    *_, info = run(fns, s, action(env, drop=1), params)
    raw = np.asarray(info["raw_reward_terms"])[:, DROP_SEED]
    assert raw[0] == 0.0  # d_nt = 1 m < d_otmin: invalid although d_et = 20 m
    # drone 1: d_et = |(60, 60) - (100, 0)| - 20 (existing trees only, default), d_nt = 3 m >= 2.5
    d_et = np.hypot(40.0, 60.0) - 20.0
    sdd = np.hypot(60.0, 60.0)
    assert raw[1] == pytest.approx(20 * (75 - d_et) / 72.5 + 10 * sdd / 200, rel=1e-5)
    assert raw[2] == 0.0  # 140 m from the forest: outside the band
    # switch: d_et over existing and planted trees ("existing and new trees"): 3 m to the planted seed
    new_trees = params.replace(drop_counts_new_trees=jnp.int32(1))
    *_, info = run(fns, s, action(env, drop=1), new_trees)
    expected = 20 * (75 - 3.0) / 72.5 + 10 * sdd / 200
    assert float(info["raw_reward_terms"][1, DROP_SEED]) == pytest.approx(expected, rel=1e-4)


def test_pick_up_and_recharge_at_station(env, fns, base_state, params):
    # 3 m from the station point at its height: inside the 7.5 m charging radius
    xz = [[3.0, 0.0], [0.0, 3.0], [30.0, 0.0]]
    s = flat_state(env, params, base_state, xz, height_above_ground=2.0, energy=0.5, forest=FOREST)
    s = s.replace(at_station=jnp.asarray([False, False, False]))
    _, s1, reward, _, _, info = run(fns, s, action(env), params)
    np.testing.assert_array_equal(np.asarray(s1.holding_seed), [True, True, False])
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"])[:, PICK_UP], [1, 1, 0])
    np.testing.assert_allclose(np.asarray(s1.energy), [0.5475, 0.5475, 0.4975], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(info["stats"]["recharge_energy_count"]), [1, 1, 0])
    # Pick-up Seed at Base weighs the pick-up 100x
    _, _, reward2, _, _, info2 = run(fns, s, action(env), env.variant_params(params, task=TASK_PICK_UP_SEED))
    np.testing.assert_allclose(np.asarray(info2["reward_terms"])[:, PICK_UP], [100, 100, 0])
    # a pick-up after an invalid drop is not paid (pick_up_earned False), but the seed is taken
    s2 = s.replace(pick_up_earned=jnp.zeros(3, bool))
    _, s3, _, _, _, info3 = run(fns, s2, action(env), params)
    np.testing.assert_allclose(np.asarray(info3["raw_reward_terms"])[:, PICK_UP], [0, 0, 0])
    np.testing.assert_array_equal(np.asarray(s3.holding_seed), [True, True, False])
    # no drops on the station pad
    s4 = flat_state(env, params, base_state, xz, height_above_ground=2.0, holding=True, forest=FOREST)
    _, s5, _, _, _, info5 = run(fns, s4, action(env, drop=1), params)
    np.testing.assert_array_equal(np.asarray(info5["stats"]["tree_drop_count"]), [0, 0, 1])


def test_empty_battery_ends_or_grounds_the_drone(env, fns, base_state, params):
    xz = [[60.0, 0.0], [60.0, 20.0], [60.0, -20.0]]
    energy = jnp.asarray([0.004, 0.5, 0.002])
    s = flat_state(env, params, base_state, xz, holding=jnp.asarray([True, True, False]), energy=energy)
    _, s1, _, term, _, info = run(fns, s, action(env, throttle=1.0), params)
    # 0.004 - 5/1000 (seed) < 0 and 0.002 - 5/2000 (no seed) < 0: both empty; 0.5 - 0.005 is not
    np.testing.assert_array_equal(np.asarray(term), [True, False, True])
    np.testing.assert_array_equal(np.asarray(info["stats"]["out_of_energy_count"]), [1, 0, 1])
    np.testing.assert_allclose(np.asarray(s1.energy), [0.0, 0.495, 0.0], atol=1e-6)
    assert not bool(s1.alive[0]) and bool(s1.alive[1])
    # switch: the drone lands and idles instead
    idle = params.replace(out_of_energy_ends_episode=jnp.int32(0))
    _, s2, _, term2, _, _ = run(fns, s, action(env, throttle=1.0), idle)
    assert not bool(term2[0]) and bool(s2.grounded[0])
    before = np.asarray(s2.position[0])
    _, s3, reward3, _, _, info3 = run(fns, s2, action(env, throttle=1.0, climb=1.0), idle)
    np.testing.assert_allclose(np.asarray(s3.position[0]), before)  # grounded drones do not move
    assert float(reward3[0]) == 0.0 and float(s3.energy[0]) == 0.0


def test_find_close_tree_pays_once_and_ends_only_its_task(env, fns, base_state, params):
    xz = [[60.0, 0.0], [59.0, 0.0], [-60.0, 0.0]]  # 20 m, 21 m and far from the forest edge
    s = flat_state(env, params, base_state, xz, forest=FOREST)
    task1 = env.variant_params(params, task=TASK_FIND_CLOSEST_FOREST)
    _, s1, reward, term, _, info = run(fns, s, action(env), task1)
    np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, FIND_CLOSE_TREE], [100, 0, 0])
    np.testing.assert_array_equal(np.asarray(term), [True, False, False])
    assert float(reward[0]) == pytest.approx(100 - 0.0025)
    # main task: the event happens (stat) but weighs 0 and ends nothing
    _, s2, _, term2, _, info2 = run(fns, s, action(env), params)
    assert not bool(jnp.any(term2))
    assert float(info2["stats"]["close_tree_found"][0]) == 1.0
    _, _, _, _, _, info3 = run(fns, s2, action(env), task1.replace(max_steps=jnp.int32(400)))
    assert float(info3["raw_reward_terms"][0, FIND_CLOSE_TREE]) == 0.0  # paid once per episode


def test_drop_seed_subtask_bonus_and_end(env, fns, base_state, params):
    xz = [[60.0, 0.0], [-60.0, 0.0], [0.0, 60.0]]  # drone 0 valid, drones 1 and 2 outside the band
    holding = jnp.asarray([True, True, False])
    s = flat_state(env, params, base_state, xz, holding=holding, forest=FOREST)
    task3 = env.variant_params(params, task=TASK_DROP_SEED)
    _, _, _, term, _, info = run(fns, s, action(env, drop=1), task3)
    np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, DROP_SUCCESS], [100, 100, 0])
    np.testing.assert_array_equal(np.asarray(term), [True, True, False])
    strict = task3.replace(drop_success_requires_valid=jnp.int32(1))
    _, _, _, term, _, info = run(fns, s, action(env, drop=1), strict)
    np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, DROP_SUCCESS], [100, 0, 0])
    np.testing.assert_array_equal(np.asarray(term), [True, False, False])
    # in the main task the bonus weighs 0 and the drone goes on
    _, _, _, term, _, info = run(fns, s, action(env, drop=1), params)
    assert float(info["reward_terms"][0, DROP_SUCCESS]) == 0.0 and not bool(term[0])


def test_group_up_task(env, fns, base_state, params):
    s = flat_state(env, params, base_state, [[50.0, 0.0], [53.0, 0.0], [-50.0, 40.0]])
    _, _, reward, _, _, info = run(fns, s, action(env), env.variant_params(params, task=TASK_GROUP_UP))
    np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, GROUP_UP], [10, 10, 0])
    np.testing.assert_allclose(np.asarray(reward), [10 - 0.0025, 10 - 0.0025, -0.0025], rtol=1e-6)


def test_highest_point_levels_and_switch(env, fns, base_state, params):
    task5 = env.variant_params(params, task=TASK_HIGHEST_POINT)
    linear = task5.replace(terrain_level_mode=jnp.int32(TERRAIN_LEVELS_LINEAR))
    cases = (
        (task5, 1, 0.5 * 40 * 1.18),  # flat shape 0.5 x the default amplitude: 40 x 1.18 at level 1 ...
        (task5, 10, 0.5 * 40),  # ... and 40 at levels 2-10
        (linear, 1, 2.0),  # the linear switch: amplitude 40 x level / 10
        (linear, 10, 20.0),
    )
    for base, level, ground in cases:
        p = env.variant_params(base, level=level)
        s = flat_state(env, p, base_state, [[50.0, 0.0], [0.0, 50.0], [-50.0, 0.0]], height_above_ground=10)
        _, s1, _, _, _, info = run(fns, s, action(env), p)
        np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, LANDSCAPE_DELTA], ground, rtol=1e-5)
        np.testing.assert_allclose(
            np.asarray(info["stats"]["highest_point_on_terrain_found"]), ground, rtol=1e-5
        )
        _, _, _, _, _, info2 = run(fns, s1, action(env), p)
        np.testing.assert_allclose(np.asarray(info2["reward_terms"])[:, LANDSCAPE_DELTA], 0.0)
        drone = p.replace(landscape_height_mode=jnp.int32(1))
        _, _, _, _, _, info3 = run(fns, s, action(env), drone)
        np.testing.assert_allclose(
            np.asarray(info3["raw_reward_terms"])[:, LANDSCAPE_DELTA], ground + 10, rtol=1e-5
        )


def test_explore_and_return(env, fns, base_state, params):
    task6 = env.variant_params(params, task=TASK_EXPLORE_AND_RETURN)
    s = flat_state(env, task6, base_state, [[30.0, 0.0], [0.0, 80.0], [3.0, 0.0]], height_above_ground=2.0)
    s = s.replace(trip_distance=jnp.asarray([0.0, 0.0, 120.0]), at_station=jnp.asarray([False, False, False]))
    _, s1, _, _, _, info = run(fns, s, action(env), task6)
    terms = np.asarray(info["reward_terms"])
    np.testing.assert_allclose(terms[:, FAR_DISTANCE_DELTA], [30 / 200, 80 / 200, 0.0], rtol=1e-5)
    np.testing.assert_allclose(terms[:, RETURN_FURTHEST], [0.0, 0.0, 120 / 200], rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(info["stats"]["furthest_distance_explored"]), [30, 80, 3], rtol=1e-5
    )
    assert float(s1.trip_distance[2]) == pytest.approx(3.0)  # the next trip starts from here
    metres = task6.replace(far_distance_divisor=jnp.float32(1.0))  # contradiction 10: metres
    *_, info = run(fns, s, action(env), metres)
    np.testing.assert_allclose(
        np.asarray(info["reward_terms"])[:, FAR_DISTANCE_DELTA], [30, 80, 0], rtol=1e-5
    )


def test_running_back_after_a_drop(env, fns, base_state, params):
    s = flat_state(
        env, params, base_state, [[60.0, 0.0], [-60.0, 0.0], [0.0, -60.0]], holding=True, forest=FOREST
    )
    _, s1, _, _, _, info = run(fns, s, action(env, drop=1), params)
    drop = float(info["raw_reward_terms"][0, DROP_SEED])
    quality = drop / 30.0
    y = float(s.position[0, 1])
    station_y = float(s.world.station[1])
    start = np.floor(np.hypot(60.0, y - station_y) / 2.5)
    assert float(s1.run_back_start[0]) == start
    # teleport drone 0 closer (no seed now: it returns), step without moving
    s2 = s1.replace(position=s1.position.at[0].set(jnp.asarray([50.0, y, 0.0])))
    _, s3, _, _, _, info = run(fns, s2, action(env), params)
    now = np.floor(np.hypot(50.0, y - station_y) / 2.5)
    expected = 20 * quality * (start - now) / (start - 3)
    np.testing.assert_allclose(
        np.asarray(info["raw_reward_terms"])[:, RUNNING_BACK], [expected, 0, 0], rtol=1e-5
    )
    # at the station the return ends: the rest of the budget is paid and the run stops
    s4 = s3.replace(position=s3.position.at[0].set(jnp.asarray([2.0, station_y, 0.0])))
    _, s5, _, _, _, info = run(fns, s4, action(env), params)
    expected_rest = 20 * quality * (now - 3) / (start - 3)
    assert float(info["raw_reward_terms"][0, RUNNING_BACK]) == pytest.approx(expected_rest, rel=1e-5)
    assert not bool(s5.run_back_active[0]) and bool(s5.holding_seed[0])


def test_high_fertility_location_delta(env, fns, base_state, params):
    # drone 0: 20 m from the forest edge (valid); drone 1: 1 m (inside d_otmin); drone 2: 2 m from a seed
    xz = [[60.0, 0.0], [79.0, 0.0], [60.0, 40.0]]
    s = flat_state(env, params, base_state, xz, forest=FOREST, planted=[(60.0, 42.0)])
    task4 = env.variant_params(params, task=TASK_HIGHEST_POTENTIAL)
    _, s1, reward, _, _, info = run(fns, s, action(env), task4)
    pot0 = (75 - 20) / 72.5
    np.testing.assert_allclose(np.asarray(info["reward_terms"])[:, FERTILITY_DELTA], [pot0, 0, 0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(reward), [pot0 - 0.0025, -0.0025, -0.0025], rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(info["stats"]["highest_potential_soil_found"]), [pot0, 0, 0], rtol=1e-5
    )
    # the same spot again pays nothing; a better one (10 m from the edge) pays the increase only
    _, _, _, _, _, info2 = run(fns, s1, action(env), task4)
    assert float(info2["reward_terms"][0, FERTILITY_DELTA]) == 0.0
    s2 = s1.replace(position=s1.position.at[0, 0].set(70.0))
    _, _, _, _, _, info3 = run(fns, s2, action(env), task4)
    expected = (75 - 10) / 72.5 - pot0
    assert float(info3["reward_terms"][0, FERTILITY_DELTA]) == pytest.approx(expected, rel=1e-4)
    # the main task does not weigh it
    _, _, _, _, _, info4 = run(fns, s, action(env), params)
    assert float(info4["reward_terms"][0, FERTILITY_DELTA]) == 0.0


def test_reforestation_band_switch_contradiction_5(env, fns, base_state, params):
    # figure legend: 2.5-15 m instead of d_otmax = 75 m; drones 10 m, 20 m and 14 m from the forest edge
    xz = [[70.0, 0.0], [60.0, 0.0], [0.0, 60.0]]
    forest = ((100.0, 0.0, 20.0), (0.0, 94.0, 20.0))
    s = flat_state(env, params, base_state, xz, holding=True, forest=forest)
    narrow = params.replace(drop_max_distance=jnp.float32(15.0))
    _, _, _, _, _, info = run(fns, s, action(env, drop=1), narrow)
    expected = [20 * (15 - 10) / 12.5 + 10 * 70 / 200, 0.0, 20 * (15 - 14) / 12.5 + 10 * 60 / 200]
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"])[:, DROP_SEED], expected, rtol=1e-4)
    _, _, _, _, _, info = run(fns, s, action(env, drop=1), params)  # default 75 m: all three pay
    expected = [20 * (75 - d) / 72.5 + 10 * sdd / 200 for d, sdd in ((10, 70), (20, 60), (14, 60))]
    np.testing.assert_allclose(np.asarray(info["raw_reward_terms"])[:, DROP_SEED], expected, rtol=1e-4)


def test_energy_penalty_unit_switch_contradiction_6(env, fns, base_state, params):
    s = flat_state(
        env, params, base_state, [[60.0, 0.0], [0.0, 60.0], [-60.0, 0.0]], holding=[True, False, True]
    )
    per_decision = params.replace(energy_penalty_per_substep=jnp.int32(0))
    for p, scale in ((params, 5.0), (per_decision, 1.0)):
        _, _, reward, _, _, _ = run(fns, s, action(env), p)
        np.testing.assert_allclose(
            np.asarray(reward), np.asarray([-1 / 1000, -1 / 2000, -1 / 1000]) * scale, rtol=1e-5
        )


def test_pick_up_seed_task_starts_away_from_the_station(env, fns):
    """Subtask rule [P]: random start in Pick-up Seed at Base; at the station in every other task."""
    base = env.default_params()
    task2 = env.variant_params(base, task=TASK_PICK_UP_SEED)
    far = 0
    for world in range(4):
        _, main = fns.reset(hivex_jax.world_key(world), base)
        station = np.asarray(main.world.station)
        d_main = np.linalg.norm(np.asarray(main.position) - station, axis=-1)
        assert np.all(d_main <= float(base.charge_radius)) and np.all(np.asarray(main.at_station))
        np.testing.assert_allclose(np.asarray(main.position[:, 1]), station[1], atol=1e-4)
        _, rand = fns.reset(hivex_jax.world_key(world), task2)
        xz = np.asarray(rand.position[:, (0, 2)])
        d = np.linalg.norm(xz - station[[0, 2]], axis=-1)
        assert np.all(d <= float(base.random_spawn_radius) + 1e-3)
        np.testing.assert_allclose(
            np.asarray(rand.position[:, 1] - rand.ground), float(base.random_spawn_height), atol=1e-3
        )
        d_3d = np.linalg.norm(np.asarray(rand.position) - station, axis=-1)  # charging radius is 3-D
        np.testing.assert_array_equal(np.asarray(rand.at_station), d_3d <= float(base.charge_radius))
        far += int(np.sum(d > float(base.charge_radius)))
    assert far >= 10  # of 12 drones: (7.5 / 120)^2 of the disc is inside the charging radius
