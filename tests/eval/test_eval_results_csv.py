"""The reference results as CSV (`hivex_jax.eval.results_csv`, written by `scripts/hivex_results.py page`):
one row per measured cell beside HIVEX's published values, one row per training seed. Fake run folders
(tests/eval/fake_results.py), no training."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from fake_results import FAKE_HIVEX_CELLS, fake_hivex_folder

from baselines.studies import hivex_configs, hivex_results
from hivex_jax.eval import hivex_records, results_csv, results_sections
from hivex_jax.eval.hivex_cells import Cell

WFC, WRM, DBR = "WindFarmControl-v0", "WildfireResourceManagement-v0", "DroneBasedReforestation-v0"


@pytest.fixture()
def records(tmp_path):
    """A records folder made from the fake run folders, plus a MAPPO copy of the WFC pattern-0 record."""
    folder = tmp_path / "results" / "hivex"
    hivex_records.record_folders(fake_hivex_folder(tmp_path / "runs"), folder)
    shutil.copy(folder / WFC / "task0_level0.json", folder / WFC / "mappo_task0_level0.json")
    return folder


def _read(path):
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_one_row_per_cell_beside_hivex_published_values(records):
    cells, _ = results_csv.write_csvs(hivex_records.load_records(records), records.parent)
    rows = _read(cells)
    assert list(rows[0]) == list(results_csv.CELL_COLUMNS)
    assert len(rows) == len(FAKE_HIVEX_CELLS) + 1
    by_cell = {(r["env_id"], r["algo"], r["task"], r["level"]): r for r in rows}
    wfc = by_cell[(WFC, "ippo", "0", "0")]
    # HIVEX's published WFC task 0 pattern 0 (reference §3): test mean 4605.9, best run 4611.6
    assert (float(wfc["hivex_test_mean"]), float(wfc["hivex_best_run"])) == (4605.9, 4611.6)
    assert wfc["task_name"] == "Generate Energy (main)" and wfc["heldout_worlds"] == "6000:6004"
    record = hivex_records.load_records(records)[Cell(WFC, 0, 0)]
    greedy = record["held_out"]["policies"]["greedy"]["summary"]
    # floats are written in full (repr), so they read back exactly
    assert float(wfc["heldout_greedy_mean"]) == greedy["mean"]
    assert float(wfc["heldout_greedy_seed_min"]) == greedy["seed_min"]
    assert float(wfc["ours_hivex_protocol_stochastic"]) == record["hivex"]["policies"]["stochastic"]["cell"]
    scripted, random = float(wfc["heldout_scripted"]), float(wfc["heldout_random"])
    normalised = (greedy["mean"] - random) / (scripted - random)  # score.normalised_score
    assert float(wfc["heldout_greedy_normalised"]) == pytest.approx(normalised, rel=1e-12)
    # MAPPO rows carry ours only: HIVEX published IPPO (parameter-shared PPO)
    mappo = by_cell[(WFC, "mappo", "0", "0")]
    assert mappo["hivex_test_mean"] == "" and mappo["heldout_greedy_mean"] == wfc["heldout_greedy_mean"]
    # partial cells leave the other protocol's fields empty
    assert by_cell[(WRM, "ippo", "0", "1")]["ours_hivex_protocol_stochastic"] == ""
    assert by_cell[(WFC, "ippo", "1", "4")]["heldout_greedy_mean"] == ""
    assert by_cell[("OceanPlasticCollection-v0", "ippo", "0", "")]["level"] == ""
    # env order of the published tables, IPPO before MAPPO within an env
    assert [r["env_id"] for r in rows][:4] == [WFC] * 4 and rows[3]["algo"] == "mappo"


def test_one_row_per_seed_whose_means_are_the_cell_values(records):
    loaded = hivex_records.load_records(records)
    cells, seeds = results_csv.write_csvs(loaded, records.parent)
    rows = _read(seeds)
    assert list(rows[0]) == list(results_csv.SEED_COLUMNS)
    dbr = [r for r in rows if r["env_id"] == DBR]
    assert [(r["protocol"], r["policy"], r["seed"]) for r in dbr] == [
        (protocol, policy, str(seed))
        for protocol, policy in (("held_out", "greedy"), ("held_out", "stochastic"), ("hivex", "stochastic"))
        for seed in range(3)
    ]
    cell = {r["env_id"]: r for r in _read(cells) if r["algo"] == "ippo" and r["task"] == "0"}[DBR]
    for protocol, policy, column in (
        ("held_out", "greedy", "heldout_greedy_mean"),
        ("held_out", "stochastic", "heldout_stochastic_mean"),
        ("hivex", "stochastic", "ours_hivex_protocol_stochastic"),
    ):
        values = [float(r["return"]) for r in dbr if (r["protocol"], r["policy"]) == (protocol, policy)]
        assert np.mean(values) == pytest.approx(float(cell[column]), rel=1e-9)


def test_page_writes_the_tables_beside_the_records_and_refuses_a_missing_folder(records, tmp_path, capsys):
    out = tmp_path / "page.md"
    assert hivex_results.main(["page", "--records", str(records), "--out", str(out)]) == 0
    assert (records.parent / results_csv.CELLS_FILE).is_file()
    assert f"`{records.parent}/{results_csv.SEEDS_FILE}`" in out.read_text()
    with pytest.raises(SystemExit, match=r"^hivex_results page: no records folder \S+nowhere$"):
        hivex_results.main(["page", "--records", str(tmp_path / "nowhere"), "--out", str(out)])


def test_the_committed_tables_are_those_of_the_committed_records(tmp_path):
    """docs/data/results/hivex_{cells,seeds}.csv as committed: what `page` writes from the records beside
    them, with each record's config against its cell's shipped config now (rerun `python
    scripts/hivex_results.py page` after recording cells or changing a shipped config)."""
    records_dir = Path(__file__).resolve().parents[2] / hivex_records.RECORDS_DIR
    records = hivex_records.load_records(records_dir)
    written = results_csv.write_csvs(records, tmp_path, hivex_configs.config_checks(records))
    for path in written:
        assert path.read_text() == (records_dir.parent / path.name).read_text(), path.name


def test_no_normalised_score_where_the_scripted_controller_does_not_beat_random():
    def held(**means):  # a record's held-out part: each policy's mean return
        return {"held_out": {"policies": {p: {"summary": {"mean": m}} for p, m in means.items()}}}

    # OPC task 3's baselines on world 6000 (scripted -264, random -107): no score, and the page says why
    upside_down = held(greedy=-0.67, stochastic=-50.0, scripted=-264.0, random=-107.0)
    assert results_csv.heldout_normalised(upside_down, "greedy") is None
    assert results_sections._normalised(upside_down) == "— (scripted ≤ random)"
    ordered = held(greedy=-0.67, stochastic=-50.0, scripted=816.7, random=-94.7)
    assert results_csv.heldout_normalised(ordered, "greedy") == pytest.approx(94.03 / 911.4)
    assert results_sections._normalised(ordered) == "0.10 / 0.05"  # two decimals, as the page shows
    assert results_sections._normalised(None) == "—"
