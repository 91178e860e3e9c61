"""scripts/suite_results.py: the suite table from hand-made run folders (no training)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "suite_results.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("suite_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["suite_results"] = module
    spec.loader.exec_module(module)
    return module


def _policy(per_world_per_seed: list[list[float]]) -> dict:
    return {"per_world": [{"return_per_seed": r, "return_mean": sum(r) / len(r)} for r in per_world_per_seed]}


def _cell(root: Path, name: str, greedy: list[list[float]], scripted: list[float]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    policies = {
        "greedy": _policy(greedy),
        "stochastic": _policy([[v + 1.0 for v in w] for w in greedy]),
        "scripted": {"per_world": [{"return_mean": s} for s in scripted]},
    }
    results = {
        "env_id": "WindFarmControl-v0",
        "algo": "ippo",
        "env_steps_per_seed": 1000,
        "policies": policies,
    }
    (run / "eval.json").write_text(json.dumps(results))
    summary = {"compile_s": 1.0, "train_s": 10.0, "eval_s": 2.0, "backend": "cpu", "jax_version": "x"}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_fraction_of_scripted_is_per_seed_mean_over_scripted_mean(suite, tmp_path):
    # two worlds x three seeds; scripted 10 and 30 (mean 20). Seed means: 10, 20, 30 -> fractions .5, 1, 1.5
    run = _cell(tmp_path, "ippo_wfc", greedy=[[5.0, 15.0, 25.0], [15.0, 25.0, 35.0]], scripted=[10.0, 30.0])
    greedy, stochastic = suite.cell_rows(run, target=0.92)
    assert greedy["return"] == pytest.approx(20.0)
    assert greedy["fraction"] == pytest.approx(1.0)
    # Student t, 2 degrees of freedom: 4.303 * std(.5, 1, 1.5) / sqrt(3) = 4.303 * 0.5 / sqrt(3)
    assert greedy["fraction_ci95"] == pytest.approx(4.303 * 0.5 / 3**0.5, rel=1e-3)
    assert (greedy["num_seeds"], greedy["num_worlds"]) == (3, 2)
    assert stochastic["return"] == pytest.approx(21.0)
    assert greedy["wall_s"] == pytest.approx(13.0)


def test_table_marks_targets_and_missing_cells(suite, tmp_path):
    _cell(tmp_path, "ippo_wfc", greedy=[[18.0, 19.0, 20.0]], scripted=[20.0])  # fraction 0.95 >= 0.92
    text = suite.table(tmp_path)
    greedy_row = next(line for line in text.splitlines() if "| greedy |" in line)
    assert "0.95 ±" in greedy_row and "| yes |" in greedy_row
    assert "mappo:wfc" in text.splitlines()[-1] and "ippo:wfc" not in text.splitlines()[-1]


def test_write_between_markers_keeps_the_rest(suite, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"before\n{suite.MARKER_START}\nold\n{suite.MARKER_END}\nafter\n")
    suite.write_between_markers(page, "new table")
    assert page.read_text() == f"before\n{suite.MARKER_START}\nnew table\n{suite.MARKER_END}\nafter\n"
    with pytest.raises(SystemExit):
        plain = tmp_path / "plain.md"
        plain.write_text("no markers here\n")
        suite.write_between_markers(plain, "x")


def test_bad_cell_spec_is_refused(suite):
    with pytest.raises(SystemExit, match="bad cell"):
        suite.cells("ippo:nope")
    assert suite.cells("mappo:opc") == [("mappo", "opc")]
    assert len(suite.cells(None)) == 10
