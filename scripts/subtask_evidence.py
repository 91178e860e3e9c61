"""HIVEX subtasks (DBR, AWS): reward events, return terms and discounted returns per policy.

Usage and what it prints: `baselines.studies.subtask_evidence` (its docstring); this file runs
it from a checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.subtask_evidence import main  # noqa: E402

if __name__ == "__main__":
    main()
