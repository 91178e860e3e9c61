"""scripts/dbr_eval_breakdown.py: per policy the return, the normalised score and the fraction of scripted
(`hivex_jax.eval.score`, "n/a" where there is none) and the drones' episode sums, from eval.json."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _rows(run: Path) -> list[str]:
    """The script's table rows for one run folder, run as a command (its own process)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "dbr_eval_breakdown.py"), str(run)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if line.startswith(f"| {run.name} |")]


def _write_eval(run: Path, scripted: float, random: float) -> None:
    """One world; greedy and stochastic mean 60 ± 10 over seeds; the baselines' means as given."""
    world = {
        "stats": {
            "tree_drop_count": [2.0],
            "cumulative_distance_to_existing_trees": [20.0],
            "seed_pick_up_count": [3.0],
            "recharge_energy_count": [1.0],
            "out_of_energy_count": [0.0],
        },
        "reward_terms": {"drop_seed": [8.0], "incremental_running_back": [1.0]},
        "length": [399],
    }
    policies = {
        name: {"summary": {"mean": mean, "ci95": ci}, "per_world": [world]}
        for name, mean, ci in (
            ("greedy", 60.0, 10.0),
            ("stochastic", 60.0, 10.0),
            ("scripted", scripted, 0.0),
            ("random", random, 0.0),
        )
    }
    run.mkdir()
    (run / "eval.json").write_text(json.dumps({"policies": policies}))


def test_rows_give_the_normalised_score_and_the_fraction_where_they_exist(tmp_path):
    _write_eval(tmp_path / "main", scripted=120.0, random=0.0)
    greedy = _rows(tmp_path / "main")[0]
    # normalised (60 - 0) / (120 - 0) = 0.5, CI 10 / 120; fraction 60 / 120 the same here
    assert greedy.startswith(
        "| main | greedy | 60.0 ± 10.0 | 0.50 ± 0.08 | 0.50 ± 0.08 | 2.0 | 8.0 | 4.0 | 10 |"
    )
    _write_eval(tmp_path / "task4", scripted=-0.997, random=-0.742)  # task 4's baselines on world 6000
    rows = _rows(tmp_path / "task4")
    assert rows[0].startswith("| task4 | greedy | 60.0 ± 10.0 | n/a | n/a |")
    assert rows[2].startswith("| task4 | scripted | -1.0 | n/a | n/a |")
