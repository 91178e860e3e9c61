"""The whole suite's learning results (issue 16): every env x {IPPO, MAPPO}, trained with its shipped
config, evaluated on held-out worlds 6000-6031, as one table in docs/training.md.

    python scripts/suite_results.py run    [--cells SPEC] [--out-dir runs/suite]
                                           [--records docs/data/results/suite] [key=value ...]
    python scripts/suite_results.py record [--cells SPEC] [--out-dir runs/suite]
                                           [--records docs/data/results/suite]
    python scripts/suite_results.py table  [--records docs/data/results/suite]
                                           [--write docs/training.md [--allow-fewer]]

`run` trains each cell with `hivex train --config configs/<algo>_<env>.yaml test_worlds=6000:6032
gif_frames=0` into `OUT_DIR/<algo>_<env>/` (resumable: a cell with `eval.json` is kept, one with a
checkpoint is resumed) and, as soon as the cell is finished (or kept), writes or refreshes its committed
record `RECORDS/<algo>_<env>.json`: what the table shows of the cell and where, when and with what it was
measured (`hivex_jax.eval.suite_table.cell_record`); run folders are machine-local (`runs/` is git-ignored),
so commit the records with the table. SPEC: comma-separated `ALGO:ENV` with ENV a short name (wfc, wrm,
dbr, opc, aws) and ALGO ippo or mappo; default every cell.

`record` writes the records of the finished cells under `--out-dir` (of SPEC, default every cell), for runs
made before `run` recorded them.

`table` renders the Markdown table from the records alone (no run folder is read) and prints it, or writes
it between the `<!-- suite-results -->` markers of `--write`, refusing in one line (naming them) when a cell
the table there shows would vanish, unless `--allow-fewer`; what its columns are:
`hivex_jax.eval.suite_table`. The resumable training loop is `baselines.study`.
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
    RECORDS_DIR,
    TEST_WORLDS,
    cell_config,
    cell_name,
    cells,
    load_records,
    record_cell,
    record_folders,
    table,
    write_between_markers,
)


def _recorded(algo: str, env: str, run_dir: Path, records: str | Path) -> str:
    """Record a finished cell's run folder: "recorded in FILE" / "record FILE unchanged"."""
    written = record_cell(algo, env, run_dir, records)
    if written is None:
        return "not finished: no record"
    return f"{'recorded in' if written[1] else 'record unchanged:'} {written[0]}"


def study_cell(
    algo: str, env: str, out_dir: Path, overrides: list[str], records: str | Path = RECORDS_DIR
) -> StudyCell:
    """One suite cell: `hivex train` with its shipped config (logged to OUT_DIR/<algo>_<env>.log), then its
    record in `records`."""
    run_dir = out_dir / cell_name(algo, env)
    config = ROOT / "configs" / cell_config(algo, env)
    settings = [f"test_worlds={TEST_WORLDS}", "gif_frames=0", *overrides]
    log = out_dir / f"{run_dir.name}.log"
    return StudyCell(
        key=f"{algo}:{env}",
        run_dir=run_dir,
        train=lambda resume: hivex(train_args(run_dir, config, settings, resume, overrides), log),
        record=lambda: _recorded(algo, env, run_dir, records),
    )


def main(argv: list[str] | None = None) -> None:
    """Dispatch `run` / `record` / `table`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "record", "table"))
    parser.add_argument("--cells", default=None, help="ALGO:ENV,... (default: every cell)")
    parser.add_argument("--out-dir", default="runs/suite")
    parser.add_argument("--records", default=str(RECORDS_DIR), help="the cells' records")
    parser.add_argument("--write", default=None, help="table: write between the markers of this page")
    parser.add_argument(
        "--allow-fewer", action="store_true", help="table --write: even if cells the page shows would vanish"
    )
    parser.add_argument("overrides", nargs="*", help="run: key=value overrides for every cell")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    try:
        if args.command == "run":
            study = [
                study_cell(algo, env, out_dir, args.overrides, args.records)
                for algo, env in cells(args.cells)
            ]

            def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
                print(f"[{i}/{len(study)}] {cell.key}: {done.train}; {done.recorded}", flush=True)

            run_cells(study, report=report)
            return
        if args.command == "record":
            for algo, env, path, changed in record_folders(out_dir, args.records, cells(args.cells)):
                what = "not finished" if path is None else f"{'wrote' if changed else 'unchanged'} {path}"
                print(f"{algo}:{env}: {what}")
            return
        text = table(load_records(args.records))
        if args.write:
            write_between_markers(Path(args.write), text, allow_fewer=args.allow_fewer)
    except (ValueError, CellError) as exc:
        raise SystemExit(f"suite_results {args.command}: {exc}") from exc
    print(text)


if __name__ == "__main__":
    main()
