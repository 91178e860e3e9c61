"""Committed result records (`hivex_jax.eval.result_records`, `hivex_jax.eval.hivex_records.hivex_record`):
the HIVEX results page renders the same from the records as from the run folders they were made from,
records are small and dated, and `page` refuses to drop a measured cell. Fake run folders
(tests/eval/fake_results.py), no training."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path

import pytest
from fake_results import FAKE_HELD_OUT_DATE, FAKE_HIVEX_CELLS, FAKE_HIVEX_DATE, fake_hivex_folder

from baselines.studies import hivex_configs, hivex_results, study
from hivex_jax.eval import hivex_records, result_records, results_page
from hivex_jax.eval.hivex_cells import Cell

REPO = Path(__file__).resolve().parents[2]
DBR = "DroneBasedReforestation-v0"


def _from_records(records_dir: Path) -> dict:
    return {c: hivex_records.record_result(r) for c, r in hivex_records.load_records(records_dir).items()}


@pytest.fixture()
def recorded(tmp_path):
    """(run folders, records made from them)."""
    runs = fake_hivex_folder(tmp_path / "runs")
    records = tmp_path / "records"
    done = hivex_records.record_folders(runs, records)
    assert sorted((c.env_id, c.dirname) for c, _, changed in done if changed) == sorted(FAKE_HIVEX_CELLS)
    return runs, records


def test_page_from_records_is_byte_identical_to_page_from_run_folders(recorded):
    runs, records = recorded
    from_runs = results_page.render_page(hivex_records.load_results(runs), "cmd")
    from_records = results_page.render_page(_from_records(records), "cmd")
    assert from_records == from_runs
    # the fake cells are on the page: complete, partial, with statistics
    assert "4 of 212 published cells have both our results" in from_runs
    assert len(results_page.measured_cells(from_runs)) == len(FAKE_HIVEX_CELLS)
    dbr_stats = from_runs.split("## Drone-Based Reforestation")[1].split("**`Tree Drop Count`**")[1]
    assert re.search(r"\| 0 [^|]+ \| [-\d.]+ / [-\d.]+ \|", dbr_stats)


def test_a_record_holds_what_the_page_renders_sorted_rounded_and_small(recorded):
    runs, records = recorded
    cell = Cell(DBR, 0, 1)
    path = records / DBR / "task0_level1.json"
    text = path.read_text()
    record = json.loads(text)
    assert text == result_records.dumps(record) + "\n" and list(record) == sorted(record)
    assert record["format_version"] == result_records.FORMAT_VERSION
    assert record["cell"] == {"env_id": DBR, "task": 0, "level": 1}
    assert record["source"] == cell.dirname  # tmp_path is outside the working directory: the folder's name
    assert record["summary"]["run_dir"] == cell.dirname
    assert record["measured_on"] == {"held_out": FAKE_HELD_OUT_DATE, "hivex": FAKE_HIVEX_DATE}
    assert record["summary"]["jax_version"] == "0.10.2" and "train_s" in record["summary"]
    raw = json.loads((cell.path(runs) / "eval.json").read_text())
    stochastic = record["held_out"]["policies"]["stochastic"]
    # per-seed means of the per-world returns; per-world means over seeds of the mapped statistics only
    seed_means = [
        sum(s) / len(s)
        for s in zip(*(w["return_per_seed"] for w in raw["policies"]["stochastic"]["per_world"]), strict=True)
    ]
    assert stochastic["seed_means"] == pytest.approx(seed_means, rel=1e-11)
    assert "unmapped_stat" not in stochastic["stats_per_world"]
    assert (
        len(stochastic["stats_per_world"]) == 12
        and len(stochastic["stats_per_world"]["tree_drop_count"]) == 32
    )
    assert stochastic["summary"] == pytest.approx(raw["policies"]["stochastic"]["summary"], rel=1e-11)
    # floats keep 12 significant digits; the HIVEX-protocol file is there but for its per-point lists
    assert max(len(m.group(0).lstrip("-").replace(".", "")) for m in re.finditer(r"-?\d+\.\d+", text)) <= 12
    hivex = json.loads((cell.path(runs) / "eval_hivex.json").read_text())
    assert set(record["hivex"]) == set(hivex)
    assert "summary_points" not in text and record["hivex"]["policies"]["stochastic"]["runs"][0]["mean"] == (
        pytest.approx(hivex["policies"]["stochastic"]["runs"][0]["mean"], rel=1e-11)
    )
    # the real size (3 seeds x 32 worlds, every DBR statistic, 200 summary points per run) stays small
    assert len(text) < 12_000, len(text)
    assert (
        os.path.getsize(cell.path(runs) / "eval_hivex.json") + os.path.getsize(cell.path(runs) / "eval.json")
        > 50_000
    )
    # a HIVEX-protocol-only cell has no held-out part, a held-out-only cell no HIVEX part
    only_hivex = json.loads((records / "WindFarmControl-v0" / "task1_level4.json").read_text())
    assert "held_out" not in only_hivex and list(only_hivex["measured_on"]) == ["hivex"]
    assert "hivex" not in json.loads(
        (records / "WildfireResourceManagement-v0" / "task0_level1.json").read_text()
    )


def test_a_record_names_its_run_folder_relative_to_the_working_directory(tmp_path, monkeypatch):
    """A record holds no machine's absolute path: a run folder under the working directory (the repository
    root, where the scripts run) by its relative path, whether given absolute or relative, and one
    elsewhere by its name; the summary's `run_dir` alike."""
    repo = tmp_path / "repo"
    runs = fake_hivex_folder(repo / "runs" / "hivex_results")
    monkeypatch.chdir(repo)
    cell = Cell(DBR, 0, 1)
    for given in (cell.path(runs), cell.path(Path("runs/hivex_results"))):
        record = hivex_records.hivex_record(cell, given)
        assert record["source"] == f"runs/hivex_results/{DBR}/task0_level1"
        assert record["summary"]["run_dir"] == record["source"]  # fake summary.json: absolute run_dir
    assert result_records.portable_path(tmp_path / "elsewhere" / "run") == "run"
    assert result_records.portable_path(repo / "runs" / ".." / "logs" / "x") == "logs/x"  # normalised
    assert result_records.portable_summary({"jax_version": "x"}) == {"jax_version": "x"}


