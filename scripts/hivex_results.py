"""Every published HIVEX result cell beside ours: train, evaluate and record the cells; write the page
docs/hivex_results.md from the records.

    python scripts/hivex_results.py run [--cells SPEC] [--out-dir runs/hivex_results]
                                        [--records docs/data/results/hivex]
                                        [--agent-steps-scale F] [--retrain-stale] [--gpu]
                                        [--fuse [--max-members N]] [key=value ...]
    python scripts/hivex_results.py record [--cells SPEC] [--out-dir runs/hivex_results]
                                           [--records docs/data/results/hivex]
    python scripts/hivex_results.py page [--records docs/data/results/hivex] [--out docs/hivex_results.md]
                                         [--allow-fewer]
    python scripts/hivex_results.py record-variant RUN_DIR --cell ENV:TASK:LEVEL --name NAME
                                                   [--evidence FILE] [--records docs/data/results/hivex]

`run` trains IPPO with the env's shipped config (`configs/ippo_<env>.yaml`, plus `task=`, `level=`,
`test_worlds=6000:6032`, `gif_frames=0`, the env's settings for subtask cells (Drone-Based Reforestation's
tasks 1-6: HIVEX's per-run budget, `total_env_steps=409600`; `hivex_cells.HivexEnv.subtask_settings`) and
any `key=value` overrides) into
`OUT_DIR/<env id>/task<t>_level<l>/`
(`hivex train`, which writes the held-out evaluation `eval.json`), then scores it under HIVEX's protocol
(`hivex evaluate --protocol hivex`, `eval_hivex.json`). It is resumable: a cell with `eval.json` is not
trained again (one with a checkpoint but no `eval.json` is resumed), one with `eval_hivex.json` is not
evaluated again. A cell folder trained with another config than the cell's shipped one now (a budget
changed since, say) is named in one line with what differs: kept if finished, unless `--retrain-stale`;
moved aside to `OUT_DIR/<env id>/superseded/` and trained afresh if not (nothing is deleted).
`--fuse` trains the cells not trained yet as fused populations first (one program per env and algo, as `hivex
sweep` fuses; `--max-members N` splits them), each member into its own cell folder as `hivex train` writes
it, then scores and records them cell by cell; a stopped population resumes as one. The page's compute
section counts a fused cell as its share of the program's time. On the 2-core CPU fusing pays for
Wind Farm Control and Wildfire Resource Management; Drone-Based Reforestation's and Aerial Wildfire
Suppression's cells cost their training, which a larger batch does not shorten there
(docs/benchmarks.md).
`--gpu` trains with the env's GPU config instead (`configs/<algo>_<env>_gpu.yaml`,
`stop_at_test_return=null`: a reference cell trains its whole budget), for a larger budget than the CPU's
(every published cell trains with its CPU config on the 2-core CPU: an Aerial Wildfire Suppression cell ~9
min of one core since its encoder change). `--agent-steps-scale F`
runs the HIVEX protocol on F times HIVEX's test-run agent steps
(at least one summary window); the scale is recorded in `eval_hivex.json` and shown on the page. Run folders
are machine-local (`runs/` is git-ignored): as soon as a cell is trained and evaluated (or kept), `run`
writes or refreshes its committed record `RECORDS/<env id>/task<t>_level<l>.json` (`task<t>.json` for OPC),
what the page shows of the cell and where, when and with what it was measured
(`hivex_jax.eval.hivex_records.hivex_record`), and the config the run trained with (the learning keys of
its config.yaml, its env's version and their fingerprint, `baselines.studies.config_fingerprint`); commit
the records with the page.

`record` writes the records of run folders that have results (every cell folder under `--out-dir`, or the
cells of `--cells`), for runs made before `run` recorded them, and says which changed.

`page` renders the page from the published tables (`hivex_jax/eval/data/hivex_published.json`) and the
records alone (no run folder is read), so any checkout regenerates it. It compares each record's config
with the config the cell would train with now (its shipped config with the cell's settings) and marks a
cell whose config or env changed since it was recorded (†, what changed listed) or whose record does not
say (‡), in its tables, a section of its own and the cells CSV's `config` columns. It refuses, in one line
naming them, to write a page on which a cell the page on disk shows our results for would vanish (a missing
record), unless `--allow-fewer`. Beside the page it writes each env's level-trend figure,
`images/hivex_trend_<wfc|wrm|dbr|aws>.png` (ours mean ± 95 % CI over seeds per level, HIVEX's published
series on a second axis; `hivex_jax.eval.results_trends`): commit them with the page.

`record-variant` records a run of one cell with another budget or trainer setting (e.g. a subtask at 4x
HIVEX's budget, trained by `hivex train` with overrides) as
`RECORDS/<env id>/larger_budget/task<t>_level<l>_<NAME>.json`: the cell record of its folder, the learning
keys whose values differ from the cell's config now and, with `--evidence`, what
`scripts/subtask_evidence.py --json` measured for the cell's task. `page` shows each env's variants in
a table of their own beside the comparable cell (`hivex_jax.eval.results_variants`), with the evidence and
one paragraph per subtask (`HivexEnv.subtask_findings`); a variant never replaces or counts as a cell.

SPEC: comma-separated `[mappo:]ENV:TASK:LEVEL` with ENV an env id or wfc/wrm/dbr/opc/aws, TASK and LEVEL an
integer or a range `a-b`, LEVEL `none` for Ocean Plastic Collection; default: the main task at every pattern
of Wind Farm Control and every level of Wildfire Resource Management, and at level 1 (OPC: no level) for the
other three. A `mappo:` cell trains `configs/mappo_<env>.yaml` into `OUT_DIR/<env id>/mappo_task<t>_level<l>/`
(record `mappo_task<t>_level<l>.json`); the page shows MAPPO cells in each env's "MAPPO beside IPPO" table
on the main task, and compares only IPPO (parameter-shared PPO, what HIVEX trained) with HIVEX's cells.

The commands are `baselines.studies.hivex_results`; the cells and each env's HIVEX metadata are
`hivex_jax.eval.hivex_cells`, the page `hivex_jax.eval.results_page`, the records
`hivex_jax.eval.hivex_records` (the record files: `hivex_jax.eval.result_records`), the resumable
train-evaluate loop `baselines.studies.study`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts: `run --fuse` trains here)

from baselines.studies.hivex_results import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
