"""Kinematics by hand on flat ground, terrain blocking, and invariants of random rollouts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dbr_helpers import KEY, action, flat_state

import hivex_jax
from hivex_jax.envs.drone_based_reforestation.generator import ground_height, terrain_shape
from hivex_jax.eval import random_policy


@pytest.fixture(scope="module")
def params(env):
    return env.default_params()


def lagged_sum(target: float, params) -> float:
    """Distance covered in one decision from rest towards `target` m/s (5 substeps, first-order lag)."""
    dt = float(params.substep_seconds)
    lag = 1.0 - np.exp(-dt / float(params.response_seconds))
    return sum(target * (1.0 - (1.0 - lag) ** k) * dt for k in range(1, 6))


def test_throttle_steer_climb_by_hand(env, fns, base_state, params):
    xz = [[0.0, 100.0], [0.0, -100.0], [-100.0, 0.0]]
    s = flat_state(env, params, base_state, xz, height_above_ground=10.0, yaw=0.0)
    _, s1, *_ = fns.step(KEY, s, action(env, throttle=1.0), params)  # forward = +x at yaw 0
    np.testing.assert_allclose(
        np.asarray(s1.position[:, 0] - s.position[:, 0]), lagged_sum(6.0, params), rtol=1e-4
    )
    np.testing.assert_allclose(np.asarray(s1.position[:, 2]), np.asarray(s.position[:, 2]), atol=1e-5)
    _, s2, *_ = fns.step(KEY, s, action(env, steer=1.0), params)  # right turn: 90 deg/s for 0.5 s
    np.testing.assert_allclose(np.asarray(s2.yaw), -np.pi / 4, rtol=1e-5)
    _, s3, *_ = fns.step(KEY, s, action(env, climb=1.0), params)
    np.testing.assert_allclose(
        np.asarray(s3.position[:, 1] - s.position[:, 1]), lagged_sum(3.0, params), rtol=1e-4
    )
    # the ceiling and the ground clearance bound the height
    ground = float(s.ground[0])
    high = flat_state(env, params, base_state, xz, height_above_ground=59.5 - ground)  # + 0.88 m climb > 60
    _, s4, *_ = fns.step(KEY, high, action(env, climb=1.0), params)
    np.testing.assert_allclose(np.asarray(s4.position[:, 1]), 60.0)
    low = flat_state(env, params, base_state, xz, height_above_ground=1.2)
    _, s5, *_ = fns.step(KEY, low, action(env, climb=-1.0), params)
    np.testing.assert_allclose(np.asarray(s5.position[:, 1]), ground + 1.0, rtol=1e-6)  # ground + 1 m


def test_rising_ground_blocks_until_the_drone_climbs(env, fns, base_state, params):
    level10 = env.variant_params(params, level=10)
    s = flat_state(env, level10, base_state, [[0.0, 100.0], [0.0, -100.0], [-100.0, 0.0]], yaw=0.0)
    # one plane wave along x: the ground rises towards +x everywhere near x = 0
    waves = jnp.zeros_like(s.world.terrain_waves).at[0].set(jnp.asarray([0.05, 0.0]))
    world = s.world.replace(terrain_waves=waves)
    xz = s.position[:, (0, 2)]
    ground = ground_height(terrain_shape(world, xz, level10), level10)
    clearance = float(level10.ground_clearance)
    pos = s.position.at[:, 1].set(ground + clearance)
    s = s.replace(world=world, position=pos, ground=ground)
    _, blocked, *_ = fns.step(KEY, s, action(env, throttle=1.0), level10)
    np.testing.assert_allclose(np.asarray(blocked.position), np.asarray(pos), atol=1e-5)
    np.testing.assert_allclose(np.asarray(blocked.speed), 0.0)
    _, climbing, *_ = fns.step(KEY, blocked, action(env, throttle=0.5, climb=1.0), level10)
    _, climbing, *_ = fns.step(KEY, climbing, action(env, throttle=0.5, climb=1.0), level10)
    assert bool(jnp.all(climbing.position[:, 0] > pos[:, 0]))  # climbing lets it over the slope
    g = ground_height(terrain_shape(world, climbing.position[:, (0, 2)], level10), level10)
    assert bool(jnp.all(climbing.position[:, 1] >= g + clearance - 1e-4))


@pytest.mark.parametrize("world, level", [(3, 10), (4, 5)])
def test_random_rollout_invariants(env, fns, world, level):
    params = env.variant_params(env.default_params(), level=level)
    obs, s = fns.reset(hivex_jax.world_key(world), params)
    e = float(params.arena_half_extent)
    key = jax.random.PRNGKey(world)
    drops = 0
    policy = random_policy(env)  # the project's random baseline: uniform over the action space
    for _ in range(48):
        key, k_act, k_step = jax.random.split(key, 3)
        act = policy(None, k_act, obs, s)
        obs, s1, reward, term, trunc, info = fns.step(k_step, s, act, params)
        energy = np.asarray(s1.energy)
        assert np.all((energy >= 0.0) & (energy <= 1.0))
        charged = np.asarray(s1.at_station)
        assert np.all((energy <= np.asarray(s.energy) + 1e-7) | charged)  # only the station adds energy
        # away from the station the battery drains 5 x 1/2000 per decision, twice that with a seed
        drain = np.where(np.asarray(s.holding_seed), 1 / 1000, 1 / 2000) * 5 * np.asarray(s.alive)
        away = ~charged
        expected = np.maximum(np.asarray(s.energy) - drain, 0.0)
        np.testing.assert_allclose(energy[away], expected[away], atol=1e-6)
        pos = np.asarray(s1.position)
        assert np.all(np.abs(pos[:, (0, 2)]) <= e + 1e-4) and np.all(pos[:, 1] <= 60.0 + 1e-4)
        g = ground_height(terrain_shape(s1.world, s1.position[:, (0, 2)], params), params)
        assert np.all(pos[:, 1] >= np.asarray(g) + float(params.ground_clearance) - 1e-3)
        np.testing.assert_allclose(np.asarray(s1.ground), np.asarray(g), atol=1e-3)
        was_out = ~np.asarray(s.alive)
        np.testing.assert_array_equal(pos[was_out], np.asarray(s.position)[was_out])  # out drones stay
        assert np.all(np.asarray(reward)[was_out] == 0.0)
        assert np.isfinite(np.asarray(obs["vector"])).all()
        # seeds: taken only within the charging radius, lost only by a drop (at most one carried)
        held, holds = np.asarray(s.holding_seed), np.asarray(s1.holding_seed)
        dropped = np.asarray(info["stats"]["tree_drop_count"]) == 1.0
        picked = np.asarray(info["stats"]["seed_pick_up_count"]) == 1.0
        np.testing.assert_array_equal(
            dropped,
            held
            & (np.asarray(act["discrete"][:, 0]) == 1)
            & ~was_out
            & ~(np.linalg.norm(pos - np.asarray(s.world.station), axis=-1) <= float(params.charge_radius)),
        )
        assert np.all(~picked | np.asarray(s1.at_station))
        np.testing.assert_array_equal(holds, (held & ~dropped) | picked)
        new_seeds = int(s1.planted_count) - int(s.planted_count)
        assert 0 <= new_seeds <= int(np.sum(dropped))
        cap = s1.planted.shape[0]
        for slot in (int(s.planted_count) + np.arange(new_seeds)) % cap:  # planted where a drone dropped
            gap = np.linalg.norm(pos[dropped][:, (0, 2)] - np.asarray(s1.planted[slot]), axis=-1)
            assert gap.min() < 1e-4
        drops += int(np.sum(dropped))
        assert int(s1.planted_count) <= drops
        s = s1
    assert int(s.step) == 48
