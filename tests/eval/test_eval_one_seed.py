"""One training seed has no interval over seeds: every table says "one seed: no interval" instead of a
CI of 0 (or a bootstrap interval that is the point), and every plot draws a marker that shows at any
scale, never a zero-width bar. Several seeds keep their intervals. No training."""

import json

import numpy as np
import pytest
from fake_results import fake_results

from hivex_jax.eval import aggregate as ag
from hivex_jax.eval import plots
from hivex_jax.eval.stats import ONE_SEED, mean_ci_text, summarize

pytestmark = pytest.mark.timeout(300)
REPS = 100
SCRIPTED, RANDOM = [10.0, 20.0, 30.0], [0.0, 0.0, 0.0]


def _figures(monkeypatch) -> list:
    """Every figure the package saves, as its matplotlib Figure (read before it is closed)."""
    figures = []
    real = plots.save_figure

    def keep(fig, path, dpi=100):
        fig.canvas.draw()
        figures.append(
            {
                "legend": [t.get_text() for lg in [*fig.legends, *(a.get_legend() for a in fig.axes)] if lg
                           for t in lg.get_texts()],
                "supxlabel": fig._supxlabel.get_text() if fig._supxlabel else "",
                "axes": [
                    {
                        "xlim": ax.get_xlim(),
                        "markers": [(ln.get_marker(), ln.get_markersize(), ln.get_xdata(), ln.get_ydata())
                                    for ln in ax.get_lines()],
                        "bars": len(ax.patches),
                    }
                    for ax in fig.axes
                ],
            }
        )  # fmt: skip
        return real(fig, path, dpi)

    monkeypatch.setattr(plots, "save_figure", keep)
    return figures


def test_mean_ci_text_says_one_seed_instead_of_a_zero_interval():
    assert mean_ci_text(12.34, 0.0, 1) == "12.3 (one seed: no interval)"
    assert mean_ci_text(12.34, 1.5, 3) == "12.3 ± 1.5"
    assert mean_ci_text(0.912, 0.0, 1, digits=2) == "0.91 (one seed: no interval)"


def test_eval_aggregates_of_one_seed_have_no_interval_and_say_so():
    one = fake_results({"greedy": [[5.0, 10.0, 15.0]], "stochastic": [[4.0, 8.0, 12.0]]}, SCRIPTED, RANDOM)
    block = ag.eval_aggregates(one, reps=REPS)
    iqm = block["policies"]["greedy"]["iqm"]
    assert iqm["point"] == pytest.approx(0.5) and iqm["ci95"] is None  # every score is 0.5
    assert block["policies"]["greedy"]["num_runs"] == 1
    # greedy (one seed) over scripted (run once): no interval either
    assert block["probability_of_improvement"]["greedy over scripted"]["ci95"] is None
    text = ag.format_eval_aggregates(block)
    assert f"0.500 ({ONE_SEED})" in text and "[0.500, 0.500]" not in text
    assert f"P(greedy over stochastic) = 1.000 ({ONE_SEED})" in text
    json.dumps(block)  # None is plain JSON

    three = fake_results({"greedy": [[5.0, 10.0, 15.0], [3.0, 6.0, 9.0], [4.0, 8.0, 12.0]]}, SCRIPTED, RANDOM)
    block = ag.eval_aggregates(three, reps=REPS)
    low, high = block["policies"]["greedy"]["iqm"]["ci95"]
    assert low < 0.4 < high and ONE_SEED not in ag.format_eval_aggregates(block)
    # several seeds against scripted run once: the bootstrap over the seeds is an interval
    assert block["probability_of_improvement"]["greedy over scripted"]["ci95"] is not None


def test_a_one_seed_sweep_says_so_in_its_table_profiles_and_aggregates_png(tmp_path, monkeypatch):
    figures = _figures(monkeypatch)
    entries = [
        ("lr=0.001", fake_results({"greedy": [[5.0, 10.0, 15.0]]}, SCRIPTED, RANDOM)),
        ("lr=0.003", fake_results({"greedy": [[8.0, 16.0, 24.0]]}, SCRIPTED, RANDOM)),
    ]
    block = ag.write_sweep_aggregates(tmp_path, entries, reps=REPS)
    assert block["groups"]["lr=0.003"]["iqm"] == {"point": pytest.approx(0.8), "ci95": None}
    assert block["profiles"]["lr=0.001"]["ci95_low"] is None
    text = ag.format_sweep_aggregates(block)
    assert f"lr=0.003{' ' * 23}0.800 ({ONE_SEED})" in text
    assert f"P(lr=0.003 over lr=0.001) = 1.000 ({ONE_SEED})" in text
    saved = json.loads((tmp_path / "aggregates.json").read_text())
    assert saved["groups"]["lr=0.001"]["iqm"]["ci95"] is None

    aggregates_png, profiles_png = figures
    assert f"point estimate, {ONE_SEED}" in aggregates_png["legend"]
    assert aggregates_png["supxlabel"] == f"score (diamond: {ONE_SEED})"
    iqm_panel = aggregates_png["axes"][0]
    assert iqm_panel["bars"] == 0  # no zero-width bars
    diamonds = [(x[0], y[0]) for marker, size, x, y in iqm_panel["markers"] if marker == "D" and size >= 6]
    assert diamonds == [(pytest.approx(0.5), 0), (pytest.approx(0.8), 1)]
    low, high = iqm_panel["xlim"]
    assert low < 0.5 and 0.8 < high and high - low < 1.0  # both points inside, not a degenerate axis
    assert f"lr=0.001 ({ONE_SEED})" in profiles_png["legend"]


