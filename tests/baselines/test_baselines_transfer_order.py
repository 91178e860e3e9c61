"""`hivex transfer` resumed with more values: the matrix's columns (transfer.json, transfer.md, the heatmap)
follow the grid's order, 1, 4, 12, 16, not the order cells were computed in (1, 4, 16, 12). Loading and
evaluating the runs are stubbed: the order is under test, not the numbers."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from baselines.cli.transfer import transfer_main
from baselines.run import checkpoint
from baselines.run import transfer_matrix as tm
from hivex_jax.eval import plots

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """A sweep folder of one Wind Farm Control run whose loading and evaluation are stubbed; returns the
    folder, the settings evaluated (in call order) and the heatmaps' column labels."""
    run = tmp_path / "sweep" / "a"
    run.mkdir(parents=True)
    run.joinpath("config.yaml").write_text(yaml.safe_dump({"env_id": "WindFarmControl-v0", "num_seeds": 2}))
    monkeypatch.setattr("baselines.cli.transfer.run_folder_config", _config)
    monkeypatch.setattr(checkpoint, "latest_step", lambda run_dir: 7)
    monkeypatch.setattr(tm, "load", lambda label, run_dir: _Loaded(label, run_dir))
    monkeypatch.setattr(tm, "group_key", lambda run, evaluated: "one")
    evaluated, columns = [], []

    def evaluate_settings(runs, settings, worlds, num_steps, eval_seed):
        cells = {}
        for name, configs in settings.items():
            evaluated.append(configs[0].num_agents)
            per_seed_world = np.full((2, len(worlds)), float(configs[0].num_agents))
            reference = {"scripted": 10.0, "random": 0.0}
            cells[name] = {r.label: tm.cell(per_seed_world, reference, configs[0], 1) for r in runs}
        return cells

    monkeypatch.setattr(tm, "evaluate_settings", evaluate_settings)
    real = plots.save_figure

    def save(fig, path, dpi=100):
        fig.canvas.draw()
        columns.append([t.get_text() for t in fig.axes[0].get_xticklabels()])
        return real(fig, path, dpi)

    monkeypatch.setattr(plots, "save_figure", save)
    return tmp_path / "sweep", evaluated, columns


def _config(run_dir, overrides):
    from baselines.config import load_config

    return load_config(run_dir / "config.yaml", overrides)


class _Loaded:
    def __init__(self, label, run_dir):
        self.label, self.run_dir, self.updates_done = label, run_dir, 3
        self.config = _config(Path(run_dir), [])


def test_a_resumed_matrix_keeps_the_grid_order(stubbed):
    sweep, evaluated, columns = stubbed
    args = [str(sweep), "--worlds", "6000:6002", "--no-progress"]
    assert transfer_main([*args, "--eval-grid", "num_agents=1,4,16"]) == 0
    assert evaluated == [1, 4, 16]
    assert transfer_main([*args, "--eval-grid", "num_agents=1,4,12,16"]) == 0
    assert evaluated == [1, 4, 16, 12]  # only the new setting was evaluated
    order = ["num_agents=1", "num_agents=4", "num_agents=12", "num_agents=16"]
    matrix = json.loads((sweep / "transfer" / "transfer.json").read_text())
    assert list(matrix["eval_settings"]) == order
    header = (sweep / "transfer" / "transfer.md").read_text().splitlines()[6]
    assert header == "| run | " + " | ".join(order) + " |"
    assert columns[-1] == order
    # a later call that lists fewer settings: its own first, then the earlier ones in their order
    assert transfer_main([*args, "--eval-grid", "num_agents=16,2"]) == 0
    matrix = json.loads((sweep / "transfer" / "transfer.json").read_text())
    assert list(matrix["eval_settings"]) == ["num_agents=16", "num_agents=2", *order[:3]]
