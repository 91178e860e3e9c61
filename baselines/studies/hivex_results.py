"""Every published HIVEX result cell beside ours: train, evaluate and record the cells; write the page
docs/hivex_results.md from the records.

The commands of `scripts/hivex_results.py` (its docstring says how to run them): `run` trains each cell
with the env's shipped IPPO config and scores it under HIVEX's protocol, a
`baselines.studies.study` whose cells
(`study_cell`) record themselves as they finish; `record` writes the records of run folders made before;
`page` renders the page from the published tables and the records alone, marking each cell whose record
is not of the config the cell would train with now (`config_checks`, `baselines.studies.config_fingerprint`).
The cells and each env's HIVEX metadata are `hivex_jax.eval.hivex_cells`, the page and the records
`hivex_jax.eval.results_page` (the record files: `hivex_jax.eval.result_records`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from baselines.cli import sweep as cli_sweep
from baselines.config import load_config, validate_env
from baselines.studies.hivex_configs import (
    cell_config,
    check_stale,
    config_checks,
    recorded_config,
)
from baselines.studies.hivex_variants import variant_record
from baselines.studies.study import CellDone, CellError, StudyCell, hivex, run_cells, train_args
from hivex_jax.eval.hivex_cells import (
    Cell,
    default_cells,
    hivex_agent_steps,
    parse_cells,
    train_settings,
)
from hivex_jax.eval.hivex_records import load_records
from hivex_jax.eval.result_records import read_json, write_record
from hivex_jax.eval.results_csv import CELLS_FILE, SEEDS_FILE
from hivex_jax.eval.results_page import (
    RECORDS_DIR,
    record_cell,
    record_folders,
    write_page,
)
from hivex_jax.eval.results_variants import variant_path

DEFAULT_OUT_DIR = "runs/hivex_results"
DEFAULT_RECORDS = str(RECORDS_DIR)
DEFAULT_PAGE = "docs/hivex_results.md"


def evaluate_hivex(cell: Cell, run_dir: Path, scale: float) -> None:
    """Score a trained cell under HIVEX's protocol at `scale` of its agent steps into `eval_hivex.json`."""
    steps, full, clamped = hivex_agent_steps(cell.env_id, scale)
    partial = run_dir / "eval_hivex.partial.json"
    args = [
        "evaluate",
        str(run_dir),
        "--protocol",
        "hivex",
        "--agent-steps",
        str(steps),
        "--out",
        str(partial),
    ]
    seconds = hivex(args, run_dir / "eval_hivex.log")
    results = json.loads(partial.read_text())
    results.update(
        agent_steps_scale=scale,
        hivex_agent_steps=full,
        agent_steps_clamped_to_one_window=clamped,
        wall_s=seconds,
    )
    (run_dir / "eval_hivex.json").write_text(json.dumps(results, indent=1))
    partial.unlink()


def _recorded(cell: Cell, run_dir: Path, records: str | Path, gpu: bool) -> str:
    """Record a cell's run folder with the config it trained with (its shipped config the CPU one, or with
    `gpu` the GPU one): "recorded in FILE" / "record FILE unchanged" / "no results to record"."""
    written = record_cell(cell, run_dir, records, recorded_config(cell, run_dir, gpu))
    if written is None:
        return "no results to record"
    path, changed = written
    return f"recorded in {path}" if changed else f"record {path} unchanged"


def study_cell(
    cell: Cell,
    out_dir: str | Path,
    scale: float,
    overrides: list[str],
    records: str | Path = DEFAULT_RECORDS,
    gpu: bool = False,
) -> StudyCell:
    """A results cell of the study: `hivex train` (logged to train.log) with the cell's shipped config (its
    GPU config with `gpu`), then the HIVEX protocol, then its record in `records`."""
    run_dir = cell.path(out_dir)
    config = cell_config(cell, gpu)
    settings = train_settings(cell, overrides, gpu)
    return StudyCell(
        key=cell.label(),
        run_dir=run_dir,
        train=lambda resume: hivex(
            train_args(run_dir, config, settings, resume, overrides), run_dir / "train.log"
        ),
        evaluate=lambda: evaluate_hivex(cell, run_dir, scale),
        evaluated=lambda: (run_dir / "eval_hivex.json").is_file(),
        record=lambda: _recorded(cell, run_dir, records, gpu),
    )


