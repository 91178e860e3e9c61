"""Plots say what they show: the zero-shot evaluation plot names its override, a sweep over algorithms
names the algorithm per row (not one "IPPO" title), and axes span the data, with intervals that run past
them clipped and marked, not stretched to +-t * sd (t = 12.7 with 2 seeds). Checked on each figure's
titles, legend texts and axis limits, read when the figure is saved."""

import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from hivex_jax.eval import plots

pytestmark = pytest.mark.timeout(120)


def _texts(legend) -> list[str]:
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


@pytest.fixture
def saved(monkeypatch):
    """Every figure the package saves, described as it is written: titles, legends, axis limits, ticks."""
    figures = []
    real = plots.save_figure

    def describe_and_save(fig, path, dpi=100):
        fig.canvas.draw()  # tick labels are set at draw time
        figures.append(
            {
                "suptitle": fig.get_suptitle(),
                "titles": [ax.get_title() for ax in fig.axes],
                "legend": sum([_texts(lg) for lg in fig.legends], [])
                + sum([_texts(ax.get_legend()) for ax in fig.axes], []),
                "ylim": [ax.get_ylim() for ax in fig.axes],
                "xlim": [ax.get_xlim() for ax in fig.axes],
                "yticklabels": [[t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes],
                "xticklabels": [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes],
            }
        )
        return real(fig, path, dpi)

    monkeypatch.setattr(plots, "save_figure", describe_and_save)
    return figures


def _results(per_seed: dict[int, list[float]], **extra) -> dict:
    """An eval.json dict: greedy over seeds per world, scripted once per world."""
    worlds = list(per_seed)
    greedy = {"per_world": [{"world": w, "return_per_seed": per_seed[w]} for w in worlds]}
    scripted = {"per_world": [{"world": w, "return_mean": 2500.0} for w in worlds]}
    return {
        "worlds": worlds,
        "policies": {"greedy": greedy, "scripted": scripted},
        "algo": "ippo",
        "env_id": "WindFarmControl-v0",
        "task": 0,
        "level": 0,
        **extra,
    }


def test_the_zero_shot_evaluation_plot_names_its_override(tmp_path, saved):
    from baselines.run.files import plot_eval

    trained = {"env_id": "WindFarmControl-v0", "task": 0, "level": 0, "num_agents": 8}
    results = _results(
        {6000: [1.0, 2.0], 6001: [3.0, 4.0]},
        env_overrides=["num_agents=12"],
        train_setting=trained,
        eval_setting={**trained, "num_agents": 12},
    )
    plot_eval(tmp_path / "eval.png", results)
    assert "zero-shot in num_agents=12 (trained with 8)" in saved[-1]["suptitle"]
    # the evaluation in the training setting says nothing of the kind
    plot_eval(tmp_path / "plain.png", _results({6000: [1.0, 2.0]}))
    assert "zero-shot" not in saved[-1]["suptitle"] and "WindFarmControl-v0" in saved[-1]["suptitle"]


def test_two_seed_intervals_are_clipped_at_the_data_range_and_marked(tmp_path, saved):
    # two seeds 2000 apart: the Student-t half-width is 12.7 * 1414 / sqrt(2) = 12,706
    results = _results({6000: [1000.0, 3000.0], 6001: [0.0, 5000.0], 6002: [4000.0, 4100.0]})
    plots.per_world_returns(tmp_path / "eval.png", results)
    low, high = saved[-1]["ylim"][0]
    assert (low, high) == pytest.approx((-250.0, 5250.0))  # 0..5000, 5% margin each side
    assert plots.CLIPPED_LABEL in saved[-1]["legend"]
    # no interval past the data: no clipping mark
    plots.per_world_returns(
        tmp_path / "tight.png", _results({6000: [1000.0, 1000.0], 6001: [4000.0, 4000.0]})
    )
    assert plots.CLIPPED_LABEL not in saved[-1]["legend"]

    steps = np.arange(5) * 100.0
    train = np.array([[0.0, 1.0, 2.0, 3.0, 4.0], [0.5, 2.0, 2.5, 4.0, 5.0]])
    tests = np.array([[1000.0, 3000.0], [0.0, 5000.0]])
    plots.learning_curve(tmp_path / "c.png", steps, train, steps[[2, 4]], tests, {"scripted": 2500.0})
    (train_ylim, eval_ylim) = saved[-1]["ylim"]
    assert train_ylim == pytest.approx((-0.25, 5.25)) and eval_ylim == pytest.approx((-250.0, 5250.0))
    assert plots.BAND_CLIPPED_LABEL in saved[-1]["legend"]

    wide = {"mean": 2000.0, "ci95": 12706.0, "num_seeds": 2, "seed_min": 1000.0, "seed_max": 3000.0}
    rows = [
        {"combination": "lr=0.001", "greedy": wide},
        {"combination": "lr=0.003", "greedy": {**wide, "ci95": 10.0}},
    ]
    plots.sweep_summary(tmp_path / "s.png", rows)
    assert saved[-1]["xlim"][0] == pytest.approx((900.0, 3100.0))
    assert plots.CLIPPED_LABEL in saved[-1]["legend"]


def test_a_sweep_over_algorithms_names_the_algorithm_per_row(tmp_path, saved, monkeypatch):
    import baselines.run.runner
    from baselines.cli.sweep import sweep_main

    def fake_run_training(config, run_dir, progress=True):  # training stubbed: the plot is under test
        block = {"mean": 7.5, "ci95": 0.5, "iqm": 7.5, "num_seeds": 2, "seed_min": 7.0, "seed_max": 8.0}
        return {"run_dir": str(run_dir), "eval": {"policies": {"greedy": {"summary": block}}}}

    monkeypatch.setattr(baselines.run.runner, "run_training", fake_run_training)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))
    # one program per combination: run_training is what is stubbed (a fused lr grid trains for real)
    args = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--no-fuse"]
    assert sweep_main([*args, "--grid", "algo=ippo,mappo"]) == 0
    title = saved[-1]["titles"][0]
    assert title == f"{TINY_CONFIG['env_id']} task 0: algo per row"
    assert saved[-1]["yticklabels"][0] == ["algo=ippo", "algo=mappo"]
    # one algorithm: the title names it
    assert sweep_main([*args, "--name", "lrs", "--grid", "lr=1e-3,3e-3", "algo=mappo"]) == 0
    assert saved[-1]["titles"][0] == f"MAPPO on {TINY_CONFIG['env_id']} task 0"


