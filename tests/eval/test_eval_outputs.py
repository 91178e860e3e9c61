"""`hivex render`, GIF frames and the learning-curve plot."""

import imageio.v2 as imageio
import numpy as np
import pytest
from trainer_fake_env import TinyEnv

from hivex_jax.eval import episode_frames, learning_curve, per_world_returns, random_policy, sweep_summary
from hivex_jax.eval.plots import _policy_returns
from hivex_jax.eval.render import default_gif_path
from hivex_jax.eval.render import main as render_main

pytestmark = pytest.mark.timeout(120)


def test_render_cli_writes_a_gif(tmp_path):
    out = tmp_path / "tiny.gif"
    args = ["--env", "TinyTrainerTest-v0", "--steps", "6", "--frames", "4", "--world", "3", "--out", str(out)]
    assert render_main(args) == 0
    frames = imageio.mimread(out)
    assert 2 <= len(frames) <= 4 and frames[0].shape[:2] == (16, 16)  # GIF merges identical frames


def test_render_without_out_writes_under_runs_render_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the default is relative to the current folder
    assert render_main(["--env", "TinyTrainerTest-v0", "--steps", "4", "--frames", "3", "--world", "3"]) == 0
    out = tmp_path / "runs" / "render" / "TinyTrainerTest-v0_world3.gif"
    assert out.is_file() and [p.name for p in tmp_path.iterdir()] == ["runs"]  # nothing in the folder itself
    assert capsys.readouterr().out.startswith("wrote runs/render/TinyTrainerTest-v0_world3.gif: ")


def test_default_gif_names_differ_by_task_level_and_world():
    assert (
        str(default_gif_path("jaxmarl/MPE_simple_v3", 6000))
        == "runs/render/jaxmarl_MPE_simple_v3_world6000.gif"
    )
    assert default_gif_path("WindFarmControl-v0", 7, task=1, level=10).name == (
        "WindFarmControl-v0_task1_level10_world7.gif"
    )


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


def _results(seeds=3, worlds=(6002, 6000, 6001)):
    rng = np.random.default_rng(0)
    trained = {
        name: {
            "per_world": [{"world": w, "return_per_seed": rng.normal(size=seeds).tolist()} for w in worlds]
        }
        for name in ("greedy", "stochastic")
    }
    scripted = {"per_world": [{"world": w, "return_mean": float(10 + i)} for i, w in enumerate(worlds)]}
    return {"worlds": list(worlds), "policies": {**trained, "scripted": scripted}}


def test_per_world_returns_reads_seeds_by_worlds_and_draws(tmp_path):
    results = _results()
    greedy = _policy_returns(results, "greedy")
    assert greedy.shape == (3, 3)  # [seeds, worlds]
    assert greedy[:, 1].tolist() == results["policies"]["greedy"]["per_world"][1]["return_per_seed"]
    assert _policy_returns(results, "scripted").tolist() == [[10.0, 11.0, 12.0]]
    path = per_world_returns(tmp_path / "eval.png", results, "title")
    assert imageio.imread(path).ndim == 3
    with pytest.raises(ValueError, match="no policies"):
        per_world_returns(tmp_path / "none.png", {"worlds": [1], "policies": {}})


def test_sweep_summary_png(tmp_path):
    row = {"mean": 1.0, "ci95": 0.5, "num_seeds": 3}
    rows = [{"combination": f"lr={lr}", "greedy": row, "scripted": {**row, "num_seeds": 1}} for lr in (1, 2)]
    assert imageio.imread(sweep_summary(tmp_path / "s.png", rows)).ndim == 3
    with pytest.raises(ValueError, match="at least one"):
        sweep_summary(tmp_path / "e.png", [])
