"""Backfill the `config` of the committed result records made before records kept one
(`baselines.studies.config_backfill`: from git where it can be done honestly, else "config not recorded").

    python scripts/backfill_record_configs.py [--records docs/data/results] [--cache FOLDER]

Run from the repository root, in a git checkout with its history. Each record without a `config` gets
one: the config of the commits in its run's window that fit what the record shows (`fingerprint_source:
backfilled from commit X ...`), or `config not recorded` with why; records that have one are left alone.
Its numbers and dates do not change. Then regenerate the pages (`scripts/hivex_results.py page`,
`scripts/suite_results.py table --write docs/results.md`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

import _jax_setup  # noqa: E402, F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.config_backfill import backfill_records  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Backfill the records under --records and say how many were backfilled and why others were not."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--records", default="docs/data/results", help="the records' root folder")
    parser.add_argument(
        "--cache", default=None, help="a folder keeping what each commit resolved, for a rerun"
    )
    args = parser.parse_args(argv)
    cache = Path(args.cache) if args.cache else None
    blocks = backfill_records(
        ROOT, (ROOT / args.records).resolve(), lambda line: print(line, flush=True), cache
    )
    for key, block in blocks.items():
        print(f"{key}: {block['fingerprint_source'][:160]}")
    done = sum(1 for b in blocks.values() if b.get("fingerprint"))
    why = Counter(b["fingerprint_source"].split(" (")[0] for b in blocks.values() if not b.get("fingerprint"))
    print(
        f"{done} of {len(blocks)} record(s) backfilled; not recorded: "
        + (", ".join(f"{n} {w}" for w, n in why.items()) or "none")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
