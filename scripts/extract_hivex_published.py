"""Extract every published HIVEX result table (reference §3) into `hivex_jax/eval/data/hivex_published.json`.

    python scripts/extract_hivex_published.py REFERENCE.md

REFERENCE.md is a Markdown transcription of HIVEX's published result tables (arXiv 2501.04180 and the
`hivex-research/hivex-results` files; its §3); it is not part of the repository, so those numbers are
copied once into package data. Output:
`{"source": ..., "envs": {env_id: {"task_names": {task: name}, "levels": [...], "tables": [table, ...]}}}`;
a table is `{title, kind, statistic, levels, rows: {task: {level: value}}}`, kind one of test_mean,
train_mean, train_final, best_run, stat_test_mean (cumulative-reward tables have the statistic
"Environment/Cumulative Reward"), or per_run (the one cell HIVEX published per-run values for:
rows `{run id: {column: value}}`). Levels are strings ("0".."8" patterns, "1".."10" terrain levels,
"none" for Ocean Plastic Collection, which has no level).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hivex_jax.eval.hivex_extract import extract

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "hivex_jax" / "eval" / "data" / "hivex_published.json"


def main(argv: list[str] | None = None) -> int:
    """Parse the reference and write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("reference", help="path of the reference markdown (hivex.md)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"output JSON (default: {DEFAULT_OUT})")
    args = p.parse_args(argv)
    data = extract(Path(args.reference).read_text())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    tables = sum(len(e["tables"]) for e in data["envs"].values())
    print(f"wrote {out}: {len(data['envs'])} envs, {tables} tables")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
