"""The whole suite's learning results: every env x {IPPO, MAPPO}, trained with its shipped config,
evaluated on held-out worlds 6000-6031, as one table in docs/results.md.

    python scripts/suite_results.py run    [--cells SPEC] [--out-dir runs/suite5]
                                           [--records docs/data/results/suite] [key=value ...]
    python scripts/suite_results.py record [--cells SPEC] [--out-dir runs/suite5]
                                           [--records docs/data/results/suite]
    python scripts/suite_results.py table  [--records docs/data/results/suite]
                                           [--write docs/results.md [--allow-fewer]]

`run` trains each cell with `hivex train --config configs/<algo>_<env>.yaml test_worlds=6000:6032
num_seeds=5 gif_frames=0` (5 seeds: the targets are on the mean of 5) into `OUT_DIR/<algo>_<env>/`
(resumable: a cell with `eval.json` is kept, one with a checkpoint is resumed) and, as soon as the cell
is finished (or kept), writes or refreshes its committed record `RECORDS/<algo>_<env>.json`: what the
table shows of the cell and where, when and with what it was measured
(`hivex_jax.eval.suite_table.cell_record`) with the config the run trained with; run folders are
machine-local (`runs/` is git-ignored), so
commit the records with the table. SPEC: comma-separated `ALGO:ENV` with ENV a short name (wfc, wrm,
dbr, opc, aws) and ALGO ippo or mappo; default every cell.

`record` writes the records of the finished cells under `--out-dir` (of SPEC, default every cell), for runs
made before `run` recorded them.

`table` renders the Markdown table from the records alone (no run folder is read), with a config column
saying whether each record is of the config its cell would train with now (current, changed † with what
changed below the table, not recorded ‡), and prints it, or writes it between the `<!-- suite-results -->`
markers of `--write`, refusing in one line (naming them) when a cell
the table there shows would vanish, unless `--allow-fewer`; what its columns are:
`hivex_jax.eval.suite_table`. The commands are `baselines.studies.suite_results`, the resumable training loop
`baselines.studies.study`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from baselines.studies.suite_results import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
