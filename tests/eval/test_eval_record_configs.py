"""Result records that know which config made them (`baselines.studies.config_fingerprint`): the
fingerprint, a record's comparison with its cell's shipped config now, the marks on the HIVEX results
page, its CSV and the suite table, and the rules that backfill records made before
(`baselines.studies.config_backfill`). Fake run folders (tests/eval/fake_results.py), no training."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_results import fake_hivex_folder, fake_results

from baselines.config import IPPOConfig, load_config
from baselines.studies import config_backfill as backfill
from baselines.studies import config_fingerprint as fp
from baselines.studies import config_resolve as resolve
from baselines.studies import hivex_configs, hivex_results, suite_results
from hivex_jax.eval import hivex_records, results_csv, results_page, suite_table
from hivex_jax.eval.hivex_cells import Cell, train_settings

REPO = Path(__file__).resolve().parents[2]
WFC_CONFIG = REPO / "configs" / "ippo_wind_farm_control.yaml"
VERSION = "WindFarmControl-v0 golden 0123456789abcdef"


def _values(*overrides: str) -> dict:
    return load_config(WFC_CONFIG, list(overrides)).to_dict()


def _changed_copy(configs: Path, name: str, section: str, key: str, value: str) -> None:
    """Change one key of the shipped config `name` in a copy of configs/: the file becomes the original
    (moved aside) as its base, with `section.key: value` on top."""
    (configs / name).rename(configs / f"original_{name}")
    (configs / name).write_text(f"base: original_{name}\n{section}:\n  {key}: {value}\n")


def test_same_config_same_fingerprint_a_learning_key_changes_it_an_output_key_does_not():
    base = fp.config_fingerprint(_values(), VERSION)
    assert base == fp.config_fingerprint(_values(), VERSION) and len(base) == fp.DIGITS
    int(base, 16)  # hex digits
    learning = ["lr=0.0005", "ent_coef=0.01", "num_seeds=5", "test_worlds=6000:6008", "seed=1", "eval_seed=1"]
    learning += ["hidden_sizes=[32,32]", "train_env_params.max_steps=400", "total_env_steps=200000"]
    for change in learning:
        assert fp.config_fingerprint(_values(change), VERSION) != base, change
    outputs = ["out_dir=elsewhere", "name=x", "gif_frames=3", "gif_stride=7", "checkpoint_every=2"]
    for change in [*outputs, "pregenerate_worlds=false", "cpu_compile_level=3"]:
        assert fp.config_fingerprint(_values(change), VERSION) == base, change
    # the env's version is hashed with it
    assert fp.config_fingerprint(_values(), VERSION.replace("0123", "4567")) != base
    # every excluded key is a config key
    assert set(fp.NOT_LEARNING_KEYS) | {fp.EVAL_EVERY} <= set(IPPOConfig().to_dict())


def test_eval_every_counts_only_where_training_stops_at_a_test_return():
    plain = fp.config_fingerprint(_values(), VERSION)
    assert fp.config_fingerprint(_values("eval_every=2"), VERSION) == plain
    stopping = fp.config_fingerprint(_values("stop_at_test_return=4000"), VERSION)
    assert stopping != plain
    assert fp.config_fingerprint(_values("stop_at_test_return=4000", "eval_every=2"), VERSION) != stopping
    assert "eval_every" in fp.learning_config(_values("stop_at_test_return=4000"))
    assert "eval_every" not in fp.learning_config(_values())


def test_env_version_is_a_checksum_of_the_envs_golden_rollouts_values():
    golden = {"A-v0": {"reward": [[1.0, 2.5]], "variants": [[0, None]]}, "B-v0": {"reward": [[3.0]]}}
    version = fp.env_version("A-v0", golden)
    assert version.startswith("A-v0 golden ") and len(version.split()[-1]) == fp.DIGITS
    reordered = json.loads(json.dumps({"A-v0": {"variants": [[0, None]], "reward": [[1.0, 2.5]]}}))
    assert fp.env_version("A-v0", reordered) == version  # the values, not the file's text
    assert fp.env_version("A-v0", {"A-v0": {"reward": [[1.0, 2.6]], "variants": [[0, None]]}}) != version
    assert fp.env_version("C-v0", golden) == "C-v0" and fp.env_version("A-v0", None) == "A-v0"
    golden_now = fp.read_golden()
    assert golden_now is not None and fp.env_version("WindFarmControl-v0", golden_now).startswith(
        "WindFarmControl-v0 golden "
    )


def test_a_record_is_current_changed_or_not_recorded():
    config = load_config(WFC_CONFIG)
    defaults = fp.defaults_of(config)
    now = fp.config_block(config.to_dict(), VERSION, "configs/x.yaml", "now")
    same = {"config": fp.config_block(config.to_dict(), VERSION, "configs/x.yaml", "then")}
    assert fp.check_record(same, now, defaults).state == "current"
    older = {"config": fp.config_block(_values("lr=0.0005"), VERSION, "configs/x.yaml", "then")}
    check = fp.check_record(older, now, defaults)
    assert (check.state, check.changes, check.source) == ("changed", ("lr 0.0005 -> 0.001",), "then")
    other_env = {"config": fp.config_block(config.to_dict(), "WindFarmControl-v0", "configs/x.yaml", "")}
    assert fp.check_record(other_env, now, defaults).changes == (f"env WindFarmControl-v0 -> {VERSION}",)
    # a key added to the trainer since: unchanged at its default, a change otherwise
    before_key = dict(
        same["config"], learning={k: v for k, v in now["learning"].items() if k != "obs_normalization"}
    )
    before_key["fingerprint"] = "older"
    assert fp.check_record({"config": before_key}, now, defaults).state == "current"
    moved = fp.config_block(_values("obs_normalization=true"), VERSION, "configs/x.yaml", "now")
    check = fp.check_record({"config": before_key}, moved, defaults)
    assert check.state == "changed" and check.changes == ("obs_normalization (absent) -> true",)
    # no config in the record, or one marked not recorded
    assert fp.check_record({}, now, defaults).state == "not recorded"
    check = fp.check_record({"config": fp.not_recorded("why")}, now, defaults)
    assert (check.state, check.source) == ("not recorded", "config not recorded: why")


@pytest.fixture()
def hivex_cell(tmp_path):
    """(cell, fake run folders with that cell's config.yaml as its shipped config gives it, a copy of
    configs/, records made from the run folders)."""
    runs = fake_hivex_folder(tmp_path / "runs")
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    cell = Cell("WindFarmControl-v0", 0, 1)
    config = load_config(configs / cell.config, train_settings(cell, []))
    (cell.path(runs) / "config.yaml").write_text(config.to_yaml())
    records = tmp_path / "results" / "hivex"
    hivex_records.record_folders(runs, records, hivex_configs.recorded_config)
    return cell, runs, configs, records


def _ippo_row(page: str, level: str) -> str:
    section = page.split("## Wind Farm Control")[1]
    return next(
        line for line in section.splitlines() if line.startswith(f"| 0 Generate Energy (main) | {level}")
    )


def test_a_record_keeps_the_config_its_run_trained_with(hivex_cell):
    cell, runs, configs, records = hivex_cell
    record = hivex_records.load_records(records)[cell]["config"]
    assert record["fingerprint_source"] == "the run folder's config.yaml at record time"
    assert record["shipped_config"] == "configs/ippo_wind_farm_control.yaml"
    assert record["learning"]["level"] == 1 and record["learning"]["test_worlds"] == "6000:6032"
    assert "out_dir" not in record["learning"] and "gif_frames" not in record["learning"]
    config = load_config(configs / cell.config, train_settings(cell, []))
    assert record["fingerprint"] == fp.config_fingerprint(config.to_dict(), record["env_version"])
    other = hivex_records.load_records(records)[Cell("WindFarmControl-v0", 0, 0)]["config"]
    assert other == {
        "fingerprint": None,
        "fingerprint_source": "config not recorded: the run folder has no config.yaml",
    }


def test_the_page_marks_a_cell_whose_shipped_config_changed_since_it_was_recorded(hivex_cell, tmp_path):
    cell, runs, configs, records = hivex_cell
    checks = hivex_configs.config_checks(hivex_records.load_records(records), configs)
    assert checks[cell].state == "current"
    assert {c.state for k, c in checks.items() if k != cell} == {"not recorded"}  # no config.yaml there
    out = tmp_path / "page.md"
    results_page.write_page(records, out, "cmd", checks=checks)
    page = out.read_text()
    assert _ippo_row(page, "1 |") and _ippo_row(page, "0 ‡ |")  # current: no mark; not recorded: ‡
    assert "1 of 6 recorded cells are of the config they would train with now; 0 changed since" in page
    assert "‡ = the record does not say which config made it (5 of 6 cells)" in page
    assert "† =" not in page

    _changed_copy(configs, cell.config, "ppo", "lr", "7.0e-4")
    checks = hivex_configs.config_checks(hivex_records.load_records(records), configs)
    assert (checks[cell].state, checks[cell].changes) == ("changed", ("lr 0.001 -> 0.0007",))
    results_page.write_page(records, out, "cmd", checks=checks)
    page = out.read_text()
    assert _ippo_row(page, "1 † |")
    assert "- † IPPO WindFarmControl-v0 task 0 pattern 1: lr 0.001 -> 0.0007" in page
    legend = (
        "† = its shipped config (with the cell's settings) or its env changed since the cell was recorded"
    )
    assert f"{legend} (1 of 6 cells)" in page
    assert cell in results_page.measured_cells(page)  # the marks do not hide a measured cell
    assert len(results_page.measured_cells(page)) == 6
    rows = results_csv.cell_rows(hivex_records.load_records(records), checks)
    wfc = {r["level"]: r for r in rows if r["env_id"] == cell.env_id and r["task"] == 0}
    assert (wfc[1]["config"], wfc[1]["config_changes"]) == ("changed", "lr 0.001 -> 0.0007")
    assert (wfc[0]["config"], wfc[0]["config_changes"]) == ("not recorded", None)


def test_a_change_to_another_cells_config_does_not_mark_this_one(hivex_cell):
    cell, runs, configs, records = hivex_cell
    _changed_copy(configs, "ippo_wildfire_resource_management.yaml", "ppo", "lr", "7.0e-4")
    checks = hivex_configs.config_checks(hivex_records.load_records(records), configs)
    assert checks[cell].state == "current"


def test_record_names_the_gpu_config_a_run_trained_with_and_compares_with_it(hivex_cell):
    cell, runs, configs, records = hivex_cell
    gpu = load_config(configs / cell.gpu_config, train_settings(cell, [], gpu=True))
    (cell.path(runs) / "config.yaml").write_text(gpu.to_yaml())
    hivex_results.main(["record", "--cells", "wfc:0:1", "--out-dir", str(runs), "--records", str(records)])
    block = hivex_records.load_records(records)[cell]["config"]
    assert block["shipped_config"] == "configs/ippo_wind_farm_control_gpu.yaml"
    assert hivex_configs.config_checks(hivex_records.load_records(records), configs)[cell].state == "current"
    _changed_copy(configs, cell.gpu_config, "ppo", "num_minibatches", "16")
    check = hivex_configs.config_checks(hivex_records.load_records(records), configs)[cell]
    assert (check.state, check.changes) == ("changed", ("num_minibatches 32 -> 16",))
    (configs / cell.gpu_config).unlink()
    check = hivex_configs.config_checks(hivex_records.load_records(records), configs)[cell]
    assert (check.state, check.changes) == (
        "changed",
        ("configs/ippo_wind_farm_control_gpu.yaml is no longer shipped",),
    )


def test_the_suite_table_marks_a_cell_whose_shipped_config_changed(tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    run_dir = tmp_path / "suite" / "ippo_wfc"
    run_dir.mkdir(parents=True)
    held = fake_results(
        {"greedy": [[10.0, 12.0]] * 5, "stochastic": [[9.0, 11.0]] * 5}, scripted=[11.0, 11.0]
    )
    (run_dir / "eval.json").write_text(json.dumps(held))
    config = load_config(configs / "ippo_wind_farm_control.yaml", suite_results.settings())
    (run_dir / "config.yaml").write_text(config.to_yaml())
    records = tmp_path / "records"
    suite_table.record_folders(tmp_path / "suite", records, [("ippo", "wfc")], suite_results.recorded_config)
    loaded = suite_table.load_records(records)
    assert loaded["ippo", "wfc"]["config"]["learning"]["num_seeds"] == suite_table.SUITE_SEEDS
    text = suite_table.table(loaded, suite_results.config_checks(loaded, configs))
    assert text.splitlines()[0].endswith("| config |") and " | current |" in text and "†" not in text

    _changed_copy(configs, "ippo_wind_farm_control.yaml", "ppo", "ent_coef", "0.01")
    text = suite_table.table(loaded, suite_results.config_checks(loaded, configs))
    greedy = next(line for line in text.splitlines() if "| IPPO | greedy |" in line)
    assert greedy.endswith("| changed † |")
    assert "- ippo:wfc †: ent_coef 0.005 -> 0.01" in text
    assert suite_table.measured_cells(text) == ["IPPO WindFarmControl-v0"]
    # without checks (the table before records kept configs) no column
    assert "config" not in suite_table.table(loaded).splitlines()[0]


# ------------------------------------------------------------------------------------------ backfill
def _candidate(commit: str, *overrides: str, version: str = VERSION, error: str | None = None):
    config = load_config(WFC_CONFIG, ["test_worlds=6000:6032", *overrides])
    return resolve.Candidate(commit, config.to_dict(), config.env_steps, config.num_updates, version, error)


def _old_record(**held) -> dict:
    config = load_config(WFC_CONFIG, ["test_worlds=6000:6032"])
    header = {
        "algo": "ippo",
        "env_id": "WindFarmControl-v0",
        "task": 0,
        "level": 0,
        "num_seeds": 3,
        "eval_seed": 12345,
        "env_steps_per_seed": config.env_steps,
        "worlds": list(range(6000, 6032)),
    }
    summary = {"num_seeds": 3, "num_envs": 8, "updates_done": config.num_updates, "train_s": 100.0}
    return {"held_out": {**header, **held}, "summary": summary, "measured_on": {"held_out": "2026-12-02"}}


def test_a_candidate_config_that_contradicts_the_record_is_dropped():
    assert backfill.contradictions(_old_record(), _candidate("a")) == []
    assert backfill.contradictions(_old_record(num_seeds=5), _candidate("a")) == ["num_seeds 5 != 3"]
    found = backfill.contradictions(_old_record(), _candidate("a", "total_env_steps=300000"))
    assert found == ["env_steps_per_seed 153600 != 302080", "updates_done 150 of 295"]
    assert backfill.contradictions(_old_record(), _candidate("a", "test_worlds=6000:6008")) == [
        "worlds '6000:6032' != '6000:6008'"
    ]


def test_backfill_takes_the_one_config_the_window_allows_or_says_why_not():
    record, defaults = _old_record(), fp.defaults_of(IPPOConfig())

    def choose(*candidates):
        return backfill.choose(record, list(candidates), defaults)

    chosen, why = choose(_candidate("a"), _candidate("b", "num_seeds=5"), _candidate("c"))
    assert chosen is not None and chosen.commit == "c" and why == ""
    block = backfill.backfilled(
        record, [_candidate("a")], "f" * 40, "configs/ippo_wind_farm_control.yaml", defaults
    )
    assert block["fingerprint"] == fp.config_fingerprint(_candidate("a").values, VERSION)
    assert block["fingerprint_source"].startswith("backfilled from commit a: ")
    # a learning key the record does not show changed in the window: not knowable
    chosen, why = choose(_candidate("a"), _candidate("b", "lr=0.0005"))
    assert chosen is None and why == (
        "the shipped config changed in its run's window, in a way the record does not show (commit a -> b: "
        "lr 0.001 -> 0.0005)"
    )
    chosen, why = choose(_candidate("a"), _candidate("b", version="other"))
    assert chosen is None and why.endswith(f"(commit a -> b: env {VERSION} -> other)")
    # a key added in the window at its default is the same config; away from it, another
    older = _candidate("a")
    older = resolve.Candidate(
        "a", {k: v for k, v in older.values.items() if k != "obs_normalization"}, *dataclass_rest(older)
    )
    chosen, why = choose(older, _candidate("b"))
    assert chosen is not None and chosen.commit == "b"
    chosen, why = choose(older, _candidate("b", "obs_normalization=true"))
    assert chosen is None and why.endswith("(commit a -> b: obs_normalization (absent) -> true)")
    chosen, why = choose(_candidate("a", "num_seeds=5"))
    assert (
        chosen is None
        and why == "no committed config in its run's window matches the record (num_seeds 3 != 5)"
    )
    chosen, why = choose(_candidate("a"), _candidate("bad", error="ImportError: x"))
    assert chosen is None and why == "commit bad in its run's window does not resolve it (ImportError: x)"
    block = backfill.backfilled(
        record, [_candidate("a", "num_seeds=5")], "f" * 40, "configs/x.yaml", defaults
    )
    assert block["fingerprint"] is None and block["fingerprint_source"].startswith("config not recorded: no ")


def dataclass_rest(candidate):
    """A candidate's fields after `commit` and `values`."""
    return candidate.env_steps, candidate.num_updates, candidate.version, candidate.error


