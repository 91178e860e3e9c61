"""What a trained Ocean Plastic Collection policy lacks, measured by lending it parts of the scripted
controller.

    PJRT_NPROC=1 python scripts/opc_safety_diagnosis.py RUN_DIR [--worlds 16]

What each variant lends and what the table measures: `baselines.studies.opc_safety`.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.opc_safety import diagnose, table


def main() -> None:
    """Print the diagnosis table of one run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--worlds", type=int, default=16, help="held-out worlds 6000.. (default 16)")
    args = parser.parse_args()
    if args.worlds < 1:
        parser.error("--worlds must be >= 1")
    print(table(diagnose(args.run_dir, f"6000:{6000 + args.worlds}")))


if __name__ == "__main__":
    main()
