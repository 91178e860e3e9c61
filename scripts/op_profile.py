"""Where one compiled program's time goes, op by op (XLA's per-op timings from `jax.profiler`), grouped into
the actor's network, the critic's, and the rest: a saved run's held-out evaluation loop or a config's PPO
epochs of one update.

    PJRT_NPROC=1 python scripts/op_profile.py --run RUN [--worlds 6000:6032] [--steps 100] [--top 25]
    PJRT_NPROC=1 python scripts/op_profile.py --config CONFIG [key=value ...] [--top 25]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts)

from baselines.cli.common import use_cpu_compile_flags  # noqa: E402

use_cpu_compile_flags()  # compiled as the hivex commands compile

from baselines.studies.op_profile import main  # noqa: E402

if __name__ == "__main__":
    main()
