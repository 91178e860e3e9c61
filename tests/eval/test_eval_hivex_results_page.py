"""The HIVEX results page (`hivex_jax.eval.results_page`, written by `scripts/hivex_results.py page`)
rendered from a tiny hand-made results folder (no training), and the cells it is made of
(`hivex_jax.eval.hivex_cells`)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.studies import hivex_configs, study
from hivex_jax.eval import hivex_cells, hivex_records, results_page, results_trends
from hivex_jax.eval.hivex_published import load_published

REPO = Path(__file__).resolve().parents[2]
WFC, WRM, OPC = "WindFarmControl-v0", "WildfireResourceManagement-v0", "OceanPlasticCollection-v0"


def _summary(mean, ci, seeds):
    return {"mean": mean, "ci95": ci, "iqm": mean, "num_seeds": seeds, "num_worlds": 2}


def _held_out(greedy, stochastic, scripted, random, stat_key, stat_per_world):
    """eval.json: 2 seeds x 2 worlds; the stochastic policy's `stat_key` per world per seed."""
    per_world = [
        {"world": 6000 + i, "return_mean": stochastic, "stats": {stat_key: values}}
        for i, values in enumerate(stat_per_world)
    ]
    return {
        "worlds": [6000, 6001],
        "num_seeds": 2,
        "env_steps_per_seed": 1000,
        "policies": {
            "greedy": {"summary": _summary(greedy, 10.0, 2), "per_world": []},
            "stochastic": {"summary": _summary(stochastic, 20.0, 2), "per_world": per_world},
            "scripted": {"summary": _summary(scripted, 0.0, 1), "per_world": []},
            "random": {"summary": _summary(random, 0.0, 1), "per_world": []},
        },
    }


def _hivex(stochastic, scripted, random, length, scale=1.0, runs=(None,), agent_length=None):
    """eval_hivex.json; `agent_length` None: written before the per-agent episode length was counted."""
    run_means = [stochastic] if runs == (None,) else list(runs)
    lengths = {"episode_length": length}
    if agent_length is not None:
        lengths.update(world_episode_length=length, agent_episode_length=agent_length)
    return {
        "protocol": "hivex",
        "test_run": {"agent_steps": int(8_000_000 * scale), "summary_freq": 40_000, "runs": len(run_means)},
        "agent_steps_scale": scale,
        "policies": {
            "stochastic": {"cell": stochastic, **lengths, "runs": [{"mean": m} for m in run_means]},
            "scripted": {"cell": scripted, "episode_length": length, "runs": [{"mean": scripted}]},
            "random": {"cell": random, "episode_length": length, "runs": [{"mean": random}]},
        },
    }


def _write(folder, env_id, name, held=None, hivex=None):
    run_dir = folder / env_id / name
    run_dir.mkdir(parents=True)
    if held is not None:
        (run_dir / "eval.json").write_text(json.dumps(held))
    if hivex is not None:
        (run_dir / "eval_hivex.json").write_text(json.dumps(hivex))


@pytest.fixture()
def results_folder(tmp_path):
    """WFC task 0 patterns 0-2 complete (pattern 0 at a 0.01 HIVEX budget, 3 runs), WRM level 1 held-out
    only, and a stray folder that is no cell."""
    ip = "individual_performance"
    _write(
        tmp_path,
        WFC,
        "task0_level0",
        _held_out(4400.0, 4300.0, 4950.0, 1200.0, ip, [[4000.0, 4100.0], [4200.0, 4300.0]]),
        _hivex(4500.0, 4900.0, 1250.0, 4999.0, scale=0.01, runs=(4490.0, 4500.0, 4510.0)),
    )
    _write(
        tmp_path,
        WFC,
        "task0_level1",
        _held_out(4410.0, 4310.0, 4950.0, 1200.0, ip, [[1.0, 1.0], [1.0, 1.0]]),
        _hivex(4600.0, 4900.0, 1250.0, 4999.0, agent_length=4000.0),
    )
    _write(
        tmp_path,
        WFC,
        "task0_level2",
        _held_out(4420.0, 4320.0, 4950.0, 1200.0, ip, [[1.0, 1.0], [1.0, 1.0]]),
        _hivex(4700.0, 4900.0, 1250.0, 4999.0),
    )
    _write(
        tmp_path, WRM, "task0_level1", _held_out(140.0, 120.0, 135.0, 100.0, ip, [[30.0, 31.0], [32.0, 33.0]])
    )
    (tmp_path / WFC / "notes").mkdir()
    return tmp_path


