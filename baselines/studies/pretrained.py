"""The pretrained policies' build (`scripts/pretrained.py`): per suite cell (algo x env) its training, as the
suite trained it (`hivex train --config configs/<algo>_<env>.yaml test_worlds=6000:6032 num_seeds=5
gif_frames=0`), into `OUT_DIR/<algo>_<env>/`, then the policy written from the run's seed closest to the
cell's median (`baselines.pretrained_policies.build.build_policy`), then docs/pretrained.md's table.

Five seeds, not one: a seed's run depends on the population it is vmapped in (a population of one rounds
its batched matmuls otherwise, and the runs part after the first update), so a one-seed run is not the
cell's seed S. Where 5 seeds cost too much (`--one-seed-tries K`), seeds train one at a time until one lands
in the middle half of the cell's seeds. Resumable: a policy already built (in the manifest, its checksums
right) is skipped, training included; a finished run is kept and a stopped one resumed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from baselines.pretrained_policies import DATA_DIR
from baselines.pretrained_policies.build import (
    build_policy,
    greedy_fractions,
    in_middle_half,
    is_built,
    read_cards,
    write_card,
    write_table,
)
from baselines.pretrained_policies.play import card_check
from baselines.pretrained_policies.store import load, read_manifest
from baselines.run.checkpoint import latest_step
from baselines.studies.study import ROOT, CellDone, CellError, StudyCell, hivex, run_cells, train_args
from hivex_jax.eval.suite_table import (
    RECORDS_DIR,
    SUITE_SEEDS,
    TEST_WORLDS,
    cell_config,
    cell_name,
    cell_record,
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
    algo: str,
    env: str,
    out_dir: Path,
    overrides: list[str],
    records: Path,
    tries: int = 0,
    data_dir: Path = DATA_DIR,
) -> StudyCell:
    """One policy: its training (logged to OUT_DIR/<run>.log), then its files. `tries` 0: the suite cell's
    5-seed run `OUT_DIR/<algo>_<env>/`, its seed closest to the cell's median shipped; else one seed at a
    time (`num_seeds=1 seed=k`, `OUT_DIR/<algo>_<env>_seed<k>/`, k < tries) until one's greedy fraction of
    scripted lies in the middle half of the cell's seeds, or the closest to the median of all `tries`."""
    name = cell_name(algo, env)
    config = ROOT / "configs" / cell_config(algo, env)
    cell_path = record_path(records, algo, env)
    base = [f"test_worlds={TEST_WORLDS}", "gif_frames=0"]
    if tries:
        runs = [
            (out_dir / f"{name}_seed{k}", [*base, "num_seeds=1", f"seed={k}", *overrides])
            for k in range(tries)
        ]
    else:
        runs = [(out_dir / name, [*base, f"num_seeds={SUITE_SEEDS}", *overrides])]

    def cell() -> dict:
        if not cell_path.is_file():
            raise CellError(f"{name}: no suite record {cell_path} to take the median seed from")
        return json.loads(cell_path.read_text())

    def fraction(run_dir: Path) -> float:  # a one-seed run's greedy fraction of scripted
        return greedy_fractions(cell_record(algo, env, run_dir) or {})[0]

    def chosen() -> Path | None:
        """The run to ship, or None while one must still train."""
        for run_dir, _ in runs:
            if not (run_dir / "eval.json").is_file():
                return None
            if not tries or in_middle_half(fraction(run_dir), cell()):
                return run_dir
        median = np.median(greedy_fractions(cell()))
        return min((r for r, _ in runs), key=lambda r: abs(fraction(r) - median))

    def train(resume: bool) -> None:  # each run resumes its own checkpoint
        cell()  # no record: one line before hours of training
        for run_dir, settings in runs:
            if chosen() is not None:
                return
            if not (run_dir / "eval.json").is_file():
                again = run_dir.is_dir() and latest_step(run_dir) is not None
                hivex(
                    train_args(run_dir, config, settings, again, overrides), out_dir / f"{run_dir.name}.log"
                )
                if not (run_dir / "eval.json").is_file():  # stopped unfinished: the harness says so
                    return

    def build() -> str:
        if is_built(name, data_dir):
            return "kept (built)"
        run_dir = chosen()
        assert run_dir is not None, "built before its training finished"  # run_cell trains first
        settings = dict(runs)[run_dir]
        summary = json.loads((run_dir / "summary.json").read_text())
        training = {
            "config_file": str(config.relative_to(ROOT)),
            "overrides": settings,
            "run_dir": str(run_dir),
            "train_s": summary.get("train_s"),
            "compile_s": summary.get("compile_s"),
        }
        if tries:  # every one-seed run tried, in order, with its greedy fraction of scripted
            training["tries"] = [
                {"run_dir": str(r), "seed": k, "greedy_fraction": fraction(r)}
                for k, (r, _) in enumerate(runs)
                if (r / "eval.json").is_file()
            ]
        card = build_policy(name, env, run_dir, cell_path, training, data_dir)
        greedy = card["held_out"].get("fraction_of_scripted", {}).get("greedy")
        seed = card["training"]["seed_index"]
        return f"built {name} from {run_dir.name}: seed {seed}, greedy {greedy:.3f} of scripted"

    return StudyCell(
        key=f"{algo}:{env}",
        run_dir=runs[0][0],
        train=train,
        trained=lambda: is_built(name, data_dir) or chosen() is not None,
        record=build,
    )


