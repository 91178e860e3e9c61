"""The suite table (`hivex_jax.eval.suite_table`, printed by `scripts/suite_results.py table`) from
hand-made run folders (no training)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hivex_jax.eval import suite_table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def suite():
    return suite_table


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
    with pytest.raises(ValueError, match="no <!-- suite-results:start -->"):
        plain = tmp_path / "plain.md"
        plain.write_text("no markers here\n")
        suite.write_between_markers(plain, "x")


def test_bad_cell_spec_is_refused(suite):
    with pytest.raises(ValueError, match="bad cell"):
        suite.cells("ippo:nope")
    assert suite.cells("mappo:opc") == [("mappo", "opc")]
    assert len(suite.cells(None)) == 10


def test_table_command_prints_and_writes_the_table(suite, tmp_path):
    """`scripts/suite_results.py table --write PAGE` (its own process) prints the table and puts it
    between the page's markers; a bad cell spec is one line and exit 2."""
    _cell(tmp_path / "suite", "mappo_opc", greedy=[[3.0, 5.0]], scripted=[4.0])
    page = tmp_path / "page.md"
    page.write_text(f"a\n{suite.MARKER_START}\n{suite.MARKER_END}\nb\n")
    script = [sys.executable, str(REPO / "scripts" / "suite_results.py")]
    cmd = [*script, "table", "--out-dir", str(tmp_path / "suite"), "--write", str(page)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = suite.table(tmp_path / "suite")
    assert done.stdout == expected + "\n" and "| IPPO | greedy | 4.0 ± " in expected
    assert page.read_text() == f"a\n{suite.MARKER_START}\n{expected}\n{suite.MARKER_END}\nb\n"
    bad = subprocess.run([*script, "run", "--cells", "ippo:x"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        "suite_results run: bad cell 'ippo:x': expected ALGO:ENV with ALGO in ('ippo', 'mappo'), "
        "ENV in ['wfc', 'wrm', 'dbr', 'opc', 'aws']"
    ]
