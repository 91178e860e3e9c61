"""Markdown summary of a `scripts/gpu_report.sh` output folder (for docs/benchmarks.md).

python scripts/gpu_report_summary.py OUT_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

from baselines.studies.gpu_report import summary

if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    print(summary(Path(sys.argv[1])))
