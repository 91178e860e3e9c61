"""The pretrained policies' build (`scripts/pretrained.py`): per suite cell (algo x env) its training, as the
suite trained it (`hivex train --config configs/<algo>_<env>.yaml test_worlds=6000:6032 num_seeds=5
gif_frames=0`), into `OUT_DIR/<algo>_<env>/`, then the policy written from the run's seed closest to the
cell's median (`baselines.pretrained_policies.build.build_policy`), then docs/pretrained.md's table.

Five seeds, not one: a seed's run depends on the population it is vmapped in (a population of one rounds
its batched matmuls otherwise, and the runs part after the first update), so only the suite's 5-seed
run reproduces its seed S. Resumable: a policy already built (in the manifest, its checksums right) is
skipped, training included; a finished run is kept and a stopped one resumed (`baselines.studies.study`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from baselines.pretrained_policies import DATA_DIR
from baselines.pretrained_policies.build import build_policy, is_built, read_cards, write_table
from baselines.studies.study import ROOT, CellDone, CellError, StudyCell, hivex, run_cells, train_args
from hivex_jax.eval.suite_table import (
    RECORDS_DIR,
    SUITE_SEEDS,
    TEST_WORLDS,
    cell_config,
    cell_name,
    cells,
    record_path,
)

#: where the runs are trained (machine-local: runs/ is git-ignored)
OUT_DIR = Path("runs/pretrained_build")
#: the docs page whose table lists the shipped policies
PAGE = Path("docs/pretrained.md")
#: the most the shipped files may weigh together
MAX_TOTAL_BYTES = 10 * 2**20


def policy_cell(
    algo: str, env: str, out_dir: Path, overrides: list[str], records: Path, data_dir: Path = DATA_DIR
) -> StudyCell:
    """One policy: the suite cell's training (logged to OUT_DIR/<algo>_<env>.log), then its files."""
    name = cell_name(algo, env)
    run_dir = out_dir / name
    config = ROOT / "configs" / cell_config(algo, env)
    settings = [f"test_worlds={TEST_WORLDS}", f"num_seeds={SUITE_SEEDS}", "gif_frames=0", *overrides]
    log = out_dir / f"{name}.log"

    def build() -> str:
        if is_built(name, data_dir):
            return "kept (built)"
        summary = json.loads((run_dir / "summary.json").read_text())
        training = {
            "config_file": str(config.relative_to(ROOT)),
            "overrides": settings,
            "run_dir": str(run_dir),
            "train_s": summary.get("train_s"),
            "compile_s": summary.get("compile_s"),
        }
        cell_path = record_path(records, algo, env)
        if not cell_path.is_file():
            raise CellError(f"{name}: no suite record {cell_path} to take the median seed from")
        card = build_policy(name, env, run_dir, cell_path, training, data_dir)
        fraction = card["held_out"].get("fraction_of_scripted", {}).get("greedy")
        return f"built {name}: seed {card['training']['seed_index']}, greedy {fraction:.3f} of scripted"

    return StudyCell(
        key=f"{algo}:{env}",
        run_dir=run_dir,
        train=lambda resume: hivex(train_args(run_dir, config, settings, resume, overrides), log),
        trained=lambda: is_built(name, data_dir) or (run_dir / "eval.json").is_file(),
        record=build,
    )


def sizes(data_dir: Path = DATA_DIR) -> str:
    """The shipped files' total size against the limit, in one line."""
    total = sum(p.stat().st_size for p in data_dir.iterdir() if p.is_file())
    verdict = "within" if total <= MAX_TOTAL_BYTES else "OVER"
    limit = MAX_TOTAL_BYTES / 2**20
    return f"shipped files: {total / 2**20:.2f} MiB in {data_dir}, {verdict} the {limit:.0f} MiB limit"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: `build` / `table`, options and (`build`) training key=value overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("build", "table"))
    parser.add_argument("--cells", default=None, help="ALGO:ENV,... (default: every cell)")
    parser.add_argument("--out-dir", default=str(OUT_DIR), help="where the runs are trained")
    parser.add_argument("--records", default=str(RECORDS_DIR), help="the suite cells' records (median seeds)")
    parser.add_argument("--page", default=str(PAGE), help="the docs page whose table is rewritten")
    parser.add_argument("overrides", nargs="*", help="build: key=value training overrides for every cell")
    return parser.parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Build the policies of `--cells` (each skipped once built), then rewrite the page's table."""
    args = parse_args(argv)
    try:
        if args.command == "build":
            todo = [
                policy_cell(algo, env, Path(args.out_dir), args.overrides, Path(args.records))
                for algo, env in cells(args.cells)
            ]

            def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
                print(f"[{i}/{len(todo)}] {cell.key}: {done.train}; {done.recorded}", flush=True)

            run_cells(todo, report=report)
        changed = write_table(Path(args.page), read_cards())
    except (ValueError, CellError) as exc:
        raise SystemExit(f"pretrained {args.command}: {exc}") from exc
    print(f"{'wrote' if changed else 'unchanged:'} the table of {args.page}")
    print(sizes())