def cell_summary(run_dir: Path) -> str:
    """One line of a finished cell's numbers for the progress output."""
    parts = []
    hivex_results = read_json(run_dir / "eval_hivex.json")
    if hivex_results:
        cells = {n: p["cell"] for n, p in hivex_results["policies"].items()}
        parts.append("HIVEX protocol " + ", ".join(f"{n} {v:.1f}" for n, v in cells.items()))
    held = read_json(run_dir / "eval.json")
    if held:
        means = {n: p["summary"]["mean"] for n, p in held["policies"].items()}
        parts.append("held-out " + ", ".join(f"{n} {v:.1f}" for n, v in means.items()))
    return "; ".join(parts)


def train_fused(
    cells: list[Cell],
    out_dir: str | Path,
    overrides: list[str],
    gpu: bool = False,
    max_members: int | None = None,
) -> None:
    """`run --fuse`: train the cells not trained yet as fused populations (as `hivex sweep` does: one
    program per env and algo, split by `max_members`, members resuming together from one checkpoint), each
    into its cell folder as `hivex train` would; a cell left alone in its program is trained by `run`."""
    pending = [c for c in cells if not (c.path(out_dir) / "eval.json").is_file()]
    run_dirs = [c.path(out_dir) for c in pending]
    configs = []
    for cell, run_dir in zip(pending, run_dirs, strict=True):
        where = [f"out_dir={run_dir.parent}", f"name={run_dir.name}"]
        configs.append(load_config(cell_config(cell, gpu), [*train_settings(cell, overrides, gpu), *where]))
        validate_env(configs[-1])
    if len(pending) > 1:
        labels = [c.label() for c in pending]
        cli_sweep.train_fused_programs(
            configs,
            labels,
            run_dirs,
            max_members=max_members,
            progress=sys.stderr.isatty(),
            command="hivex_results run --fuse",
        )


def run_main(args: argparse.Namespace) -> int:
    """`run`: every requested cell, one progress line each, its record written as soon as it is done;
    failures are listed at the end."""
    cells = parse_cells(args.cells) if args.cells else default_cells()
    if not args.agent_steps_scale > 0:
        raise SystemExit(f"--agent-steps-scale must be > 0; got {args.agent_steps_scale}")
    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        raise SystemExit(f"overrides must be key=value; got {bad}")
    for cell in cells:  # every GPU config exists, before anything trains
        cell_config(cell, args.gpu)
    if args.max_members is not None and args.max_members < 1:
        raise SystemExit(f"--max-members must be at least 1; got {args.max_members}")
    check_stale(cells, args.out_dir, args.overrides, args.retrain_stale, args.gpu)
    if args.fuse:
        train_fused(cells, args.out_dir, args.overrides, args.gpu, args.max_members)
    study = [
        study_cell(c, args.out_dir, args.agent_steps_scale, args.overrides, args.records, args.gpu)
        for c in cells
    ]
    steps = {c.label(): hivex_agent_steps(c.env_id, args.agent_steps_scale)[0] for c in cells}

    def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
        if isinstance(done, CellError):
            print(f"[{i}/{len(study)}] {cell.key}: FAILED: {done}", flush=True)
            return
        evaluated = (
            done.evaluate
            if done.evaluate == "kept"
            else f"{done.evaluate} ({steps[cell.key]:,} agent steps per run)"
        )
        print(
            f"[{i}/{len(study)}] {cell.key}: train {done.train}, HIVEX protocol {evaluated} "
            f"({done.train_s + done.eval_s:.0f} s): {cell_summary(cell.run_dir)}; {done.recorded}",
            flush=True,
        )

    failed = run_cells(study, report=report, keep_going=True)
    if failed:
        print(f"{len(failed)} cell(s) failed: {', '.join(c.key for c in failed)}", file=sys.stderr)
        return 1
    return 0


def record_main(args: argparse.Namespace) -> int:
    """`record`: the records of the run folders with results (every one under --out-dir, or --cells; a
    requested cell without results is listed and left alone)."""
    if args.cells:
        done = []
        for cell in parse_cells(args.cells):
            run_dir = cell.path(args.out_dir)
            has_results = (run_dir / "eval.json").is_file() or (run_dir / "eval_hivex.json").is_file()
            config = recorded_config(cell, run_dir) if has_results else None
            written = record_cell(cell, run_dir, args.records, config)
            if written is None:
                print(f"{cell.label()}: no results in {cell.path(args.out_dir)}; no record written")
            else:
                done.append((cell, *written))
    else:
        done = record_folders(args.out_dir, args.records, recorded_config)
    for cell, path, changed in done:
        print(f"{cell.label()}: {'wrote' if changed else 'unchanged'} {path}")
    changed = sum(1 for *_, c in done if c)
    print(
        f"{len(done)} cell(s) with results under {args.out_dir}: {changed} record(s) written, "
        f"{len(done) - changed} unchanged, in {args.records}"
    )
    return 0