def test_refreshing_a_record_keeps_its_dates_unless_its_numbers_change(recorded):
    runs, records = recorded
    cell = Cell("WindFarmControl-v0", 0, 0)
    path = hivex_records.record_path(records, cell)
    before = path.read_text()
    # a copy of the run folder (file times reset to now) records the same numbers: the record is unchanged
    for name in ("summary.json", "eval_hivex.json"):
        os.utime(cell.path(runs) / name)
    assert hivex_records.record_cell(cell, cell.path(runs), records) == (path, False)
    assert path.read_text() == before
    # a re-evaluation under the HIVEX protocol today: its part and date change, the held-out date stays
    hivex = json.loads((cell.path(runs) / "eval_hivex.json").read_text())
    hivex["policies"]["stochastic"]["cell"] += 1.0
    (cell.path(runs) / "eval_hivex.json").write_text(json.dumps(hivex))
    assert hivex_records.record_cell(cell, cell.path(runs), records) == (path, True)
    dates = json.loads(path.read_text())["measured_on"]
    assert dates["held_out"] == FAKE_HELD_OUT_DATE and dates["hivex"] == result_records.file_date(path)


def test_page_command_renders_from_records_with_their_provenance(recorded, tmp_path, capsys):
    runs, records = recorded
    out = tmp_path / "page.md"
    assert hivex_results.main(["page", "--records", str(records), "--out", str(out)]) == 0
    command = f"python scripts/hivex_results.py page --records {records} --out {out}"
    line = (
        f"Our cells were measured on {FAKE_HELD_OUT_DATE}, {FAKE_HIVEX_DATE} with JAX 0.10.2 on cpu "
        "(the project's 2-core CPU machine unless a summary says otherwise)."
    )
    assert results_page.provenance(hivex_records.load_records(records)) == line
    compute = results_page.compute_lines(hivex_records.load_records(records))
    checks = hivex_configs.config_checks(hivex_records.load_records(records))
    expected = results_page.render_page(
        hivex_records.load_results(runs), command, line, records, compute, checks=checks
    )
    assert out.read_text() == expected and f"\n{line}\n" in expected and "## Compute" in expected
    # records made without a config (these fake ones) are marked as such
    assert {c.state for c in checks.values()} == {"not recorded"} and "## Configs of the records" in expected
    assert f"`{records}/<env id>/task<t>_level<l>.json`" in expected
    assert f"6 cell(s) with records in {records}" in capsys.readouterr().out


