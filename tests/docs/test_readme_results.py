"""README's one sentence on the reference results agrees with the committed results table
(docs/data/results/hivex_cells.csv, written with docs/hivex_results.md from the committed records)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_counts_the_cells_the_results_table_has():
    with (REPO / "docs" / "data" / "results" / "hivex_cells.csv").open() as f:
        rows = list(csv.DictReader(f))
    ippo = {(r["env_id"], r["task"], r["level"]) for r in rows if r["algo"] == "ippo"}
    mappo = {(r["env_id"], r["task"], r["level"]) for r in rows if r["algo"] == "mappo"}
    readme = " ".join((REPO / "README.md").read_text().split())
    counted = re.search(r"(\d+) of HIVEX's (\d+) cells trained on the CPU with at least (\d+) seeds", readme)
    assert counted, "README's results sentence is gone or reworded: keep it in step with this test"
    trained, published, seeds = map(int, counted.groups())
    assert (trained, published) == (len(ippo), 212)
    assert min(int(r["num_seeds"]) for r in rows) == seeds
    # "MAPPO beside IPPO at every main-task level": every main-task IPPO cell has its MAPPO cell
    main_task = {cell for cell in ippo if cell[1] == "0"}
    assert main_task and main_task <= mappo
    if trained < published:  # the sentence names how many are left and how to train them
        assert f"the other {published - trained}," in readme
    else:
        assert "the other " not in readme.split(f"{published} cells trained", 1)[1].split(")", 1)[0]