def _row(page, prefix):
    rows = [line for line in page.splitlines() if line.startswith(prefix)]
    assert len(rows) == 1, (prefix, rows)
    return [c.strip() for c in rows[0].strip("|").split("|")]


def test_results_table_rows(results_folder):
    results = hivex_records.load_results(results_folder)
    assert set(results) == {hivex_cells.Cell(WFC, 0, p) for p in range(3)} | {hivex_cells.Cell(WRM, 0, 1)}
    page = results_page.render_page(results, "python scripts/hivex_results.py page --records X")
    assert "python scripts/hivex_results.py page --records X" in page
    # 2 x 9 WFC + 3 x 10 WRM + 7 x 10 DBR + 4 OPC + 9 x 10 AWS published cells; 3 WFC cells complete
    assert "3 of 212 published cells have both our results" in page
    row = _row(page, "| 0 Generate Energy (main) | 0 |")
    # task, pattern, HIVEX test mean, best run, ours HIVEX protocol, greedy, stochastic, scripted, random,
    # normalised score, why
    assert row[2:9] == [
        "4605.9",
        "4611.6",
        "4500.0",
        "4400.0 ± 10.0",
        "4300.0 ± 20.0",
        "4900.0 / 4950.0",
        "1250.0 / 1200.0",
    ]
    # held-out normalised score: (4400 - 1200) / (4950 - 1200), (4300 - 1200) / (4950 - 1200)
    assert row[9] == "0.85 / 0.83"
    assert "in magnitude only" in row[10] and "×0.01" in row[10] and "runs" not in row[10]
    not_run = _row(page, "| 0 Generate Energy (main) | 3 |")
    assert not_run[2] == "4594.0" and not_run[4:9] == ["—", "—", "—", "— / —", "— / —"]
    assert not_run[9] == "—" and not_run[10] == "not run"
    wrm = _row(page, "| 0 Distribute Resources (main) | 1 |")
    assert wrm[2] == "92.7" and wrm[3] == "93.92" and wrm[4] == "—" and wrm[5] == "140.0 ± 10.0"
    assert "no HIVEX-protocol run" in wrm[10]
    # every published cell has a row: 2 WFC tasks x 9 patterns, OPC's 4 tasks with no level
    wfc_table = page.split("## Wind Farm Control")[1].split("### Logged statistics")[0]
    assert sum(line.startswith("| 1 Avoid Damage |") for line in wfc_table.splitlines()) == 9
    assert _row(page, "| 3 Avoid Plastic | — |")[2] == "-2.43"
    # HIVEX's per-run test means beside ours for the one cell it published them for
    assert (
        "4600.1, 4606.1, 4611.6; ours under the HIVEX protocol (run i = training seed i): 4490.0, 4500.0"
        in page
    )


def test_not_run_list(results_folder):
    lines = results_page.not_run_lines(hivex_records.load_results(results_folder))
    assert lines[0] == (
        "- of the default cells (`run` without `--cells`): "
        f"{WFC} task 0 patterns 3–8; {WRM} task 0 levels 1–10; "
        "DroneBasedReforestation-v0 task 0 level 1; OceanPlasticCollection-v0 task 0; "
        f"AerialWildfireSuppression-v0 task 0 level 1 ({WRM} task 0 level 1 has eval.json only)"
    )
    assert f"- {WFC}: task 0 patterns 3–8; task 1 patterns 0–8" in lines
    assert f"- {WRM}: task 0 levels 1–10; task 1 levels 1–10; task 2 levels 1–10" in lines
    assert f"- {OPC}: task 0; task 1; task 2; task 3" in lines


