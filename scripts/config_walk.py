"""Follow one config through `run_training`: which module reads each config field, in order.

Usage and what it prints: `baselines.studies.config_walk` (its docstring); this file runs it from a checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.config_walk import main  # noqa: E402

if __name__ == "__main__":
    main()
