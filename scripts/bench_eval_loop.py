"""Time a saved run's held-out evaluation programs in one process, rounds alternating: the trained policy's
(greedy and stochastic of every seed) and the baselines' (scripted, random) with the seeds and the
baselines vmapped or in turn, and, with `--old-rollout`, the same programs built by another tree's
`hivex_jax/eval/rollout.py` (e.g. `git show REV:hivex_jax/eval/rollout.py > old_rollout.py`).

    PJRT_NPROC=1 python scripts/bench_eval_loop.py --run runs/NAME [--old-rollout FILE] [--rounds 2]

Prints each program's first call (compilation and one evaluation), its later calls, and whether its totals
equal bit for bit those of this tree's same program (the old tree's) or of the same kind in turn (vmapped
ones; else the largest difference of a return), with each row's mean return (over worlds and agents; rows:
greedy then stochastic of each seed, or scripted then random).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts)

from baselines.cli.common import use_cpu_compile_flags  # noqa: E402

use_cpu_compile_flags()  # compiled as `hivex evaluate` compiles

from baselines.studies.eval_loop_bench import main  # noqa: E402

if __name__ == "__main__":
    main()
