"""Memorisation probe: train on pools of 1, 10, 100, 1000 worlds (seeds vmapped in one run per pool), then
score the greedy policy on held-out worlds and on its own training worlds; the gap between the two is
what the policy memorised rather than learned. What it measures and writes: `baselines.studies.memorisation`.

Usage:
  PJRT_NPROC=1 python scripts/memorisation_probe.py --env WildfireResourceManagement-v0 --out runs/probe_wrm
  PJRT_NPROC=1 python scripts/memorisation_probe.py --env wfc --out DIR --pools 1,10 total_env_steps=1e5

Writes OUT/probe.json (rewritten after each pool: resumable), OUT/probe.md and OUT/probe.png; the runs
are OUT/pool_<N>/. Run again with the same arguments to skip finished pools (a run stopped mid-training
resumes from its last checkpoint); more --pools add cells.
"""

from __future__ import annotations

import sys

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.memorisation import parse_args, run_probe
from baselines.studies.memorisation_report import markdown


def main(argv: list[str] | None = None) -> int:
    """Run the probe and print its table."""
    record = run_probe(parse_args(argv))
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