def record_variant_main(args: argparse.Namespace) -> int:
    """`record-variant`: the record of a run of one cell at another budget or trainer setting."""
    cells = parse_cells(args.cell)
    if len(cells) != 1:
        raise ValueError(f"--cell names one cell; {args.cell!r} names {len(cells)}")
    evidence = read_json(Path(args.evidence)) if args.evidence else None
    if args.evidence and evidence is None:
        raise ValueError(f"cannot read the evidence file {args.evidence}")
    record = variant_record(cells[0], Path(args.run_dir), args.name, evidence)
    if record is None:
        raise ValueError(f"no results (eval.json) in {args.run_dir}")
    path = variant_path(args.records, cells[0], args.name)
    print(f"{cells[0].label()} {args.name}: {'wrote' if write_record(path, record) else 'unchanged'} {path}")
    return 0


def page_main(args: argparse.Namespace) -> int:
    """`page`: write the page (and its CSV tables) from the records."""
    if not Path(args.records).is_dir():
        raise ValueError(f"no records folder {args.records}")
    command = "python scripts/hivex_results.py page"
    if args.records != DEFAULT_RECORDS:
        command += f" --records {args.records}"
    if args.out != DEFAULT_PAGE:
        command += f" --out {args.out}"
    checks = config_checks(load_records(args.records))
    out, num_cells = write_page(args.records, args.out, command, allow_fewer=args.allow_fewer, checks=checks)
    print(
        f"wrote {out} and {Path(args.records).parent}/{{{CELLS_FILE},{SEEDS_FILE}}}: {num_cells} cell(s) "
        f"with records in {args.records}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Dispatch `run` / `record` / `page` / `record-variant`."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train and evaluate the cells (resumable)")
    run.add_argument(
        "--cells", default=None, help="[mappo:]ENV:TASK:LEVEL[,...] (default: the main-task cells)"
    )
    run.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    run.add_argument("--records", default=DEFAULT_RECORDS, help="where each cell's record is written")
    run.add_argument(
        "--agent-steps-scale",
        type=float,
        default=1.0,
        help="HIVEX protocol budget as a fraction of HIVEX's test-run agent steps (default 1)",
    )
    run.add_argument(
        "--gpu",
        action="store_true",
        help="train with the env's GPU config (configs/<algo>_<env>_gpu.yaml) and no early stop (its "
        "larger budget; the page's 'GPU budget' cells, where an env leaves any to a GPU)",
    )
    run.add_argument(
        "--retrain-stale",
        action="store_true",
        help="retrain finished cells whose run folder was trained with another config than the shipped one "
        "now (the old folder is moved under <env folder>/superseded/; default: keep them and say so)",
    )
    run.add_argument(
        "--fuse",
        action="store_true",
        help="train the cells as fused populations, one program per env and algo (as hivex sweep does; "
        "docs/sweeps.md), then score and record them cell by cell",
    )
    run.add_argument("--max-members", type=int, default=None, metavar="N", help="with --fuse: N per program")
    run.add_argument("overrides", nargs="*", metavar="key=value", help="training config overrides")
    record = sub.add_parser("record", help="write the records of run folders made before")
    record.add_argument(
        "--cells", default=None, help="[mappo:]ENV:TASK:LEVEL[,...] (default: every cell folder)"
    )
    record.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    record.add_argument("--records", default=DEFAULT_RECORDS)
    page = sub.add_parser("page", help="write the page from the published tables and the records")
    page.add_argument("--records", default=DEFAULT_RECORDS)
    page.add_argument("--out", default=DEFAULT_PAGE)
    page.add_argument(
        "--allow-fewer", action="store_true", help="write it even if cells the page shows would vanish"
    )
    variant = sub.add_parser(
        "record-variant", help="record a run of one cell at another budget or trainer setting"
    )
    variant.add_argument("run_dir", help="the run folder (hivex train's, with eval.json)")
    variant.add_argument("--cell", required=True, help="ENV:TASK:LEVEL of the comparable cell")
    variant.add_argument("--name", required=True, help="the variant's name, e.g. x4")
    variant.add_argument("--evidence", default=None, help="scripts/subtask_evidence.py --json output")
    variant.add_argument("--records", default=DEFAULT_RECORDS)
    args = p.parse_args(argv)
    commands = {
        "run": run_main,
        "record": record_main,
        "page": page_main,
        "record-variant": record_variant_main,
    }
    try:
        return commands[args.command](args)
    except ValueError as exc:
        raise SystemExit(f"hivex_results {args.command}: {exc}") from exc