def test_a_commit_that_could_not_have_trained_the_run_is_no_candidate():
    record, defaults = _old_record(), fp.defaults_of(IPPOConfig())
    split = _candidate("mid", error="ModuleNotFoundError: No module named 'baselines.config_checks'")
    missing = _candidate("early", error="ConfigError: config file configs/x.yaml does not exist")
    chosen, why = backfill.choose(record, [missing, _candidate("a"), split, _candidate("b")], defaults)
    assert chosen is not None and chosen.commit == "b"
    chosen, why = backfill.choose(record, [missing, split], defaults)
    assert chosen is None and why.endswith("(no commit could have trained it)")


def test_the_run_window_and_its_commits():
    record = _old_record()
    start, end = backfill.run_window(record, 1_800_000_000)
    midnight = 1796169600  # 2026-12-02T00:00:00Z
    assert (start, end) == (midnight - 100 - backfill.MARGIN_S, 1_800_000_000)
    history = backfill.History((("a", 10), ("b", 20), ("c", 30), ("d", 40), ("e", 50)), frozenset({"b", "d"}))
    assert history.window(25, 45) == ["b", "d"]  # the state at 25 (b's), then d; c touched no config
    assert history.window(30, 60) == ["c", "d"]
    assert history.window(5, 15) == []  # nothing before 5; a touched no config


