"""MAPPO cells of the HIVEX results study: `mappo:` cell specs, their folders and records, and the page's
"MAPPO beside IPPO" table on each env's main task. Fake run folders (tests/eval/fake_results.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_results import FAKE_HIVEX_CELLS, fake_hivex_folder

from baselines.studies import hivex_results
from hivex_jax.eval import hivex_records, results_format, results_page
from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell, cell_of_dirname, parse_cells

REPO = Path(__file__).resolve().parents[2]
WFC, WRM = "WindFarmControl-v0", "WildfireResourceManagement-v0"


def test_mappo_cells_parse_name_their_folder_and_config():
    cells = parse_cells("mappo:wfc:0:0-1,wrm:0:1,MAPPO:opc:0:none")
    assert cells == [
        Cell(WFC, 0, 0, "mappo"),
        Cell(WFC, 0, 1, "mappo"),
        Cell(WRM, 0, 1),
        Cell("OceanPlasticCollection-v0", 0, None, "mappo"),
    ]
    assert cells[1].dirname == "mappo_task0_level1" and cells[2].dirname == "task0_level1"
    assert cells[3].dirname == "mappo_task0"
    assert cells[1].label() == "WindFarmControl-v0 task 0 pattern 1 (MAPPO)"
    for cell in cells:
        assert cell_of_dirname(cell.env_id, cell.dirname) == cell
    assert cells[1].config == "mappo_wind_farm_control.yaml" and cells[2].config == HIVEX_ENVS[WRM].config
    for env_id in HIVEX_ENVS:  # every env has both shipped configs
        for algo in ("ippo", "mappo"):
            assert (REPO / "configs" / Cell(env_id, 0, None, algo).config).is_file()
    with pytest.raises(ValueError, match=r"is not \[ALGO:\]ENV:TASK:LEVEL \(ALGO: one of ippo, mappo\)"):
        parse_cells("ppo:wfc:0:0")


@pytest.fixture()
def with_mappo(tmp_path):
    """The fake results folder plus a MAPPO copy of WFC task 0 pattern 1 (its eval.json's greedy mean
    shifted by +7), and the records of all of them."""
    runs = fake_hivex_folder(tmp_path / "runs")
    source, copy = runs / WFC / "task0_level1", runs / WFC / "mappo_task0_level1"
    shutil.copytree(source, copy)
    held = json.loads((copy / "eval.json").read_text())
    held["algo"] = "mappo"
    held["policies"]["greedy"]["summary"]["mean"] += 7.0
    (copy / "eval.json").write_text(json.dumps(held))
    records = tmp_path / "records"
    hivex_records.record_folders(runs, records)
    return runs, records, held


def test_the_page_shows_mappo_beside_ippo_and_counts_only_ippo_against_hivex(with_mappo, tmp_path):
    runs, records, held = with_mappo
    assert (records / WFC / "mappo_task0_level1.json").is_file()
    out = tmp_path / "page.md"
    assert hivex_results.main(["page", "--records", str(records), "--out", str(out)]) == 0
    page = out.read_text()
    wfc = page.split("## Wind Farm Control")[1].split("\n## ")[0]
    ippo = json.loads((runs / WFC / "task0_level1" / "eval.json").read_text())["policies"]
    greedy = held["policies"]["greedy"]["summary"]
    row = next(line for line in wfc.splitlines() if line.startswith("| 1 | "))
    columns = [c.strip() for c in row.strip("|").split("|")]
    unknown = " ‡"  # the fake records were made without the config their runs trained with: marked so
    assert columns[1] == results_format.fmt_mean_ci(ippo["greedy"]["summary"]) + unknown
    assert columns[2] == results_format.fmt_mean_ci(greedy) + unknown and columns[1] != columns[2]
    table = wfc.split("| main task, pattern |")[1].splitlines()
    assert "| 2 | — | — | — | — | — |" in table  # neither run
    pattern0 = [c.strip() for c in next(r for r in table if r.startswith("| 0 | ")).strip("|").split("|")]
    assert pattern0[1] != "—" and pattern0[2] == pattern0[4] == pattern0[5] == "—"  # IPPO only
    # the MAPPO cell is not a HIVEX cell of its own: the count and the compute table are IPPO's
    assert f"{len([k for k, v in FAKE_HIVEX_CELLS.items() if all(v)])} of 212 published cells" in page
    assert "The 1 MAPPO cells took" in page
    assert Cell(WFC, 0, 1, "mappo") in results_page.measured_cells(page)
    # dropping the MAPPO record would drop a measured cell: refused
    (records / WFC / "mappo_task0_level1.json").unlink()
    with pytest.raises(SystemExit, match="mappo"):
        hivex_results.main(["page", "--records", str(records), "--out", str(out)])