def test_no_shipped_env_leaves_cells_to_a_gpu_and_the_legend_then_drops_the_gpu_budget(results_folder):
    """Since the AWS encoder change (~9 min a cell on one core) every published cell trains on the CPU:
    no cell is a GPU-budget cell, the not-run list gives AWS tasks 1-8 as "not run" cells, and the legend
    has no GPU-budget sentence."""
    aws = "AerialWildfireSuppression-v0"
    assert not any(c.gpu_budget for env in hivex_cells.HIVEX_ENVS for c in hivex_cells.published_cells(env))
    assert hivex_cells.gpu_budget_spec(aws) is None
    results = hivex_records.load_results(results_folder)
    page = results_page.render_page(results, "cmd")
    assert hivex_cells.GPU_BUDGET not in page
    aws_table = page.split(f"(`{aws}`)")[1]
    assert _row(aws_table, "| 1 Max Extinguished Trees | 7 |")[10] == "not run"
    (line,) = [line for line in results_page.not_run_lines(results) if line.startswith(f"- {aws}: ")]
    assert line == f"- {aws}: " + "; ".join(f"task {t} levels 1–10" for t in range(9))


def test_cells_left_to_a_gpu_are_marked_listed_with_their_command_and_not_counted_as_measured(
    results_folder, monkeypatch
):
    """An env whose reference cells leave tasks to a GPU (`cpu_tasks`; here AWS as it was before its
    encoder change, task 0 only): such a cell's row says so instead of "not run", the not-run list gives the
    one command that trains them, and `measured_cells` (the page's guard against losing cells) does not take
    those rows for results."""
    import dataclasses

    aws = "AerialWildfireSuppression-v0"
    monkeypatch.setitem(
        hivex_cells.HIVEX_ENVS, aws, dataclasses.replace(hivex_cells.HIVEX_ENVS[aws], cpu_tasks=(0,))
    )
    assert hivex_cells.Cell(aws, 1, 1).gpu_budget and not hivex_cells.Cell(aws, 0, 2).gpu_budget
    assert not hivex_cells.Cell(OPC, 3, None).gpu_budget
    assert hivex_cells.gpu_budget_spec(aws) == "aws:1-8:1-10" and hivex_cells.gpu_budget_spec(WFC) is None
    results = hivex_records.load_results(results_folder)
    page = results_page.render_page(results, "cmd")
    aws_table = page.split(f"(`{aws}`)")[1]
    assert _row(aws_table, "| 0 Main | 2 |")[10] == "not run"
    assert _row(aws_table, "| 1 Max Extinguished Trees | 7 |")[10] == hivex_cells.GPU_BUDGET
    assert (
        sum(hivex_cells.GPU_BUDGET in line for line in aws_table.splitlines() if line.startswith("| ")) == 80
    )
    (line,) = [line for line in results_page.not_run_lines(results) if line.startswith(f"- {aws}: ")]
    assert line.startswith(
        f"- {aws}: task 0 levels 1–10; GPU budget (`python scripts/hivex_results.py run --gpu --fuse --cells "
        "aws:1-8:1-10`): task 1 levels 1–10; task 2 levels 1–10;"
    )
    assert "Aerial Wildfire Suppression tasks 1–8" in page
    assert {c.env_id for c in results_page.measured_cells(page)} == {WFC, WRM}