def test_record_commit_is_the_first_commit_of_the_records_current_numbers(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    path = tmp_path / "r.json"
    shas = []
    for held, source in ((1.0, "/abs/runs/x"), (2.0, "/abs/runs/x"), (2.0, "runs/x")):
        path.write_text(
            json.dumps({"held_out": {"mean": held}, "source": source, "summary": {"run_dir": source}})
        )
        git("add", "r.json")
        git("commit", "-q", "-m", f"{held} {source}")
        shas.append(git("rev-parse", "HEAD").strip())
    found = backfill.record_commit(tmp_path, path)
    assert found is not None and found[0] == shas[1]  # the path rewrite kept the numbers of the second


@pytest.mark.slow
def test_resolve_at_a_commit_uses_that_commits_own_code():
    request = {
        "key": "k",
        "kind": "hivex",
        "config": "ippo_wind_farm_control.yaml",
        "env_id": "WindFarmControl-v0",
    }
    request.update(task=1, level=4, algo="ippo")
    got = resolve.resolve_at(REPO, {"HEAD": [request]}, lambda env_id: False)["HEAD"]["k"]
    assert got.error is None and got.values is not None
    assert (got.values["task"], got.values["level"], got.values["test_worlds"]) == (1, 4, "6000:6032")
    assert got.env_steps == got.num_updates * got.values["num_envs"] * got.values["num_steps"]
    golden = json.loads(
        subprocess.run(
            ["git", "show", "HEAD:tests/envs/golden_rollouts.json"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert got.version == fp.env_version("WindFarmControl-v0", golden)
