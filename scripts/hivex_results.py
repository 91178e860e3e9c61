"""Every published HIVEX result cell beside ours: train/evaluate the cells, then write docs/hivex_results.md.

    python scripts/hivex_results.py run [--cells SPEC] [--out-dir runs/hivex_results]
                                        [--agent-steps-scale F] [key=value ...]
    python scripts/hivex_results.py page [--out-dir runs/hivex_results] [--out docs/hivex_results.md]

`run` trains IPPO with the env's shipped config (`configs/ippo_<env>.yaml`, plus `task=`, `level=`,
`test_worlds=6000:6032`, `gif_frames=0` and any `key=value` overrides) into
`OUT_DIR/<env id>/task<t>_level<l>/`
(`hivex train`, which writes the held-out evaluation `eval.json`), then scores it under HIVEX's protocol
(`hivex evaluate --protocol hivex`, `eval_hivex.json`). It is resumable: a cell with `eval.json` is not
trained again (one with a checkpoint but no `eval.json` is resumed), one with `eval_hivex.json` is not
evaluated again. `--agent-steps-scale F` runs the HIVEX protocol on F times HIVEX's test-run agent steps
(at least one summary window); the scale is recorded in `eval_hivex.json` and shown on the page.

`page` renders the page from the published tables (`hivex_jax/eval/data/hivex_published.json`) and whatever
cells exist. SPEC: comma-separated `ENV:TASK:LEVEL` with ENV an env id or wfc/wrm/dbr/opc/aws, TASK and
LEVEL an integer or a range `a-b`, LEVEL `none` for Ocean Plastic Collection; default: the main task at every
pattern of Wind Farm Control and every level of Wildfire Resource Management, and at level 1 (OPC: no level)
for the other three.

The cells and each env's HIVEX metadata are `hivex_jax.eval.hivex_cells`, the page
`hivex_jax.eval.results_page`, the resumable train-evaluate loop `baselines.study`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from baselines.study import CellDone, CellError, StudyCell, hivex, run_cells, train_args  # noqa: E402
from hivex_jax.eval.hivex_cells import (  # noqa: E402
    HIVEX_ENVS,
    Cell,
    default_cells,
    hivex_agent_steps,
    parse_cells,
    train_settings,
)
from hivex_jax.eval.results_page import write_page  # noqa: E402

DEFAULT_OUT_DIR = "runs/hivex_results"
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


def study_cell(cell: Cell, out_dir: str | Path, scale: float, overrides: list[str]) -> StudyCell:
    """A results cell of the study: `hivex train` (logged to train.log), then the HIVEX protocol."""
    run_dir = cell.path(out_dir)
    config = ROOT / "configs" / HIVEX_ENVS[cell.env_id].config
    settings = train_settings(cell, overrides)
    return StudyCell(
        key=cell.label(),
        run_dir=run_dir,
        train=lambda resume: hivex(
            train_args(run_dir, config, settings, resume, overrides), run_dir / "train.log"
        ),
        evaluate=lambda: evaluate_hivex(cell, run_dir, scale),
        evaluated=lambda: (run_dir / "eval_hivex.json").is_file(),
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def cell_summary(run_dir: Path) -> str:
    """One line of a finished cell's numbers for the progress output."""
    parts = []
    hivex_results = _read_json(run_dir / "eval_hivex.json")
    if hivex_results:
        cells = {n: p["cell"] for n, p in hivex_results["policies"].items()}
        parts.append("HIVEX protocol " + ", ".join(f"{n} {v:.1f}" for n, v in cells.items()))
    held = _read_json(run_dir / "eval.json")
    if held:
        means = {n: p["summary"]["mean"] for n, p in held["policies"].items()}
        parts.append("held-out " + ", ".join(f"{n} {v:.1f}" for n, v in means.items()))
    return "; ".join(parts)


def run_main(args: argparse.Namespace) -> int:
    """`run`: every requested cell, one progress line each; failures are listed at the end."""
    cells = parse_cells(args.cells) if args.cells else default_cells()
    if not args.agent_steps_scale > 0:
        raise SystemExit(f"--agent-steps-scale must be > 0; got {args.agent_steps_scale}")
    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        raise SystemExit(f"overrides must be key=value; got {bad}")
    study = [study_cell(c, args.out_dir, args.agent_steps_scale, args.overrides) for c in cells]
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
            f"({done.train_s + done.eval_s:.0f} s): {cell_summary(cell.run_dir)}",
            flush=True,
        )

    failed = run_cells(study, report=report, keep_going=True)
    if failed:
        print(f"{len(failed)} cell(s) failed: {', '.join(c.key for c in failed)}", file=sys.stderr)
        return 1
    return 0


def page_main(args: argparse.Namespace) -> int:
    """`page`: write the page."""
    command = "python scripts/hivex_results.py page"
    if args.out_dir != DEFAULT_OUT_DIR:
        command += f" --out-dir {args.out_dir}"
    if args.out != DEFAULT_PAGE:
        command += f" --out {args.out}"
    out, num_cells = write_page(args.out_dir, args.out, command)
    print(f"wrote {out}: {num_cells} cell(s) with results from {args.out_dir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Dispatch `run` / `page`."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train and evaluate the cells (resumable)")
    run.add_argument("--cells", default=None, help="ENV:TASK:LEVEL[,...] (default: the main-task cells)")
    run.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    run.add_argument(
        "--agent-steps-scale",
        type=float,
        default=1.0,
        help="HIVEX protocol budget as a fraction of HIVEX's test-run agent steps (default 1)",
    )
    run.add_argument("overrides", nargs="*", metavar="key=value", help="training config overrides")
    page = sub.add_parser("page", help="write the page from the published tables and the run cells")
    page.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    page.add_argument("--out", default=DEFAULT_PAGE)
    args = p.parse_args(argv)
    if args.command == "run":
        try:
            return run_main(args)
        except ValueError as exc:
            raise SystemExit(f"hivex_results run: {exc}") from exc
    return page_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
