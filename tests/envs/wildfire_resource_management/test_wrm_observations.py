"""Observation layout and normalisation, statistics bookkeeping, global state, render."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.wildfire_resource_management import generator
from hivex_jax.envs.wildfire_resource_management.dynamics import ADD
from hivex_jax.envs.wildfire_resource_management.generator import BURNING, BURNT
from hivex_jax.envs.wildfire_resource_management.params import SUPPORT_RECEIVED


def test_observation_features_and_normalisation(env, fns, params):
    obs, state = fns.reset(hivex_jax.world_key(21), params)
    v = np.asarray(obs["vector"])
    assert v.shape == (9, 7) and np.all(np.abs(v) <= 1.0)
    layout = env.observation_layout()
    # closest fire (x, elevation, z) / 600, on a burning cell
    np.testing.assert_allclose(
        v[:, layout["fire_position"]], np.asarray(state.fire_position) / 600.0, rtol=1e-6
    )
    cells = np.floor((np.asarray(state.fire_position[:, [2, 0]]) * [-1, 1] + 600.0) / 37.5).astype(int)
    assert np.all(np.asarray(state.fire)[cells[:, 0], cells[:, 1]] == BURNING)
    # local weather: the tower's base weather plus the island-wide cycle, / (42, 100, 100)
    offsets = generator.weather_offsets(state.weather_phase, jnp.float32(0.0), params)
    weather = np.clip(np.asarray(state.tower_weather + offsets), 0, [42, 100, 100]) / [42, 100, 100]
    np.testing.assert_allclose(v[:, 3:6], weather, rtol=1e-5)
    assert np.all(v[:, 6] == 0.0)  # nothing handed out yet
    # support: resources handed out / budget (default) or held / most holdable
    act = {"continuous": jnp.zeros((9, 0)), "discrete": jnp.full((9, 4), ADD)}
    obs, state, *_ = fns.step(jax.random.PRNGKey(0), state, act, params)
    np.testing.assert_allclose(obs["vector"][:, 6], 0.4, rtol=1e-5)
    held = params.replace(support_observation=jnp.int32(SUPPORT_RECEIVED))
    obs, *_ = fns.step(jax.random.PRNGKey(0), state, act, held)
    received = 0.2 + 0.2 * generator.in_degree()  # after two steps of adding 0.1 everywhere
    np.testing.assert_allclose(obs["vector"][:, 6], received / (1.0 + generator.in_degree()), rtol=1e-5)


def test_statistics_match_hivex_bookkeeping(env, fns, params):
    """Summed over an episode (as `EpisodeStatistics` does), the stats are HIVEX's per-episode values:
    Individual Resource Count is the count at the end (the increments telescope), and the weighted
    reward statistics add up to the return."""
    _, state = fns.reset(hivex_jax.world_key(4), params)
    space = env.action_space(params)
    sums = {}
    total_return = np.zeros(9)
    for t in range(12):
        _, state, reward, _, _, info = fns.step(
            jax.random.PRNGKey(t), state, space.sample(jax.random.PRNGKey(t)), params
        )
        total_return += np.asarray(reward)
        for k, v in info["stats"].items():
            sums[k] = sums.get(k, 0.0) + np.asarray(v)
    np.testing.assert_allclose(sums["individual_resource_count"], state.allocation.sum(-1), atol=1e-5)
    total = (
        sums["reward_for_moving_resources_to_self"]
        + sums["reward_for_moving_resources_to_neighbours"]
        + sums["collective_performance"]
    )
    np.testing.assert_allclose(total, total_return, rtol=1e-5)


def test_global_state_and_render(env, fns, params):
    _, state = fns.reset(hivex_jax.world_key(8), params)
    gs = fns.global_state(state, params)
    assert gs.shape == (9 * 7 + 9 * 4 + 9 + 2 * 64 + 3,) and bool(jnp.all(jnp.isfinite(gs)))
    burning_map = np.asarray(gs[108:172]).reshape(8, 8)
    fire = np.asarray(state.fire == BURNING).reshape(8, 4, 8, 4).mean((1, 3))
    np.testing.assert_allclose(burning_map, fire)
    frame = np.asarray(fns.render(state, params))
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    # burning cells are drawn orange
    r, c = np.argwhere(np.asarray(state.fire) == BURNING)[0]
    pixel = frame[int((r + 0.5) * 8), int((c + 0.5) * 8)]
    assert pixel[0] > 200 and pixel[2] < 80
    burnt = state.replace(fire=jnp.where(state.fire == BURNING, BURNT, state.fire).astype(jnp.uint8))
    assert not np.array_equal(np.asarray(fns.render(burnt, params)), frame)