def test_aggregates_png_of_a_file_written_before_keeps_one_seed_visible(tmp_path, monkeypatch):
    # aggregates.json written when one run's interval was kept as [point, point]: still a diamond
    figures = _figures(monkeypatch)
    old = {"iqm": {"point": 0.7, "ci95": [0.7, 0.7]}, "num_runs": 1, "num_columns": 3}
    several = {"iqm": {"point": 0.6, "ci95": [0.5, 0.65]}, "num_runs": 3, "num_columns": 3}
    plots.plot_aggregates(tmp_path / "a.png", {"one": old, "three": several})
    (panel,) = figures[-1]["axes"]
    assert panel["bars"] == 1  # the three-seed entry's interval only
    assert [(m, x[0]) for m, size, x, _ in panel["markers"] if m == "D"] == [("D", 0.7)]
    assert figures[-1]["supxlabel"].endswith(f"; diamond: {ONE_SEED})")


def test_sweep_train_and_per_world_figures_name_one_seed(tmp_path, monkeypatch):
    figures = _figures(monkeypatch)
    one = {"mean": 7.5, "ci95": 0.0, "num_seeds": 1, "seed_min": 7.5, "seed_max": 7.5}
    plots.sweep_summary(tmp_path / "s.png", [{"combination": "lr=0.001", "greedy": one}])
    assert f"greedy ({ONE_SEED})" in figures[-1]["legend"]

    steps = np.arange(4) * 100.0
    plots.learning_curve(tmp_path / "c.png", steps, [[0.0, 1.0, 2.0, 3.0]], steps[[1, 3]], [[5.0, 6.0]])
    assert ONE_SEED in figures[-1]["legend"] and f"policy ({ONE_SEED})" in figures[-1]["legend"]

    results = fake_results({"greedy": [[5.0, 10.0, 15.0]]}, SCRIPTED, RANDOM)
    plots.per_world_returns(tmp_path / "w.png", results)
    assert f"greedy ({ONE_SEED})" in figures[-1]["legend"] and "scripted" in figures[-1]["legend"]
    # several seeds: the usual interval label
    plots.per_world_returns(tmp_path / "w3.png", fake_results({"greedy": [[5.0] * 3, [6.0] * 3]}, SCRIPTED))
    assert not any(ONE_SEED in t for t in figures[-1]["legend"])


def test_train_and_results_tables_say_one_seed():
    from baselines.run.files import format_results
    from hivex_jax.eval.results_format import fmt_mean_ci

    trained = {"greedy": [[5.0, 10.0, 15.0]], "stochastic": [[4.0, 8.0, 12.0]]}
    results = fake_results(trained, SCRIPTED, RANDOM)
    for name in ("greedy", "stochastic", "scripted", "random"):
        results["policies"][name]["summary"] = summarize(ag.policy_scores(results, name))
    table = format_results(results)
    assert f"greedy, stochastic: {ONE_SEED}" in table
    greedy_row = next(line for line in table.splitlines() if line.strip().startswith("greedy "))
    assert greedy_row.split()[2] == "-"  # no 0.0 CI column
    assert fmt_mean_ci(results["policies"]["greedy"]["summary"]) == f"10.0 ({ONE_SEED})"
    assert fmt_mean_ci(summarize([[5.0, 10.0], [7.0, 12.0]])) == "8.500 ± 12.706"


def test_suite_and_transfer_tables_say_one_seed():
    from baselines.run.transfer_matrix import _text
    from hivex_jax.eval import suite_table

    row = {"fraction": 0.9, "fraction_ci95": 0.0, "num_seeds": 1, "random": 0.0, "scripted": 10.0}
    assert suite_table._fraction_text(row) == f"0.90 ({ONE_SEED})"
    row["normalised"] = {"mean": 0.85, "ci95": 0.0}
    assert suite_table._normalised_text(row) == f"0.85 ({ONE_SEED})"
    several = {**row, "num_seeds": 3, "normalised": {"mean": 0.85, "ci95": 0.04}}
    assert suite_table._normalised_text(several) == "0.85 ± 0.04"
    cell = {"return_per_seed": [3.0], "normalised_score": {"mean": 0.5, "ci95": 0.0}}
    assert _text(cell, "normalised") == f"0.50 ({ONE_SEED})"
    assert _text({**cell, "return_per_seed": [3.0, 4.0]}, "normalised") == "0.50 ± 0.00"


def test_a_one_seed_sweep_table_says_so(tmp_path, monkeypatch):
    import yaml
    from trainer_fake_env import TINY_CONFIG

    import baselines.run.runner
    from baselines.cli.sweep import sweep_main

    def fake_run_training(config, run_dir, progress=True):  # training stubbed: the table is under test
        one = {"mean": 7.5, "ci95": 0.0, "iqm": 7.5, "num_seeds": 1, "seed_min": 7.5, "seed_max": 7.5}
        return {"run_dir": str(run_dir), "eval": {"policies": {"greedy": {"summary": one}}}}

    monkeypatch.setattr(baselines.run.runner, "run_training", fake_run_training)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0, "num_seeds": 1}))
    args = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--no-fuse"]
    assert sweep_main([*args, "--name", "one", "--grid", "lr=1e-3,3e-3"]) == 0
    rows = (tmp_path / "one" / "sweep.md").read_text().splitlines()[2:]
    assert [r.rstrip(" |").split(" | ")[1] for r in rows] == [f"7.5 ({ONE_SEED})"] * 2
