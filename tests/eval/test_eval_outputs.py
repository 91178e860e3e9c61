"""`hivex render`, GIF frames and the learning-curve plot."""

import imageio.v2 as imageio
import numpy as np
import pytest
from trainer_fake_env import TinyEnv

from hivex_jax.eval import episode_frames, learning_curve, random_policy
from hivex_jax.eval.render import main as render_main

pytestmark = pytest.mark.timeout(120)


def test_render_cli_writes_a_gif(tmp_path):
    out = tmp_path / "tiny.gif"
    args = ["--env", "TinyTrainerTest-v0", "--steps", "6", "--frames", "4", "--world", "3", "--out", str(out)]
    assert render_main(args) == 0
    frames = imageio.mimread(out)
    assert 2 <= len(frames) <= 4 and frames[0].shape[:2] == (16, 16)  # GIF merges identical frames


def test_episode_frames_hold_the_last_state_after_the_episode_ends():
    env = TinyEnv()
    params = env.default_params()
    policy = random_policy(env)
    frames = episode_frames(env, params, policy, None, world_seed=5, key=1, stride=4, num_frames=6)
    assert frames.shape == (6, 16, 16, 3) and frames.dtype == np.uint8
    # episodes last at most 12 steps: frames at steps 12, 16 and 20 all show the final state
    np.testing.assert_array_equal(frames[3], frames[4])
    np.testing.assert_array_equal(frames[4], frames[5])


def test_learning_curve_png(tmp_path):
    steps = np.arange(10) * 100
    train = np.random.default_rng(0).normal(size=(3, 10)).cumsum(axis=1)
    path = learning_curve(tmp_path / "c.png", steps, train, steps[::5], train[:, ::5], {"scripted": 1.0})
    assert path.stat().st_size > 1000
    assert imageio.imread(path).ndim == 3
