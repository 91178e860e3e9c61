"""`baselines.studies.gpu_report` (printed by scripts/gpu_report_summary.py) turns a GPU report folder into
the tables docs/benchmarks.md takes."""

import json

from baselines.studies import gpu_report


def _train(seeds, seconds, updates=10, envs=4096, agents=8, env_id="WindFarmControl-v0"):
    steps = updates * envs * 128 * seeds
    return {
        "num_seeds": seeds,
        "num_envs": envs,
        "num_updates": updates,
        "seconds": seconds,
        "env_steps_per_s": steps / seconds,
        "agent_steps_per_s": steps * agents / seconds,
        "compile_s": 20.0,
        "env_id": env_id,
    }


def test_summary_reports_goals_seed_ratio_and_missing_steps(tmp_path):
    (tmp_path / "env.txt").write_text("NVIDIA H200, jax 0.11.2")
    (tmp_path / "train_1seeds.json").write_text(json.dumps(_train(1, 0.5)))
    (tmp_path / "train_32seeds.json").write_text(json.dumps(_train(32, 0.75)))
    mpe = _train(1, 0.25, agents=3, env_id="jaxmarl/MPE_simple_spread_v3")
    (tmp_path / "peer_train_mpe.json").write_text(json.dumps(mpe))
    (tmp_path / "time_to_target").mkdir()
    (tmp_path / "time_to_target" / "summary.json").write_text(
        json.dumps(
            {
                "compile_s": 21.0,
                "updates_done": 12,
                "train_s": 9.0,
                "target": {
                    "stop_at_test_return": 4600.0,
                    "reached": True,
                    "update": 12,
                    "test_return_greedy": 4655.0,
                    "env_steps_per_seed": 12 * 524288,
                    "wall_s": 9.0,
                    "seconds_total": 30.0,
                },
            }
        )
    )
    (tmp_path / "bench_WindFarmControl-v0.json").write_text(
        json.dumps(
            {
                "env": "WindFarmControl-v0",
                "pregenerate": 0,
                "results": [
                    {
                        "batch": 1024,
                        "env_steps_per_s": 1e7,
                        "agent_steps_per_s": 8e7,
                        "compile_s": 2.0,
                        "ratio_agent_steps": 2.5,
                        "peer": {"env": "MPE_simple_spread_v3"},
                    }
                ],
            }
        )
    )
    (tmp_path / "bench_aws_craftax.json").write_text(
        json.dumps(
            {
                "env": "AerialWildfireSuppression-v0",
                "results": [
                    {
                        "batch": 64,
                        "env_steps_per_s": 7e3,
                        "agent_steps_per_s": 2.1e4,
                        "compile_s": 4.0,
                        "ratio_agent_steps": 21.0,
                        "peer": {"env": "Craftax-Classic-Pixels-v1"},
                    }
                ],
            }
        )
    )
    (tmp_path / "bench_OceanPlasticCollection-v0.json").write_text("{not json")  # a step that died mid-write
    text = gpu_report.summary(tmp_path)
    # 10 updates x 4096 envs x 128 steps in 0.5 s = 1.049e7 env steps/s = 0.57 of the 1.85e7 goal
    assert "| 1 | 4096 | 10 | 1.05e+07 | 0.57x | 0.050 | 20.0 |" in text
    assert "32 seeds take 1.50x the wall time of 1 seed per update" in text
    # WFC 0.5 s vs MPE 0.25 s for the same env steps: 0.5x env steps, 0.5 * 8 / 3 = 1.33x agent steps
    assert "Wind Farm / MPE: 0.50x env steps, 1.33x agent steps" in text
    assert "reached 4655.0" in text and "30.0 s from the start, including 21.0 s of compilation" in text
    assert "| WindFarmControl-v0 | 1024 | 1e+07 | 8e+07 | 2.50x MPE | 2.0 |" in text
    assert "| AerialWildfireSuppression-v0 | 64 | 7e+03 | 2.1e+04 | 21.00x Craftax | 4.0 |" in text
    assert "| OceanPlasticCollection-v0 | failed or timed out |" in text


def test_summary_says_when_the_target_run_is_missing(tmp_path):
    (tmp_path / "env.txt").write_text("cpu")
    assert "no summary.json" in gpu_report.summary(tmp_path)


def test_summary_of_a_targets_run_lists_every_env(tmp_path):
    (tmp_path / "env.txt").write_text("NVIDIA H200, jax 0.11.2")
    reached = {"stop_at_test_return": 137.0, "reached": True, "update": 20, "test_return_greedy": 139.5}
    reached.update(env_steps_per_seed=20 * 131072, wall_s=40.0, seconds_total=61.5)
    missed = {"stop_at_test_return": 314.0, "reached": False}
    runs = {
        "wildfire_resource_management": {
            "compile_s": 15.0,
            "updates_done": 20,
            "train_s": 40.0,
            "target": reached,
        },
        "ocean_plastic_collection": {
            "compile_s": 30.0,
            "updates_done": 64,
            "train_s": 120.0,
            "target": missed,
        },
    }
    for env, summary in runs.items():
        (tmp_path / f"target_{env}").mkdir()
        (tmp_path / f"target_{env}" / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "target_aerial_wildfire_suppression").mkdir()  # timed out before writing anything
    text = gpu_report.summary(tmp_path)
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| 139.5 | 20 | 2,621,440 | 61.5 | 15.0 |" in rows["wildfire_resource_management"]
    assert (
        "not in 64 updates" in rows["ocean_plastic_collection"]
        and "150.0" in rows["ocean_plastic_collection"]
    )
    assert "failed or timed out" in rows["aerial_wildfire_suppression"]
    assert "End-to-end" not in text  # a targets-only folder has no throughput section


def test_summary_of_a_sweeps_run_tables_each_sweep_and_the_fusion_ratio(tmp_path):
    (tmp_path / "env.txt").write_text("NVIDIA H200, jax 0.11.2")
    for name, seconds in (("sweep_wfc_lr_ent_fused", 40), ("sweep_wfc_lr_ent_nofuse", 100)):
        (tmp_path / f"step_{name}.json").write_text(json.dumps({"exit": 0, "seconds": seconds}))
        for combination in ("lr=1e-3", "lr=3e-3"):
            run = tmp_path / name / combination
            run.mkdir(parents=True)
            (run / "eval.json").write_text(json.dumps({"num_seeds": 3, "env_steps_per_seed": 20480}))
    (tmp_path / "sweep_wfc_256").mkdir()
    (tmp_path / "step_sweep_wfc_256.json").write_text(json.dumps({"exit": 124, "seconds": 150}))
    text = gpu_report.summary(tmp_path)
    # 2 combinations x 3 seeds x 20,480 env steps = 122,880 in 40 s = 3,072 env steps/s
    assert "| sweep_wfc_lr_ent_fused | 2 | 6 | 40 | 3.07e+03 |" in text
    assert "| sweep_wfc_lr_ent_nofuse | 2 | 6 | 100 | 1.23e+03 |" in text
    assert "sweep_wfc_lr_ent: --no-fuse takes 2.50x the fused wall time." in text
    assert "| sweep_wfc_256 | failed or timed out (see log.txt) |" in text
    assert "Time to 0.92" not in text  # a PART=sweeps folder has only its own table