def rewrite_checks(data_dir: Path = DATA_DIR, log: Any = print) -> None:
    """Recompute every shipped card's check with this checkout's code and compile flags (the weights and the
    rest of the card unchanged) and its manifest entry's checksums: after a change that rounds the envs or
    the networks otherwise."""
    for name, entry in read_manifest(data_dir)["policies"].items():
        policy = load(entry["env"], entry["algo"], data_dir=data_dir)
        card = json.loads((data_dir / entry["card"]).read_text())
        before = card.get("check", {}).get("greedy_returns")
        card["check"] = card_check(policy)
        write_card(data_dir, card, entry["card"])
        log(f"{name}: check returns {card['check']['greedy_returns']} (were {before})")


def sizes(data_dir: Path = DATA_DIR) -> str:
    """The shipped files' total size against the limit, in one line."""
    total = sum(p.stat().st_size for p in data_dir.iterdir() if p.is_file())
    verdict = "within" if total <= MAX_TOTAL_BYTES else "OVER"
    limit = MAX_TOTAL_BYTES / 2**20
    return f"shipped files: {total / 2**20:.2f} MiB in {data_dir}, {verdict} the {limit:.0f} MiB limit"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: `build` / `table` / `check`, options and (`build`) training key=value overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("build", "table", "check"))
    parser.add_argument("--cells", default=None, help="ALGO:ENV,... (default: every cell)")
    parser.add_argument("--out-dir", default=str(OUT_DIR), help="where the runs are trained")
    parser.add_argument("--records", default=str(RECORDS_DIR), help="the suite cells' records (median seeds)")
    parser.add_argument("--page", default=str(PAGE), help="the docs page whose table is rewritten")
    parser.add_argument(
        "--one-seed-tries",
        type=int,
        default=0,
        metavar="K",
        help="train one seed at a time (seed 0, 1, ...) until one lands in the middle half of the cell's "
        "seeds, at most K, instead of the cell's 5-seed run (default 0: the 5-seed run)",
    )
    parser.add_argument("overrides", nargs="*", help="build: key=value training overrides for every cell")
    return parser.parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Build the policies of `--cells` (each skipped once built; `check`: recompute the shipped cards'
    checks), then rewrite the page's table."""
    args = parse_args(argv)
    try:
        if args.command == "build":
            todo = [
                policy_cell(
                    algo, env, Path(args.out_dir), args.overrides, Path(args.records), args.one_seed_tries
                )
                for algo, env in cells(args.cells)
            ]

            def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
                print(f"[{i}/{len(todo)}] {cell.key}: {done.train}; {done.recorded}", flush=True)

            run_cells(todo, report=report)
        if args.command == "check":
            rewrite_checks()
        changed = write_table(Path(args.page), read_cards())
    except (ValueError, CellError) as exc:
        raise SystemExit(f"pretrained {args.command}: {exc}") from exc
    print(f"{'wrote' if changed else 'unchanged:'} the table of {args.page}")
    print(sizes())
