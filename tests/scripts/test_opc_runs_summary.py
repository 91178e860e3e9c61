"""scripts/opc_runs_summary.py tabulates an OPC run's evaluation: returns per seed, the fraction of the
scripted return, and per-vessel pebbles / crossings / collisions, from eval.json or another named file."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _summary(*args: str) -> subprocess.CompletedProcess:
    """The script in its own process, as a user runs it."""
    cmd = [sys.executable, str(REPO / "scripts" / "opc_runs_summary.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)


def _world(world, returns, collisions):
    """One world's entry: per-seed returns (trained) or one return (baselines), per-seed vessel stats."""
    stats = {"pebbles_collected": [10.0] * len(collisions), "border_crossings": [0.0] * len(collisions)}
    stats["vessel_collisions"] = collisions
    if len(returns) == 1:
        return {"world": world, "return_mean": returns[0], "stats": {k: v[0] for k, v in stats.items()}}
    return {
        "world": world,
        "return_mean": sum(returns) / len(returns),
        "return_per_seed": returns,
        "stats": stats,
    }


def _write_eval(path: Path) -> None:
    # two seeds, two worlds: seed 0 returns 100 and 300 (mean 200), seed 1 returns 50 and 150 (mean 100)
    trained = [_world(6000, [100.0, 50.0], [0.0, 1.0]), _world(6001, [300.0, 150.0], [0.5, 0.5])]
    baseline = {
        "scripted": [_world(6000, [400.0], [0.0]), _world(6001, [400.0], [0.0])],
        "random": [_world(6000, [-100.0], [0.0]), _world(6001, [-100.0], [0.0])],
    }
    policies = {"greedy": {"per_world": trained}, "stochastic": {"per_world": trained}}
    policies.update({name: {"per_world": worlds} for name, worlds in baseline.items()})
    path.write_text(json.dumps({"policies": policies, "env_steps_per_seed": 1024}))


def test_rows_give_per_seed_returns_fraction_of_scripted_and_collisions(tmp_path):
    run = tmp_path / "N6"
    run.mkdir()
    _write_eval(run / "eval_6000-6001__num_agents=3.json")
    done = _summary(str(run), "--eval-file", "eval_6000-6001__num_agents=3.json")
    assert done.returncode == 0, done.stderr
    greedy = next(r for r in done.stdout.splitlines() if "| greedy |" in r)
    assert "150.0 ± " in greedy and "(200.0, 100.0)" in greedy  # per-seed means over the two worlds
    assert "| 0.500 ± 1.271 | 0.375 ± " in greedy  # normalised (R + 100) / 500: 0.6, 0.4; fraction 150 / 400
    assert greedy.endswith("| 10.0 | 0.00 | 0.50 | 2 |")  # collisions: mean of (0+0.5)/2 and (1+0.5)/2


def test_a_run_without_the_named_evaluation_is_named_on_stderr(tmp_path):
    run = tmp_path / "N6"
    run.mkdir()
    _write_eval(run / "eval.json")
    done = _summary(str(run), "--eval-file", "eval_missing.json")
    assert f"no eval_missing.json in {run}" in done.stderr
    assert "| N6 |" not in done.stdout


def test_default_is_eval_json(tmp_path):
    run = tmp_path / "R"
    run.mkdir()
    _write_eval(run / "eval.json")
    (run / "summary.json").write_text(json.dumps({"compile_s": 1.0, "train_s": 2.0, "eval_s": 3.0}))
    out = _summary(str(run)).stdout
    assert out.count("| R |") == 4  # greedy, stochastic, scripted, random
    assert "R: 1,024 env steps per seed; s: compile_s 1, train_s 2, eval_s 3" in out


def test_per_seed_table_gives_each_seeds_fraction_and_collisions(tmp_path):
    run = tmp_path / "P"
    run.mkdir()
    _write_eval(run / "eval.json")
    out = _summary(str(run), "--per-seed").stdout
    # seed 0: normalised (200 + 100) / 500 = 0.60, 200 / 400 = 0.50 of scripted, collided (0 + 0.5) / 2;
    # seed 1: 0.40, 0.25, collided (1 + 0.5) / 2
    assert "| P | 0.60 0.40 | 0.50 0.25 | 0.25 0.75 | 0.60 0.40 | 0.50 0.25 | 0.25 0.75 |" in out


def test_a_task_whose_scripted_controller_does_not_beat_random_has_no_score(tmp_path):
    run = tmp_path / "T3"
    run.mkdir()
    _write_eval(run / "eval.json")
    results = json.loads((run / "eval.json").read_text())
    for name, value in (("scripted", -264.0), ("random", -107.0)):  # OPC task 3's baselines on world 6000
        for world in results["policies"][name]["per_world"]:
            world["return_mean"] = value
    (run / "eval.json").write_text(json.dumps(results))
    out = _summary(str(run), "--per-seed").stdout
    greedy = next(r for r in out.splitlines() if "| greedy |" in r)
    assert "| n/a | n/a |" in greedy
    assert "| T3 | n/a n/a | n/a n/a | 0.25 0.75 |" in out
