"""The whole suite's learning results (issue 16): every env x {IPPO, MAPPO}, trained with its shipped
config, evaluated on held-out worlds 6000-6031, as one table in docs/training.md.

    python scripts/suite_results.py run   [--cells SPEC] [--out-dir runs/suite] [key=value ...]
    python scripts/suite_results.py table [--out-dir runs/suite] [--write docs/training.md]

`run` trains each cell with `hivex train --config configs/<algo>_<env>.yaml test_worlds=6000:6032
gif_frames=0` into `OUT_DIR/<algo>_<env>/` (resumable: a cell with `eval.json` is kept, one with a
checkpoint is resumed). SPEC: comma-separated `ALGO:ENV` with ENV a short name (wfc, wrm, dbr, opc, aws)
and ALGO ippo or mappo; default every cell.

`table` reads every finished cell and prints the Markdown table (or writes it between the
`<!-- suite-results -->` markers of `--write`); what its columns are: `hivex_jax.eval.suite_table`.
The resumable training loop is `baselines.study`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from baselines.study import CellDone, CellError, StudyCell, hivex, run_cells, train_args  # noqa: E402
from hivex_jax.eval.suite_table import (  # noqa: E402
    TEST_WORLDS,
    cell_config,
    cell_name,
    cells,
    table,
    write_between_markers,
)


def study_cell(algo: str, env: str, out_dir: Path, overrides: list[str]) -> StudyCell:
    """One suite cell: `hivex train` with its shipped config (logged to OUT_DIR/<algo>_<env>.log)."""
    run_dir = out_dir / cell_name(algo, env)
    config = ROOT / "configs" / cell_config(algo, env)
    settings = [f"test_worlds={TEST_WORLDS}", "gif_frames=0", *overrides]
    log = out_dir / f"{run_dir.name}.log"
    return StudyCell(
        key=f"{algo}:{env}",
        run_dir=run_dir,
        train=lambda resume: hivex(train_args(run_dir, config, settings, resume, overrides), log),
    )


def main(argv: list[str] | None = None) -> None:
    """Dispatch `run` / `table`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "table"))
    parser.add_argument("--cells", default=None, help="ALGO:ENV,... (default: every cell)")
    parser.add_argument("--out-dir", default="runs/suite")
    parser.add_argument("--write", default=None, help="table: write between the markers of this page")
    parser.add_argument("overrides", nargs="*", help="run: key=value overrides for every cell")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    try:
        if args.command == "run":
            todo = [study_cell(algo, env, out_dir, args.overrides) for algo, env in cells(args.cells)]

            def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
                print(f"[{i}/{len(todo)}] {cell.key}: {done.train}", flush=True)

            run_cells(todo, report=report)
            return
        text = table(out_dir)
        if args.write:
            write_between_markers(Path(args.write), text)
    except (ValueError, CellError) as exc:
        raise SystemExit(f"suite_results {args.command}: {exc}") from exc
    print(text)


if __name__ == "__main__":
    main()