def test_run_gpu_trains_with_the_gpu_config_for_the_whole_budget_and_refuses_a_cell_without_one(tmp_path):
    """`run --gpu`: the cell's `<algo>_<env>_gpu.yaml` with the early stop off (after the cell's settings,
    before the user's overrides); a cell whose algo has no GPU config is refused in one line before
    anything trains."""
    from baselines.studies import hivex_configs, hivex_results

    cell = hivex_cells.Cell("AerialWildfireSuppression-v0", 3, 4)
    assert hivex_configs.cell_config(cell, gpu=True).name == "ippo_aerial_wildfire_suppression_gpu.yaml"
    assert hivex_configs.cell_config(cell).name == "ippo_aerial_wildfire_suppression.yaml"
    settings = hivex_cells.train_settings(cell, ["stop_at_test_return=10"], gpu=True)
    assert settings[-2:] == ["stop_at_test_return=null", "stop_at_test_return=10"]
    assert "stop_at_test_return=null" not in hivex_cells.train_settings(cell, [])
    mappo = "mappo:aws:0:1"
    with pytest.raises(
        SystemExit, match=r"--gpu: .*\(MAPPO\) has no GPU config \(configs/mappo_aerial_wildfire"
    ):
        hivex_results.main(["run", "--gpu", "--cells", mappo, "--out-dir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_trend_sentence_in_the_page(results_folder):
    page = results_page.render_page(hivex_records.load_results(results_folder), "cmd")
    trend = next(line for line in page.splitlines() if line.startswith("**Pattern trend"))
    # HIVEX 4588.4-4605.9 is flat (0.4%); ours 4500-4700 over patterns 0-2 spreads 4.3%
    assert "HIVEX: pattern 2 lowest (4588.4), 0 highest (4605.9), spread 0.4% of the mean (flat)" in trend
    assert "ours under the same protocol: pattern 0 lowest (4500.0), 2 highest (4700.0)" in trend
    assert trend.endswith("not reproduced (HIVEX flat, ours not).")
    # its 95% CI over our training seeds: pattern 0's 3 runs (4490-4510) never reach patterns 1 and 2 (one
    # run each), so every bootstrap resample has the point's ranks
    assert "rank correlation over the 3 patterns both have -1.00 (95% CI -1.00 to -1.00)" in trend
    # the trend figure (patterns 0-2 of task 0) is linked below it; WRM (one cell) has none
    wfc = page.split("## Wind Farm Control")[1].split("\n## ")[0]
    assert "](images/hivex_trend_wfc.png)" in wfc and page.count("](images/hivex_trend_") == 1
    wrm = next(line for line in page.splitlines() if line.startswith("**Level trend") and "92.7" in line)
    assert "0 level(s) run, too few" in wrm  # WRM ran held-out only: no HIVEX-protocol value


@pytest.mark.parametrize(
    "ours, verdict, rho",
    [
        ({1: 1.0, 2: 2.0, 3: 3.0, 4: 1.5}, "reproduced (same lowest and highest)", "1.00"),
        ({1: 3.0, 2: 2.0, 3: 1.0, 4: 2.5}, "not reproduced", "-1.00"),
        # ours: lowest at 2 instead of 1, highest at 3 as HIVEX; ranks 2,1,4,3 vs 1,3,4,2 -> rho 0.4
        ({1: 2.0, 2: 1.0, 3: 4.0, 4: 3.0}, "not reproduced", "0.40"),
        # ranks 2,1,3,4 vs 1,3,4,2 -> d = 1,-2,-1,2 -> rho = 1 - 6*10/60 = 0
        ({1: 2.0, 2: 1.0, 3: 3.0, 4: 4.0}, "not reproduced", "0.00"),
        ({1: 100.0, 2: 100.5, 3: 101.0, 4: 100.2}, "not reproduced (ours flat, HIVEX not)", None),
    ],
)
def test_level_trend_verdicts(ours, verdict, rho):
    published = {1: 10.0, 2: 20.0, 3: 30.0, 4: 15.0}
    text = results_trends.level_trend(published, ours)
    assert text.startswith("HIVEX: level 1 lowest (10.0), 3 highest (30.0), spread 106.7% of the mean;")
    assert text.endswith(f": {verdict}.")
    if rho is not None:
        assert f"rank correlation over the 4 levels both have {rho}" in text


def test_level_trend_partly_and_flat_and_too_few():
    published = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0, 5: 5.0}
    # ours lowest at 2 (HIVEX: 1), highest at 5 as HIVEX: ranks differ by one swap -> rho 0.9
    partly = results_trends.level_trend(published, {1: 2.0, 2: 1.0, 3: 3.0, 4: 4.0, 5: 5.0})
    assert "rho" not in partly and "both have 0.90" in partly
    assert partly.endswith("partly reproduced (similar order, different extremes).")
    flat = {0: 4605.9, 1: 4602.0, 2: 4588.4}
    assert results_trends.level_trend(flat, {0: 4950.0, 1: 4951.0, 2: 4949.0}, "pattern").endswith(
        "reproduced (flat in both)."
    )
    assert "2 pattern(s) run, too few" in results_trends.level_trend(
        flat, {0: 1.0, 1: 2.0, 7: 3.0}, "pattern"
    )


def test_statistics_tables(results_folder):
    page = results_page.render_page(hivex_records.load_results(results_folder), "cmd")
    section = page.split("**`Individual Performance`** (ours: `individual_performance`)")[1]
    row = _row(section.split("**`")[0], "| 0 Generate Energy (main) |")
    # pattern 0: mean of 4000, 4100, 4200, 4300 (2 seeds x 2 worlds); pattern 3 not run: HIVEX only
    assert row[1] == "4605.9 / 4150.0" and row[2] == "4602.0 / 1.000" and row[4] == "4594.0"
    # episode length: ours is the per-agent length (pattern 1); a result from before it was counted shows
    # the world's length in brackets, not as ours (pattern 0)
    length = page.split("**`Environment/Episode Length`** (ours: HIVEX-protocol per-agent episode length)")
    length_row = _row(length[1].split("**`")[0], "| 0 Generate Energy (main) |")
    assert length_row[1] == "4999.0 / — (world 4999.0)" and length_row[2] == "4999.0 / 4000.0"
    assert "the world's length N, a different quantity" in page
    # WRM: the held-out stat is there even without a HIVEX-protocol run; its caveat is printed
    wrm = page.split("**`Individual Performance`** (ours: `individual_performance`)")[2]
    assert _row(wrm.split("**`")[0], "| 0 Distribute Resources (main) |")[1] == "17.9 / 31.5"
    assert "Note: how HIVEX aggregates it is NOT FOUND" in page
    # every HIVEX statistic of every env has a table and a hand-made mapping to one of our keys
    published = load_published()["envs"]
    for env_id, env in published.items():
        for table in env["tables"]:
            if table["kind"] == "stat_test_mean":
                assert f"**`{table['statistic']}`** (ours: " in page
                assert table["statistic"] in hivex_cells.HIVEX_ENVS[env_id].stat_map


def test_parse_cells_and_budget():
    assert hivex_cells.parse_cells("wfc:0:0-2, opc:0:none,WildfireResourceManagement-v0:1:10,wfc:0:1") == [
        hivex_cells.Cell(WFC, 0, 0),
        hivex_cells.Cell(WFC, 0, 1),
        hivex_cells.Cell(WFC, 0, 2),
        hivex_cells.Cell(OPC, 0, None),
        hivex_cells.Cell(WRM, 1, 10),
    ]
    for bad in ("opc:0:1", "wfc:2:0", "wfc:0:9", "wrm:0:0", "wrm:0", "xyz:0:1", "wfc:0:3-1", "wrm:0:none"):
        with pytest.raises(ValueError):
            hivex_cells.parse_cells(bad)
    assert len(hivex_cells.default_cells()) == 9 + 10 + 3
    assert hivex_cells.hivex_agent_steps(WFC, 0.01) == (80_000, 8_000_000, False)
    assert hivex_cells.hivex_agent_steps(WFC, 0.001) == (
        40_000,
        8_000_000,
        True,
    )  # one summary window at least


def test_train_command(tmp_path):
    cell = hivex_cells.Cell(WRM, 2, 7)
    run_dir = cell.path(tmp_path)
    settings = hivex_cells.train_settings(cell, ["lr=1e-3"])
    config = REPO / "configs" / hivex_cells.HIVEX_ENVS[WRM].config
    cmd = study.train_args(run_dir, config, settings, resume=False, resume_settings=["lr=1e-3"])
    assert cmd[cmd.index("--config") + 1].endswith("configs/ippo_wildfire_resource_management.yaml")
    assert ["task=2", "level=7", "test_worlds=6000:6032", "gif_frames=0", "lr=1e-3"] == cmd[
        cmd.index("task=2") : cmd.index("lr=1e-3") + 1
    ]
    assert cmd[-2:] == [f"out_dir={tmp_path / WRM}", "name=task2_level7"]
    assert not any(
        a.startswith("level=") for a in hivex_cells.train_settings(hivex_cells.Cell(OPC, 0, None), [])
    )
    resumed = study.train_args(run_dir, config, settings, resume=True, resume_settings=["lr=1e-3"])
    assert resumed == ["train", "--no-progress", "--resume", str(run_dir), "lr=1e-3"]


@pytest.mark.slow
def test_page_command_writes_the_page_it_renders(results_folder, tmp_path):
    """`scripts/hivex_results.py record` then `page` (their own processes) write what `render_page` renders
    of the run folders, with the regenerate command naming the records folder; no summary.json: the
    measurement line has dates but no JAX version."""
    records, out = tmp_path / "records", tmp_path / "page.md"
    script = [sys.executable, str(REPO / "scripts" / "hivex_results.py")]
    recorded = subprocess.run(
        [*script, "record", "--out-dir", str(results_folder), "--records", str(records)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert "4 cell(s) with results under" in recorded.stdout
    cmd = [*script, "page", "--records", str(records), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    command = f"python scripts/hivex_results.py page --records {records} --out {out}"
    line = results_page.provenance(hivex_records.load_records(records))
    assert line.startswith("Our cells were measured on ") and "JAX" not in line
    checks = hivex_configs.config_checks(hivex_records.load_records(records))  # as `page` marks the cells
    rendered = results_page.render_page(
        hivex_records.load_results(results_folder), command, line, records, checks=checks
    )
    assert out.read_text() == rendered
    assert "4 cell(s) with records" in done.stdout
    # the figure it links, beside the page
    assert [p.name for p in (tmp_path / "images").iterdir()] == ["hivex_trend_wfc.png"]


def test_env_notes_sit_in_their_section(results_folder):
    page = results_page.render_page(hivex_records.load_results(results_folder), "cmd")
    dbr = page.split("## Drone-Based Reforestation")[1].split("\n## ")[0]
    assert hivex_cells.HIVEX_ENVS["DroneBasedReforestation-v0"].notes in dbr
    assert page.count("**Doing nothing.**") == 1


def test_a_level_trend_keeps_one_budget_per_task():
    """`one_budget`: per env, algo and task the cells at the most common budget (a tie: the larger) stay,
    the others are named in one sentence; cells without a held-out result and other tasks are untouched."""
    dbr = "DroneBasedReforestation-v0"

    def at(steps):
        return {"held_out": {"env_steps_per_seed": steps}}

    results = {
        hivex_cells.Cell(dbr, 0, level): at(819_200 if level <= 5 else 409_600) for level in range(1, 11)
    }
    results[hivex_cells.Cell(dbr, 0, 5)] = at(409_600)  # 4 at 819,200 vs 6 at 409,600
    results[hivex_cells.Cell(dbr, 1, 1)] = at(819_200)
    results[hivex_cells.Cell(dbr, 1, 2)] = {"hivex": {}}  # no held-out result: no budget to compare
    kept, notes = results_trends.one_budget(results)
    assert sorted(c.level for c in kept if c.task == 0) == [5, 6, 7, 8, 9, 10]
    assert {c.level for c in kept if c.task == 1} == {1, 2}
    assert notes == [
        "task 0: levels 1–4 left out (trained at another budget than the 409,600 env steps per seed of the "
        "others)"
    ]
    tie = {hivex_cells.Cell(dbr, 0, level): at(819_200 if level <= 2 else 409_600) for level in range(1, 5)}
    assert sorted(c.level for c in results_trends.one_budget(tie)[0]) == [1, 2]


def test_subtask_cells_train_with_their_env_subtask_settings():
    """DBR's subtask cells train at HIVEX's per-run budget (409,600 env steps), its main task at the shipped
    819,200; the user's overrides still come last and the GPU config is left alone."""
    from baselines.config import load_config

    dbr = "DroneBasedReforestation-v0"
    config = REPO / "configs" / hivex_cells.HIVEX_ENVS[dbr].config

    def budget(cell, overrides=(), gpu=False):
        return load_config(config, hivex_cells.train_settings(cell, list(overrides), gpu)).total_env_steps

    assert budget(hivex_cells.Cell(dbr, 0, 4)) == 819_200
    assert budget(hivex_cells.Cell(dbr, 3, 4)) == 409_600
    assert budget(hivex_cells.Cell(dbr, 3, 4), ["total_env_steps=20480"]) == 20_480
    assert "total_env_steps=409600" not in hivex_cells.train_settings(hivex_cells.Cell(dbr, 3, 4), [], True)
    assert hivex_cells.train_settings(hivex_cells.Cell(WRM, 2, 7), []) == [
        "task=2",
        "level=7",
        "test_worlds=6000:6032",
        "gif_frames=0",
    ]