def test_record_command_imports_run_folders(recorded, tmp_path, capsys):
    runs, records = recorded
    fresh = tmp_path / "fresh"
    assert hivex_results.main(["record", "--out-dir", str(runs), "--records", str(fresh)]) == 0
    out = capsys.readouterr().out
    assert f"6 cell(s) with results under {runs}: 6 record(s) written, 0 unchanged, in {fresh}" in out
    assert sorted(p.relative_to(fresh) for p in fresh.rglob("*.json")) == sorted(
        p.relative_to(records) for p in records.rglob("*.json")
    )
    assert (
        hivex_results.main(
            ["record", "--cells", "wfc:0:0-2", "--out-dir", str(runs), "--records", str(fresh)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "WindFarmControl-v0 task 0 pattern 0: unchanged" in out
    assert (
        f"WindFarmControl-v0 task 0 pattern 2: no results in {Cell('WindFarmControl-v0', 0, 2).path(runs)}"
        in out
    )


def test_page_refuses_to_drop_measured_cells(recorded, tmp_path):
    runs, records = recorded
    out = tmp_path / "page.md"
    assert hivex_results.main(["page", "--records", str(records), "--out", str(out)]) == 0
    written = out.read_text()
    hivex_records.record_path(records, Cell(DBR, 0, 1)).unlink()
    hivex_records.record_path(records, Cell("OceanPlasticCollection-v0", 0, None)).unlink()
    with pytest.raises(SystemExit) as refused:
        hivex_results.main(["page", "--records", str(records), "--out", str(out)])
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"hivex_results page: refusing to write {out}: ")
    assert "would show 4 measured cell(s) instead of its 6" in message
    assert f"{DBR} task 0 level 1; OceanPlasticCollection-v0 task 0 (their records" in message
    assert out.read_text() == written
    assert hivex_results.main(["page", "--records", str(records), "--out", str(out), "--allow-fewer"]) == 0
    assert len(results_page.measured_cells(out.read_text())) == 4


def test_the_published_page_is_guarded(tmp_path):
    """docs/hivex_results.md as committed: the guard counts its measured cells (at least the "N of 212"
    line's complete ones) and an empty records folder may not replace them."""
    page = (REPO / "docs" / "hivex_results.md").read_text()
    complete = int(re.search(r"(\d+) of \d+ published cells have both our results", page).group(1))
    measured = results_page.measured_cells(page)
    assert len(measured) >= complete and len(set(measured)) == len(measured)
    copy = tmp_path / "hivex_results.md"
    copy.write_text(page)
    with pytest.raises(ValueError, match=f"instead of its {len(measured)}, and these would vanish: "):
        results_page.write_page(tmp_path / "no_records", copy, "cmd")
    assert copy.read_text() == page


def test_a_record_of_another_format_is_refused(recorded):
    _, records = recorded
    path = next(records.rglob("*.json"))
    record = json.loads(path.read_text())
    record["format_version"] = 99
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="format_version 99; this code reads 1"):
        hivex_records.load_records(records)


def test_dumps_and_rounding():
    value = {"b": [1, 2.5], "a": {"z": [{"x": 1.0}], "y": "§"}, "n": float("nan")}
    assert result_records.dumps(value) == (
        '{\n "a": {\n  "y": "§",\n  "z": [\n   {\n    "x": 1.0\n   }\n  ]\n },\n "b": [1, 2.5],\n "n": NaN\n}'
    )
    assert result_records.rounded({"v": [0.1 + 0.2, 4956.823338826497, 7, True]}) == {
        "v": [0.3, 4956.82333883, 7, True]
    }
    assert sys.float_info.dig >= result_records.SIGNIFICANT


def test_run_records_each_cell_as_it_finishes(tmp_path):
    """`run`'s study cells record themselves once trained and evaluated (`StudyCell.record`, called by
    `run_cell`), and again, unchanged, when kept."""
    fake = fake_hivex_folder(tmp_path / "fake")
    cell = Cell("OceanPlasticCollection-v0", 0, None)
    runs, records = tmp_path / "runs", tmp_path / "records"
    run_dir = cell.path(runs)

    def copy(name: str) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text((cell.path(fake) / name).read_text())

    study_cell = hivex_results.study_cell(cell, runs, 1.0, [], records)
    study_cell = dataclasses.replace(
        study_cell, train=lambda resume: copy("eval.json"), evaluate=lambda: copy("eval_hivex.json")
    )
    path = hivex_records.record_path(records, cell)
    done = study.run_cell(study_cell)
    assert done.train.startswith("trained") and done.evaluate.startswith("evaluated")
    assert done.recorded == f"recorded in {path}"
    assert results_page.measured_cells(results_page.render_page(_from_records(records), "cmd")) == [cell]
    again = study.run_cell(study_cell)
    assert (again.train, again.evaluate, again.recorded) == ("kept", "kept", f"record {path} unchanged")


def test_run_says_which_cells_were_trained_with_another_config_and_retrains_them_on_request(tmp_path, capsys):
    """A cell folder whose config.yaml differs from the cell's shipped config now is named with the key
    that changed; a finished one is kept unless --retrain-stale, an unfinished one (or any with it) is moved
    under superseded/ with its files, and a current folder is left alone without a word."""
    from baselines.config import load_config
    from hivex_jax.eval.hivex_cells import train_settings

    runs = tmp_path / "runs"
    cells = [Cell("DroneBasedReforestation-v0", 0, level) for level in (1, 2, 3)]
    for cell, steps, finished in zip(cells, (409_600, 819_200, 409_600), (True, True, False), strict=True):
        config = load_config(study.ROOT / "configs" / cell.config, train_settings(cell, []))
        assert config.total_env_steps == 819_200  # the shipped DBR budget this test is written against
        cell.path(runs).mkdir(parents=True)
        (cell.path(runs) / "config.yaml").write_text(config.replace(total_env_steps=steps).to_yaml())
        if finished:
            (cell.path(runs) / "eval.json").write_text("{}")
    stale, current, unfinished = cells

    hivex_configs.check_stale(cells, runs, [], retrain=False)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(stale.label() + ": kept") and "total_env_steps 409600 -> 819200" in lines[0]
    assert "--retrain-stale" in lines[0]
    assert lines[1].startswith(unfinished.label() + ": trained with another config")
    assert "moved to" in lines[1]
    assert (stale.path(runs) / "eval.json").is_file() and (current.path(runs) / "eval.json").is_file()
    assert not unfinished.path(runs).exists()

    hivex_configs.check_stale(cells, runs, [], retrain=True)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(stale.label()) and "moved to" in line
    assert not stale.path(runs).exists() and (current.path(runs) / "eval.json").is_file()
    moved = sorted((runs / "DroneBasedReforestation-v0" / "superseded").iterdir())
    assert [p.name.split("-")[0] for p in moved] == ["task0_level1", "task0_level3"]
    assert (moved[0] / "eval.json").is_file() and (moved[1] / "config.yaml").is_file()


def test_compute_counts_a_fused_cell_as_its_share_of_the_program():
    """A cell trained as one of N members of a fused program (`run --fuse`) counts 1/N of the program's
    compile + training + evaluation seconds, plus its own HIVEX protocol: two members of a 7,200 s
    program with 360 s of protocol each take 2 x (3,600 + 360) s = 2.20 h; alone, the same seconds
    would count twice over (4.20 h)."""
    held_out = {"env_steps_per_seed": 1_000, "num_seeds": 3}
    summary = {"compile_s": 200.0, "train_s": 6_800.0, "eval_s": 200.0}

    def records(fused: bool) -> dict:
        extra = {"fused_members": 2} if fused else {}
        return {
            Cell(DBR, 3, level): {
                "summary": {**summary, **extra},
                "held_out": held_out,
                "hivex": {"wall_s": 360.0},
            }
            for level in (1, 2)
        }

    def total_hours(lines: list[str]) -> str:
        (row,) = [line for line in lines if line.startswith("| all |")]
        return row.split("|")[3].strip()

    assert total_hours(results_page.compute_lines(records(fused=True))) == "2.20"
    assert total_hours(results_page.compute_lines(records(fused=False))) == "4.20"
    assert "counts 1/N of that program's time" in "\n".join(results_page.compute_lines(records(True)))


def test_run_fuse_trains_the_unfinished_cells_with_their_own_configs_into_their_cell_folders(
    tmp_path, monkeypatch
):
    """`run --fuse` hands the fused trainer each unfinished cell's config as `hivex train` would load it
    (the cell's shipped config, its settings, the overrides, its folder) and its cell folder; a finished
    cell is left out; the levels of one env and algo are one program, a MAPPO cell another."""
    from baselines.cli import sweep as cli_sweep
    from baselines.config import load_config
    from baselines.run.fused_plan import plan_programs
    from hivex_jax.eval.hivex_cells import parse_cells, train_settings

    runs = tmp_path / "runs"
    cells = parse_cells("wrm:0:1-3,mappo:wrm:0:1")
    finished = cells[1]
    finished.path(runs).mkdir(parents=True)
    (finished.path(runs) / "eval.json").write_text("{}")
    given = {}

    def train_fused_programs(configs, labels, run_dirs, max_members=None, progress=True, command=""):
        given.update(configs=configs, labels=labels, run_dirs=run_dirs, max_members=max_members)
        return {}

    monkeypatch.setattr(cli_sweep, "train_fused_programs", train_fused_programs)
    hivex_results.train_fused(cells, runs, ["lr=1e-3"], max_members=5)
    pending = [cells[0], cells[2], cells[3]]
    assert given["labels"] == [c.label() for c in pending]
    assert given["run_dirs"] == [c.path(runs) for c in pending] and given["max_members"] == 5
    for cell, config in zip(pending, given["configs"], strict=True):
        where = [f"out_dir={cell.path(runs).parent}", f"name={cell.dirname}"]
        shipped = study.ROOT / "configs" / cell.config
        assert config == load_config(shipped, [*train_settings(cell, ["lr=1e-3"]), *where])
        assert (config.level, config.lr, config.algo) == (cell.level, 1e-3, cell.algo)
    assert plan_programs(given["configs"]) == [[0, 1], [2]]


def test_run_fuse_refuses_a_bad_member_count_before_anything_moves(tmp_path):
    with pytest.raises(SystemExit, match="--max-members must be at least 1; got 0"):
        hivex_results.main(
            ["run", "--fuse", "--max-members", "0", "--cells", "wrm:0:1", "--out-dir", str(tmp_path)]
        )
    assert not any(tmp_path.iterdir())
