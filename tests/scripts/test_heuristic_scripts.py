"""The heuristic scripts (built on `hivex_jax.eval.rollout.evaluate_params`) run end to end on a few
worlds, print one table row per pattern / level / task, and rank the scripted controller above random."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

# (script, small arguments, rows expected, column of the scripted return, column of the random return)
CASES = [
    ("heuristic_wind_farm_control.py", ["--worlds", "2"], 9, 1, 2),
    ("heuristic_wildfire_resource_management.py", ["--worlds", "2"], 10, 1, 2),
    ("heuristic_drone_based_reforestation.py", ["--worlds", "2"], 10, 1, 2),
    (
        "heuristic_aerial_wildfire_suppression.py",
        ["--worlds", "2", "--levels", "1,4", "--steps", "300"],
        2,
        2,
        1,
    ),
]


def _rows(stdout: str) -> list[list[str]]:
    """The markdown table's data rows, as cells."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in stdout.splitlines()
        if re.match(r"\| \d", line)
    ]


def _mean(cell: str) -> float:
    return float(re.split(r"±|\+-", cell)[0])


def _run(script: str, args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("script", "args", "num_rows", "scripted", "random"), CASES)
def test_script_prints_its_table_and_scripted_beats_random(script, args, num_rows, scripted, random):
    rows = _rows(_run(script, args))
    assert len(rows) == num_rows
    for row in rows:
        assert _mean(row[scripted]) > _mean(row[random]), row


@pytest.mark.slow
def test_ocean_plastic_script_ranks_scripted_over_idle_over_random_on_task_0():
    rows = _rows(_run("heuristic_ocean_plastic_collection.py", ["--worlds", "2", "--tasks", "0"]))
    returns = {row[1]: _mean(row[2]) for row in rows}
    assert set(returns) == {"scripted", "random", "idle"}
    assert returns["scripted"] > returns["idle"] > returns["random"]
