"""marl-eval export: the file follows marl-eval's documented raw-data schema (the checks of its
`DiagnoseData.check_data` and `data_process_pipeline`, id-marl-eval 0.0.4), and round-trips the
per-episode values. id-marl-eval is not a dependency (it pins pandas==1.4.4): where it is installed,
its own validator runs too."""

import json

import numpy as np
import pytest
from fake_results import fake_results

from hivex_jax.eval.marl_eval import to_marl_eval, write_marl_eval

pytestmark = pytest.mark.timeout(120)


def check_marl_eval_schema(data: dict) -> None:
    """marl-eval's raw-data rules: env -> task -> algorithm -> run -> step; steps hold an int `step_count`
    and per-metric lists of numbers; `absolute_metrics` comes last with the same metrics; within an env
    every task has the same algorithms, every algorithm the same number of runs, every run the same
    steps; algorithm names hold no comma; keys stay distinct when lower-cased (marl-eval lower-cases)."""
    for tasks in data.values():
        algorithm_sets, run_counts, step_counts, metric_sets = [], [], [], []
        for task, algorithms in tasks.items():
            algorithm_sets.append(sorted(algorithms))
            for algorithm, runs in algorithms.items():
                assert "," not in algorithm, algorithm
                run_counts.append(len(runs))
                for run, steps in runs.items():
                    names = list(steps)
                    assert names[-1] == "absolute_metrics", names
                    step_counts.append(len(names))
                    for step, metrics in steps.items():
                        if step == "absolute_metrics":
                            assert "step_count" not in metrics
                        else:
                            assert isinstance(metrics["step_count"], int)
                        values = {k: v for k, v in metrics.items() if k != "step_count"}
                        metric_sets.append(sorted(values))
                        for metric, episodes in values.items():
                            assert isinstance(episodes, list) and episodes, (task, algorithm, run, metric)
                            assert all(isinstance(v, int | float) and np.isfinite(v) for v in episodes)
        for keys in (list(data), *[list(t) for t in data.values()]):
            assert len({k.lower() for k in keys}) == len(keys)
        assert all(a == algorithm_sets[0] for a in algorithm_sets)
        assert len(set(run_counts)) == 1 and len(set(step_counts)) == 1
        assert all(m == metric_sets[0] for m in metric_sets)


def _sweep():
    greedy_a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    greedy_b = [[2.0, 2.0, 2.0], [8.0, 9.0, 7.0]]
    base = {"scripted": [10.0, 10.0, 10.0], "random": [0.0, 0.0, 5.0]}
    return [
        ("lr=1e-3,task=0", fake_results({"greedy": greedy_a}, **base, task=0)),
        ("lr=1e-3,task=1", fake_results({"greedy": greedy_b}, **base, task=1)),
        ("lr=3e-4,task=0", fake_results({"greedy": greedy_b}, **base, task=0)),
        ("lr=3e-4,task=1", fake_results({"greedy": greedy_a}, **base, task=1)),
    ]


def test_export_follows_the_schema_and_round_trips(tmp_path):
    entries = _sweep()
    path = write_marl_eval(tmp_path / "marl_eval.json", entries)
    data = json.loads(path.read_text())
    check_marl_eval_schema(data)
    tasks = data["WindFarmControl-v0"]
    assert sorted(tasks) == ["task_0_level_0", "task_1_level_0"]
    assert sorted(tasks["task_1_level_0"]) == ["ippo lr=1e-3", "ippo lr=3e-4"]  # no commas, no task
    run = tasks["task_1_level_0"]["ippo lr=1e-3"]["seed_1"]
    assert run["step_0"]["step_count"] == 1000
    assert run["step_0"]["return"] == [8.0, 9.0, 7.0]  # seed 1's returns on worlds 6000..6002
    assert run["step_0"]["episode_length"] == [10, 11, 12]
    assert run["step_0"]["normalised_score"] == pytest.approx([0.8, 0.9, 0.4])  # (R - Rr) / (Rs - Rr)
    assert run["absolute_metrics"] == {k: v for k, v in run["step_0"].items() if k != "step_count"}


def test_normalised_score_omitted_unless_every_world_is_usable():
    entries = _sweep()
    entries[0][1]["policies"]["random"]["per_world"][2]["return_mean"] = 10.0  # scripted == random there
    data = to_marl_eval(entries)
    check_marl_eval_schema(data)  # the metric goes from every entry, so all keep the same metrics
    run = data["WindFarmControl-v0"]["task_1_level_0"]["ippo lr=1e-3"]["seed_0"]
    assert sorted(run["step_0"]) == ["episode_length", "return", "step_count"]
    above = _sweep()
    above[1][1]["policies"]["random"]["per_world"][0]["return_mean"] = 12.0  # random beats scripted there
    assert (
        "normalised_score"
        not in to_marl_eval(above)["WindFarmControl-v0"]["task_0_level_0"]["ippo lr=1e-3"]["seed_0"]["step_0"]
    )


def test_stochastic_policy_and_duplicate_names():
    r = fake_results({"greedy": [[1.0]], "stochastic": [[7.0]]})
    data = to_marl_eval([(None, r)], policy="stochastic")
    assert data["WindFarmControl-v0"]["task_0_level_0"]["ippo"]["seed_0"]["step_0"]["return"] == [7.0]
    default_level = to_marl_eval([(None, {**r, "level": None})])  # config level: null
    assert list(default_level["WindFarmControl-v0"]) == ["task_0"]
    with pytest.raises(ValueError, match="two entries export as"):
        to_marl_eval([(None, r), (None, r)])
    without_steps = {k: v for k, v in r.items() if k != "env_steps_per_seed"}
    with pytest.raises(ValueError, match="env_steps_per_seed"):
        to_marl_eval([(None, without_steps)])


def test_marl_eval_library_accepts_the_export():
    diagnose = pytest.importorskip("marl_eval.utils.diagnose_data_errors")
    processing = pytest.importorskip("marl_eval.utils.data_processing_utils")
    data = to_marl_eval(_sweep())
    checks = diagnose.DiagnoseData(data).check_data()
    assert all(all(v.values()) for v in checks.values())
    processed = processing.data_process_pipeline(raw_data=data, metrics_to_normalize=["return"])
    matrices, _ = processing.create_matrices_for_rliable(processed, "WindFarmControl-v0", ["return"])
    assert matrices["mean_norm_return"]["ippo lr=1e-3"].shape == (2, 2)  # [runs, tasks]
    assert "mean_normalised_score" in matrices


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--marl-eval", "{tmp}"], "is a folder; give a file name"),
        (["--marl-eval", "{tmp}/afile/x.json"], "afile is a file, not a folder"),
        (["--baseline-entry", "lr=9"], "--baseline-entry 'lr=9' is not one of ['lr=1e-3', 'lr=3e-4']"),
    ],
)
def test_sweep_options_fail_before_training_as_one_line(argv, expected, tmp_path, capsys):
    from hivex_jax.cli import main

    (tmp_path / "afile").write_text("x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    rc = main(["sweep", "--grid", "lr=1e-3,3e-4", "--grid", "task=0,1", "--out-dir", str(tmp_path), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and expected in err[0], err
