"""AerialWildfireSuppression-v0: conformance, hand-computed rewards, fire and flight invariants."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.check import _jitted, check_env
from hivex_jax.envs.aerial_wildfire_suppression import AerialWildfireSuppression, scripted_policy
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import (
    block_spread_probabilities,
    dryness,
    ignition_probability_fast,
)
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_centres, cell_size
from hivex_jax.envs.aerial_wildfire_suppression.observations import LAYOUT, PALETTE_RGB
from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BARE,
    BURNING,
    BURNT,
    EVERY_STEP,
    HEALTHY,
    LAKE,
    OUTSIDE,
    SEA,
    TASK_WEIGHTS,
    VILLAGE,
    WET,
)
from hivex_jax.procgen import fire

ENV = AerialWildfireSuppression()
PARAMS = ENV.default_params()
G = ENV.grid_size
# The conformance checker's compiled functions: one compilation serves every test of this env.
RESET = _jitted(ENV).reset
STEP = _jitted(ENV).step
POLICY = jax.jit(scripted_policy)
SAMPLE = jax.jit(ENV.action_space(PARAMS).sample)
K = len(ENV.reward_term_names)


def action(steer=0.0, drop=0, a=3):
    return {
        "continuous": jnp.full((a, 1), steer, jnp.float32),
        "discrete": jnp.full((a, 1), drop, jnp.int32),
    }


@functools.lru_cache(maxsize=1)
def base_state():
    """World 0 with no fire, planes parked far apart over the island, heading north, empty tanks."""
    _, s = RESET(hivex_jax.world_key(0), PARAMS)
    cells = jnp.where(s.cells == BURNING, jnp.uint8(HEALTHY), s.cells)
    return s.replace(
        cells=cells,
        position=jnp.asarray([[-400.0, 300.0], [0.0, 300.0], [-400.0, -300.0]]),
        heading=jnp.full(3, jnp.pi / 2),
        holding=jnp.zeros(3, bool),
        in_zone=jnp.zeros(3, bool),
        burning_count=jnp.int32(0),
    )


def calm(**kw):
    """Params with no fire spread or burn-out (transitions happen only by hand)."""
    quiet = {"spread_probability": 0.0, "burn_duration": 1e9, "wet_duration": 1e9, **kw}
    return PARAMS.replace(**{k: jnp.float32(v) for k, v in quiet.items()})


def cell_of(x, z, params=PARAMS):
    cs = float(cell_size(params, G))
    half = G * cs / 2
    return int((half - z) // cs), int((x + half) // cs)


def set_cells(state, coords, code):
    cells = np.asarray(state.cells).copy()
    for r, c in coords:
        cells[r, c] = code
    return state.replace(cells=jnp.asarray(cells))


# ----------------------------------------------------------------------------------- conformance
def test_check_env_default_and_mixed_batch():
    check_env(ENV, PARAMS)  # eager vs jit, determinism, and one compiled step for all 9 tasks x 10 levels


@pytest.mark.parametrize("task", range(9))
def test_check_env_every_task(task):
    check_env(ENV, ENV.variant_params(PARAMS, task=task), eager=False, mixed=False)


@pytest.mark.parametrize("level", range(1, 11))
def test_check_env_every_level(level):
    check_env(ENV, ENV.variant_params(PARAMS, level=level), eager=False, mixed=False)


@pytest.mark.slow  # two more full compilations (~1 min each on a busy 2-core CPU)
@pytest.mark.parametrize("num_agents", [1, 12])
def test_check_env_smallest_and_largest_agent_count(num_agents):
    env, params = hivex_jax.make("AerialWildfireSuppression-v0", num_agents=num_agents)
    check_env(env, params, eager=False, mixed=False)


def test_registered_default_and_spaces():
    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    assert env.num_agents == 3 and env.continuous_dims == 1 and env.discrete_branches == (2,)
    space = env.observation_space(params)
    assert space["vector"].shape == (3, 8) and space["visual"].shape == (3, 42, 42, 3)
    assert space["visual"].dtype == jnp.uint8
    assert int(params.max_steps) == 3000
    np.testing.assert_array_equal(np.asarray(params.task_weights), np.asarray(TASK_WEIGHTS))
    with pytest.raises(ValueError):
        AerialWildfireSuppression(num_agents=4)


def test_reset_observation_matches_reference_sample():
    obs, s = RESET(hivex_jax.world_key(6000), PARAMS)
    v = np.asarray(obs["vector"])
    assert np.all(v[:, 4] == 1.0)  # planes start holding water
    np.testing.assert_array_equal(v[:, 5:8], [[-1.0, -1.0, 0.0]] * 3)  # nothing observed yet
    assert np.all(np.abs(v[:, 1]) > 0.8)  # over the south water girdle, like z = -632 in the sample
    np.testing.assert_allclose(np.linalg.norm(v[:, 2:4], axis=-1), 1.0, atol=1e-5)
    assert int(s.burning_count) > 0
    zero_fwd, _ = RESET(hivex_jax.world_key(6000), PARAMS.replace(forward_zero_at_reset=jnp.int32(1)))
    np.testing.assert_array_equal(np.asarray(zero_fwd["vector"])[:, 2:4], 0.0)


def test_vector_size_nine_and_grey_camera_switches():
    env = AerialWildfireSuppression(vector_size=9, camera_channels=1)
    obs, s = _jitted(env).reset(hivex_jax.world_key(0), PARAMS)
    assert obs["vector"].shape == (3, 9) and np.all(np.asarray(obs["vector"])[:, 8] == 0.0)
    assert obs["visual"].shape == (3, 42, 42, 1)
    obs, *_ = _jitted(env).step(jax.random.PRNGKey(0), s, action(drop=1), PARAMS)
    assert obs["vector"].shape == (3, 9) and np.all(np.asarray(obs["vector"])[:, 8] == 0.0)


# ------------------------------------------------------------------------------------- rewards
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


def test_pickup_zone_switches():
    from hivex_jax.envs.aerial_wildfire_suppression.dynamics import in_pickup_zone

    pos = jnp.asarray([[700.0, 0.0], [0.0, 0.0], [760.0, 0.0], [-650.0, 640.0]])
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, PARAMS)), [True, False, False, True])
    literal = PARAMS.replace(pickup_zone_mode=jnp.int32(1))  # eq. 50 as printed: "or" inside the border
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, literal)), [True, False, True, True])
    wide = PARAMS.replace(water_girdle_width=jnp.float32(300.0))  # contradiction 13: island 900 x 900
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, wide)), [True, False, False, True])
    assert bool(in_pickup_zone(jnp.asarray([[500.0, 0.0]]), wide)[0])


def test_refill_of_an_empty_tank_only_with_the_switch():
    s = base_state().replace(position=jnp.asarray([[700.0, 0.0], [0.0, 300.0], [-400.0, -300.0]]))
    s = s.replace(heading=jnp.asarray([jnp.pi / 2] * 3), in_zone=jnp.asarray([True, False, False]))
    p = calm().replace(pickup_requires_empty_tank=jnp.int32(1))
    _, s1, _, _, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)  # plane 0 stays over the water
    assert float(info["stats"]["water_pickup"][0]) == 1.0 and bool(s1.holding[0])  # empty tank refilled
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(0), s1, action(), p)
    assert float(info2["stats"]["water_pickup"][0]) == 0.0  # already full
    _, _, _, _, _, info3 = STEP(jax.random.PRNGKey(0), s, action(), calm())
    assert float(info3["stats"]["water_pickup"][0]) == 0.0  # default: only entering the water counts


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


# ------------------------------------------------------------------------------------ dynamics
def test_fast_ignition_equals_procgen_fire_on_planar_ground():
    p = PARAMS.replace(diagonal_spread_weight=jnp.float32(1.0))
    grad = jnp.asarray([0.15, -0.08])
    b = G // 4
    slope = jnp.broadcast_to(grad, (b, b, 2))
    now = {
        "wind": jnp.asarray([0.6, 0.8]),
        "wind_speed": jnp.float32(0.7),
        "temperature": 25.0,
        "humidity": 40.0,
    }
    block_p = block_spread_probabilities(slope, now, p)
    burning = jax.random.uniform(jax.random.PRNGKey(0), (G, G)) < 0.2
    xs, zs = cell_centres(p, G)
    heights = grad[0] * xs[None, :] + grad[1] * zs[:, None]
    expected = fire.ignition_probability(
        burning,
        heights,
        now["wind"] * now["wind_speed"],
        p.spread_probability,
        p.wind_spread_factor,
        p.slope_spread_factor,
        cell_size(p, G),
    )
    np.testing.assert_allclose(
        np.asarray(ignition_probability_fast(burning, block_p)), np.asarray(expected), atol=1e-6
    )


def test_spread_is_faster_downwind_uphill_and_in_hot_dry_weather():
    from hivex_jax.envs.aerial_wildfire_suppression.dynamics import SPREAD_DIRECTIONS

    east = int(np.argmax(SPREAD_DIRECTIONS[:, 0]))  # spreading towards +x
    west = int(np.argmin(SPREAD_DIRECTIONS[:, 0]))
    flat = jnp.zeros((2, 2, 2))
    base = {"temperature": 25.0, "humidity": 40.0, "wind_speed": jnp.float32(1.0)}
    p = block_spread_probabilities(flat, {**base, "wind": jnp.asarray([1.0, 0.0])}, PARAMS)
    assert float(p[0, 0, east]) > float(p[0, 0, west])  # downwind
    uphill_east = jnp.broadcast_to(jnp.asarray([0.3, 0.0]), (2, 2, 2))
    p = block_spread_probabilities(
        uphill_east, {**base, "wind_speed": jnp.float32(0.0), "wind": jnp.zeros(2)}, PARAMS
    )
    assert float(p[0, 0, east]) > float(p[0, 0, west])  # uphill
    assert float(dryness(40.0, 15.0, PARAMS)) > 1.0 > float(dryness(15.0, 70.0, PARAMS))


def test_fire_invariants_over_a_random_rollout():
    p = PARAMS.replace(spread_probability=jnp.float32(0.2), wet_duration=jnp.float32(5.0))
    _, s = RESET(hivex_jax.world_key(11), p)
    states = [s]
    for k in jax.random.split(jax.random.PRNGKey(0), 60):
        k1, k2 = jax.random.split(k)
        a = SAMPLE(k1)
        a = {"continuous": a["continuous"] * 0.2, "discrete": a["discrete"]}
        _, new, *_ = STEP(k2, states[-1], a, p)
        states.append(new.replace(alive=jnp.ones(3, bool), holding=jnp.ones(3, bool)))  # keep dropping
    cells = np.stack([np.asarray(x.cells) for x in states[1:]])
    pos = np.stack([np.asarray(x.position) for x in states[1:]])
    heading = np.stack([np.asarray(x.heading) for x in states[1:]])
    cells = np.concatenate([np.asarray(s.cells)[None], np.asarray(cells)])
    fixed = np.isin(cells[0], [BARE, LAKE, VILLAGE])
    assert np.all(cells[:, fixed] == cells[0, fixed][None])  # no tree ever appears or vanishes
    burnt = cells == BURNT
    assert np.all(burnt[1:] >= burnt[:-1])  # burnt stays burnt
    assert np.all(np.diff(burnt.sum(axis=(1, 2))) >= 0)
    prev, new = cells[:-1], cells[1:]
    assert not np.any((prev == WET) & (new == BURNING))  # wet trees do not ignite
    assert not np.any((prev == BURNT) & (new != BURNT))
    ignited = (prev == HEALTHY) & (new == BURNING)
    padded = np.pad(prev == BURNING, ((0, 0), (1, 1), (1, 1)))
    neighbour_fire = np.zeros_like(ignited)
    for dr, dc in fire.NEIGHBOUR_OFFSETS:
        neighbour_fire |= padded[:, 1 + dr : 1 + dr + G, 1 + dc : 1 + dc + G]
    assert ignited.sum() > 0 and not np.any(ignited & ~neighbour_fire)  # fire only spreads to neighbours
    assert np.any((prev == WET) & (new == HEALTHY))  # wet trees dry
    steps = np.linalg.norm(
        np.diff(np.concatenate([np.asarray(s.position)[None], np.asarray(pos)]), axis=0), axis=-1
    )
    np.testing.assert_allclose(steps, 10.0, rtol=1e-4)  # planes always fly forward at their speed
    turn = np.diff(
        np.unwrap(np.concatenate([np.asarray(s.heading)[None], np.asarray(heading)]), axis=0), axis=0
    )
    assert np.all(np.abs(turn) <= np.deg2rad(15.0) * 0.2 + 1e-5)


def test_camera_shows_the_state_under_the_plane():
    s = base_state()
    r, c = cell_of(0.0, 310.0)
    s = set_cells(s, [(r, c)], BURNING)
    obs, _, _, _, _, _ = STEP(jax.random.PRNGKey(0), s, action(), calm())
    image = np.asarray(obs["visual"])
    assert image.dtype == np.uint8
    # Plane 1 is now at (0, 310), over the burning tree: the image centre is fire-coloured.
    np.testing.assert_array_equal(image[1, 21, 21], PALETTE_RGB[BURNING])  # pixel centre (5, 305)
    v = np.asarray(obs["vector"])
    xs, zs = (np.asarray(t) for t in cell_centres(PARAMS, G))
    np.testing.assert_allclose(v[1, LAYOUT["closest_tree"]], [xs[c] / 750, zs[r] / 750], atol=1e-6)
    assert v[1, 7] == 1.0 and v[0, 7] == 0.0  # plane 0 sees trees, none burning
    # A plane over the sea near the border sees sea, and black beyond the border.
    s2 = s.replace(position=jnp.asarray([[0.0, 700.0], [0.0, 300.0], [-400.0, -300.0]]))
    obs2, *_ = STEP(jax.random.PRNGKey(0), s2, action(), calm())
    colours = {tuple(px) for px in np.asarray(obs2["visual"])[0].reshape(-1, 3)}
    assert tuple(PALETTE_RGB[SEA]) in colours and tuple(PALETTE_RGB[OUTSIDE]) in colours


def test_scripted_policy_beats_random_on_a_held_out_world():
    p = ENV.variant_params(PARAMS, level=5)
    returns = {}
    for policy in ("heuristic", "random"):
        obs, s = RESET(hivex_jax.world_key(6000), p)
        total = np.zeros(3)
        for k in jax.random.split(jax.random.PRNGKey(0), 400):
            k1, k2 = jax.random.split(k)
            a = POLICY(obs, p) if policy == "heuristic" else SAMPLE(k1)
            obs, s, r, *_ = STEP(k2, s, a, p)
            total += np.asarray(r)
        returns[policy] = total.mean()
    assert returns["heuristic"] > returns["random"] + 100.0, returns


def test_reset_episode_keeps_the_world_and_same_world_autoreset_uses_it():
    from hivex_jax.wrappers import SameWorldAutoReset

    _, s = RESET(hivex_jax.world_key(5), PARAMS)
    for _ in range(3):
        _, s, *_ = STEP(jax.random.PRNGKey(0), s, action(drop=1), PARAMS)
    _, fresh = jax.jit(ENV.reset_episode)(jax.random.PRNGKey(7), s, PARAMS)
    old, new = np.asarray(s.cells), np.asarray(fresh.cells)
    tree = lambda c: np.isin(c, [HEALTHY, BURNING, BURNT, WET])  # noqa: E731
    np.testing.assert_array_equal(tree(old), tree(new))  # same forest
    np.testing.assert_array_equal(old[~tree(old)], new[~tree(new)])  # same lakes, village, bare ground
    assert set(np.unique(new[tree(new)])) == {HEALTHY, BURNING} and int(fresh.burning_count) > 0
    np.testing.assert_array_equal(np.asarray(fresh.slope), np.asarray(s.slope))
    assert int(fresh.step) == 0 and bool(jnp.all(fresh.holding)) and int(fresh.num_trees) == int(s.num_trees)

    wrapped = SameWorldAutoReset(ENV)
    p = PARAMS.replace(max_steps=jnp.int32(2))
    _, ws = wrapped.reset(hivex_jax.world_key(5), p)
    step = jax.jit(wrapped.step)
    _, ws1, _, _, _, info1 = step(jax.random.PRNGKey(1), ws, action(), p)
    _, ws2, _, _, trunc, info2 = step(jax.random.PRNGKey(2), ws1, action(), p)
    assert not bool(info1["done"]) and bool(info2["done"]) and bool(jnp.all(trunc))
    assert int(ws2.step) == 0  # a new episode ...
    np.testing.assert_array_equal(tree(np.asarray(ws2.cells)), tree(np.asarray(ws.cells)))  # ... same world


def test_render_and_global_state():
    _, s = RESET(hivex_jax.world_key(0), PARAMS)
    frame = np.asarray(_jitted(ENV).render(s, PARAMS))
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8 and frame.std() > 10
    gs = _jitted(ENV).global_state(s, PARAMS)
    assert gs.shape == (3 * 9 + 11 + 2 * (G // 4) ** 2,) and bool(jnp.all(jnp.isfinite(gs)))
