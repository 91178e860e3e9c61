"""The whole suite's learning results: every env x {IPPO, MAPPO}, trained with its shipped
config, evaluated on held-out worlds 6000-6031, as one table in docs/results.md.

The commands of `scripts/suite_results.py` (its docstring says how to run them): `run` trains each cell
(`study_cell`, a cell of a `baselines.studies.study` that records itself once trained), `record` writes the
records of finished run folders made before, `table` renders the table from the records alone and
prints it or writes it into a page, marking each cell whose record is not of the config the cell would
train with now (`config_checks`, `baselines.studies.config_fingerprint`). What its cells, records and
columns are: `hivex_jax.eval.suite_table`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from baselines.config import load_config
from baselines.studies.config_fingerprint import (
    check_record,
    config_now,
    defaults_of,
    read_golden,
    run_config,
)
from baselines.studies.study import ROOT, CellDone, CellError, StudyCell, hivex, run_cells, train_args
from hivex_jax.eval.result_records import ConfigCheck
from hivex_jax.eval.suite_table import (
    RECORDS_DIR,
    RESULTS_PAGE,
    SUITE_SEEDS,
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

#: where `run` trains the cells by default (5 seeds; `runs/suite` held the earlier 3-seed cells)
OUT_DIR = Path("runs/suite5")


def settings() -> list[str]:
    """The `hivex train` settings of every suite cell after its shipped config: the held-out worlds, the
    suite's seeds, no GIF."""
    return [f"test_worlds={TEST_WORLDS}", f"num_seeds={SUITE_SEEDS}", "gif_frames=0"]


def recorded_config(algo: str, env: str, run_dir: Path) -> dict:
    """The config block a cell's record keeps of its run folder (`config_fingerprint.run_config`)."""
    return run_config(run_dir, f"configs/{cell_config(algo, env)}", read_golden())


def config_checks(
    records: dict[tuple[str, str], dict], configs: Path | None = None
) -> dict[tuple[str, str], ConfigCheck]:
    """How each cell's record stands against the config the cell would train with now: its shipped config
    (under `configs`, default the repository's) with the suite's `settings`."""
    golden, checks = read_golden(), {}
    for (algo, env), record in records.items():
        config = load_config((configs or ROOT / "configs") / cell_config(algo, env), settings())
        now = config_now(config, f"configs/{cell_config(algo, env)}", golden)
        checks[(algo, env)] = check_record(record, now, defaults_of(config))
    return checks


def _recorded(algo: str, env: str, run_dir: Path, records: str | Path) -> str:
    """Record a finished cell's run folder with the config it trained with: "recorded in FILE" / "record
    FILE unchanged"."""
    has_results = (run_dir / "eval.json").is_file()
    config = recorded_config(algo, env, run_dir) if has_results else None
    written = record_cell(algo, env, run_dir, records, config)
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
    train_settings = [*settings(), *overrides]
    log = out_dir / f"{run_dir.name}.log"
    return StudyCell(
        key=f"{algo}:{env}",
        run_dir=run_dir,
        train=lambda resume: hivex(train_args(run_dir, config, train_settings, resume, overrides), log),
        record=lambda: _recorded(algo, env, run_dir, records),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: a command, options and (`run`) key=value overrides, before or after the options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "record", "table"))
    parser.add_argument("--cells", default=None, help="ALGO:ENV,... (default: every cell)")
    parser.add_argument("--out-dir", default=str(OUT_DIR))
    parser.add_argument("--records", default=str(RECORDS_DIR), help="the cells' records")
    parser.add_argument(
        "--write",
        default=None,
        metavar="PAGE",
        help=f"table: write between the markers of this page (the suite table's: {RESULTS_PAGE})",
    )
    parser.add_argument(
        "--allow-fewer", action="store_true", help="table --write: even if cells the page shows would vanish"
    )
    parser.add_argument("overrides", nargs="*", help="run: key=value overrides for every cell")
    # intermixed: overrides may come before or after the options (`run --cells ippo:wfc num_seeds=5`)
    return parser.parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Dispatch `run` / `record` / `table`."""
    args = parse_args(argv)
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
            done = record_folders(out_dir, args.records, cells(args.cells), recorded_config)
            for algo, env, path, changed in done:
                what = "not finished" if path is None else f"{'wrote' if changed else 'unchanged'} {path}"
                print(f"{algo}:{env}: {what}")
            return
        records = load_records(args.records)
        text = table(records, config_checks(records))
        if args.write:
            write_between_markers(Path(args.write), text, allow_fewer=args.allow_fewer)
    except (ValueError, CellError) as exc:
        raise SystemExit(f"suite_results {args.command}: {exc}") from exc
    print(text)