def test_evaluation_files_name_the_last_world_played():
    from baselines.cli.evaluate import worlds_tag

    assert worlds_tag("6000:6004") == "6000-6003"  # worlds 6000, 6001, 6002, 6003
    assert worlds_tag("6000:6001") == "6000"
    assert worlds_tag("1,5,9") == "1_5_9"
    assert (worlds_tag(None), worlds_tag("stress")) == ("test", "stress")


def test_headers_print_no_level_for_an_env_without_one():
    from types import SimpleNamespace

    from baselines.config import from_dict
    from baselines.run.hivex_eval import format_hivex_results
    from baselines.run.runner import describe_run

    config = from_dict({"env_id": "OceanPlasticCollection-v0", "level": None, "num_agents": 3})
    population = SimpleNamespace(
        train=SimpleNamespace(env=SimpleNamespace(num_agents=3)), devices=[None], shard_axis="seeds"
    )
    header = describe_run(config, population, 1.0)
    assert header.startswith("IPPO on OceanPlasticCollection-v0 (task 0): ") and "None" not in header
    test_run = {"agent_steps": 100, "summary_freq": 50, "test_seed": 6000}
    results = {"env_id": "OceanPlasticCollection-v0", "task": 0, "level": None, "test_run": test_run}
    header = format_hivex_results({**results, "policies": {}}).splitlines()[0]
    assert header.startswith("HIVEX protocol: OceanPlasticCollection-v0 task 0, ") and "None" not in header


def test_learning_curve_step_ticks_are_short(tmp_path, saved):
    """Six-digit env-step counts as "150k" (they ran into each other as "100000120000140000")."""
    steps = np.linspace(0.0, 160_000.0, 9)
    train = np.vstack([np.linspace(0.0, 1.0, 9), np.linspace(0.1, 1.1, 9)])
    tests = np.array([[1000.0, 3000.0], [500.0, 2500.0]])
    plots.learning_curve(tmp_path / "c.png", steps, train, steps[[4, 8]], tests, {"scripted": 2500.0})
    for labels in saved[-1]["xticklabels"]:
        shown = [t for t in labels if t]
        assert shown and all(len(t) <= 5 for t in shown), labels
    assert "150k" in saved[-1]["xticklabels"][1] or "160k" in saved[-1]["xticklabels"][1]
