"""The pretrained policies shipped in baselines/pretrained_policies/data/: trained, chosen and written.

    python scripts/pretrained.py build [--cells SPEC] [--out-dir runs/pretrained_build]
                                       [--records docs/data/results/suite] [--page docs/pretrained.md]
                                       [--one-seed-tries K] [key=value ...]
    python scripts/pretrained.py table [--page docs/pretrained.md]
    python scripts/pretrained.py check

`build` trains each cell as the suite did (`hivex train --config configs/<algo>_<env>.yaml
test_worlds=6000:6032 num_seeds=5 gif_frames=0 key=value ...`) into `OUT_DIR/<algo>_<env>/`, then writes
the policy from the seed whose greedy fraction of scripted is closest to the median of the cell's record
`RECORDS/<algo>_<env>.json`: its actor's weights, its card (config, commit, env steps, held-out result on
worlds 6000-6031, the suite cell, the check its test reproduces) and the manifest's sha256 of each file;
then rewrites the table of `--page` and prints the shipped files' total size. With `--one-seed-tries K`
it trains one seed at a time instead (`num_seeds=1 seed=k` into `OUT_DIR/<algo>_<env>_seed<k>/`, k < K)
until one's greedy fraction of scripted lies between the cell's seeds' quartiles, else ships the closest to
the median of the K: a fifth of the 5-seed run's cost per try, for the long cells. Resumable: a policy already
built is skipped (training included), a finished run is kept, a stopped one resumed. Run it from the
repository root, one cell at a time for the long ones (e.g. in the background with nohup). SPEC:
comma-separated `ALGO:ENV` with ENV a short name (wfc, wrm, dbr, opc, aws) and ALGO ippo or mappo; default
every cell. Training overrides (`visual_encoder=hivex_simple`) go to every cell of the call, and to the
cards' configs.

`table` rewrites the page's table from the shipped cards alone. `check` recomputes every shipped card's check
(the actor's outputs on worlds 6000-6001's first observations, greedy 100-step returns there) with this
checkout's code, weights unchanged: after a change that rounds an env or a network otherwise. The commands are
`baselines.studies.pretrained`; the files' format and loader `baselines.pretrained_policies`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts: the build evaluates here)

from baselines.cli.common import use_cpu_compile_flags  # noqa: E402

use_cpu_compile_flags()  # the cards' figures compiled as `hivex evaluate --pretrained` compiles them

from baselines.studies.pretrained import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
