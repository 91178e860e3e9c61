"""The observation options (not in HIVEX): `approach_features`, the nearest vessel's closest approach in the
vessel's own frame (6 floats), and `border_features`, the distances to the border (2 floats), after the
standard 6 of each frame; the scripted controller reads the standard ones and plays the same episode with the
options as without."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import heuristics, observations
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams


def test_a_head_on_approach_by_hand():
    # vessel 0 at the origin heading north (+z); vessel 1 10 m east, 40 m north, drifting south 1 m per
    # sub-step (5 per decision); vessel 2 far away, still
    positions = jnp.asarray([[0.0, 0.0], [10.0, 40.0], [150.0, -150.0]])
    velocities = jnp.asarray([[0.0, 0.0], [0.0, -1.0], [0.0, 0.0]])
    forward = jnp.asarray([[0.0, 1.0], [0.0, -1.0], [1.0, 0.0]])
    present = jnp.ones(3, bool)
    got = np.asarray(
        jax.jit(observations.closest_approach, static_argnums=4)(positions, velocities, forward, present, 5)
    )
    # offset (10, 40): 40 m ahead, 10 m to starboard; closest in 8 decisions, passing 10 m to starboard
    np.testing.assert_allclose(
        got[0], [2.0, 0.5, 0.0, 0.5, 0.8, np.sqrt(1700.0) / 20.0], rtol=1e-6, atol=1e-6
    )
    # seen from vessel 1 (heading south): vessel 0 is 40 m ahead and 10 m to starboard (west), same miss
    np.testing.assert_allclose(
        got[1], [2.0, 0.5, 0.0, 0.5, 0.8, np.sqrt(1700.0) / 20.0], rtol=1e-6, atol=1e-6
    )
    # vessel 2's nearest is vessel 0 (212 m): lengths clip at 5 (100 m); no closing speed: time 0
    assert got[2, 5] == 5.0 and got[2, 4] == 0.0
    # alone (the others out): distance 5, everything else 0
    alone = observations.closest_approach(
        positions, velocities, forward, jnp.asarray([True, False, False]), 5
    )
    np.testing.assert_array_equal(np.asarray(alone[0]), [0.0, 0.0, 0.0, 0.0, 0.0, 5.0])


def test_border_distances_by_hand():
    positions = jnp.asarray([[0.0, 0.0], [190.0, 0.0], [100.0, -150.0]])
    forward = jnp.asarray([[1.0, 0.0], [0.0, 1.0], [0.6, -0.8]])
    got = np.asarray(observations.border_distances(positions, forward, OceanPlasticParams()))
    # the centre: 200 m both ways, clipped to 100 m; 190 m east heading north: 200 m ahead, 10 m to the east
    # border; heading south-east from (100, -150): the south border in 50 / 0.8 = 62.5 m, nearest 50 m
    np.testing.assert_allclose(got, [[5.0, 5.0], [5.0, 0.5], [3.125, 2.5]], rtol=1e-6)


def test_extra_layout_follows_the_standard_floats_in_option_order():
    both = observations.extra_layout(approach=True, border=True)
    assert both["neighbour_offset_local"] == slice(6, 8) and both["neighbour_distance"] == slice(11, 12)
    assert both["border_distance_ahead"] == slice(12, 13) and both["border_distance"] == slice(13, 14)
    assert observations.extra_layout(approach=False, border=True) == {
        "border_distance_ahead": slice(6, 7),
        "border_distance": slice(7, 8),
    }


def test_standard_frames_reads_the_standard_floats_of_each_frame():
    vector = jnp.arange(24.0).reshape(1, 24)  # two frames of 12: [6 standard, 6 approach] each
    newest, previous = heuristics.standard_frames(vector, 12)
    np.testing.assert_array_equal(np.asarray(newest), [np.arange(12.0, 18.0)])
    np.testing.assert_array_equal(np.asarray(previous), [np.arange(0.0, 6.0)])
    newest, previous = heuristics.standard_frames(vector[:, :12], 6)  # two standard frames of 6
    np.testing.assert_array_equal(np.asarray(newest), [np.arange(6.0, 12.0)])
    np.testing.assert_array_equal(np.asarray(previous), [np.arange(0.0, 6.0)])
    assert heuristics.standard_frames(vector[:, :12], 12)[1] is None  # one frame only


@pytest.mark.timeout(600)
def test_the_options_add_the_features_and_the_scripted_controller_plays_the_same_episode():
    plain, params = hivex_jax.make("OceanPlasticCollection-v0")
    option, _ = hivex_jax.make("OceanPlasticCollection-v0", approach_features=True, border_features=True)
    layout = option.observation_layout()  # the newest of two 14-float frames
    assert layout["position"] == slice(14, 16) and layout["neighbour_distance"] == slice(25, 26)
    assert layout["border_distance"] == slice(27, 28)

    def play(env):
        obs, state = env.reset(hivex_jax.world_key(3), params)

        def body(carry, key):
            obs, state = carry
            obs, state, reward, *_ = env.step(key, state, env.scripted_policy(obs, params), params)
            return (obs, state), (reward, obs["vector"])

        _, (rewards, vectors) = jax.lax.scan(body, (obs, state), jax.random.split(jax.random.key(1), 200))
        return rewards, vectors

    rewards, vectors = (np.asarray(x) for x in jax.jit(lambda: play(plain))())
    rewards_opt, vectors_opt = (np.asarray(x) for x in jax.jit(lambda: play(option))())
    # the same episode; XLA may fuse the positions' arithmetic differently with the options (last-bit changes)
    np.testing.assert_allclose(rewards_opt, rewards, rtol=1e-5, atol=1e-5)
    assert np.abs(rewards).sum() > 0
    assert vectors_opt.shape[-1] == 28
    np.testing.assert_allclose(vectors_opt[..., 14:20], vectors[..., 6:12], atol=1e-6)  # newest standard
    np.testing.assert_allclose(vectors_opt[..., 0:6], vectors[..., 0:6], atol=1e-6)  # previous frame's
    assert np.all(np.abs(vectors_opt) <= 5.0)
    assert option.observation_space(params).spaces["vector"].shape == (3, 28)
    assert np.any(vectors_opt[..., 25] < 5.0)  # some vessel came within 100 m of another
    assert np.any(vectors_opt[..., 26] < 5.0)  # and headed for the border within 100 m
