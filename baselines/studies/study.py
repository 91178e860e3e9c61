"""One resumable study harness: cells -> train -> evaluate -> results -> table or page.

A study is a list of cells. Each is trained into its own run folder (kept when finished, resumed from its
newest checkpoint when stopped), then evaluated unless its result is already recorded, and its result is
recorded as it goes: a row of a results JSON rewritten atomically after each cell (`ResultsFile`), or a
file the evaluation writes in the run folder. A cell may also write a committed record of its results
once it is trained and evaluated (`StudyCell.record`; `hivex_jax.eval.result_records`), since run folders
are machine-local. The caller renders its table or page at the end from what was recorded, so a study
stopped anywhere continues where it stopped when run again.
`baselines.studies.hivex_results`, `baselines.studies.suite_results`, `baselines.studies.memorisation` and
`baselines.studies.messages_demo` are studies (their command lines: `scripts/hivex_results.py`,
`scripts/suite_results.py`, `scripts/memorisation_probe.py`, `scripts/messages_demo.py`).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baselines.run.checkpoint import latest_step

#: the repository root: configs/ and the working directory of the `hivex` commands a study runs
ROOT = Path(__file__).resolve().parents[2]


class CellError(RuntimeError):
    """A cell's training or evaluation failed."""


@dataclasses.dataclass(frozen=True)
class StudyCell:
    """One cell of a study: its name, its run folder and how to train and evaluate it."""

    key: str  # the cell's name in progress lines and in the results JSON
    run_dir: Path
    train: Callable[[bool], Any]  # train(resume): train the run, or continue it from its newest checkpoint
    trained: Callable[[], bool] | None = None  # default: the run folder has eval.json
    evaluate: Callable[[], dict[str, Any] | None] | None = None  # its result (a results-JSON row or None)
    evaluated: Callable[[], bool] | None = None  # without a results JSON: is its result there already?
    #: once the cell is trained and evaluated (or kept): write its committed record; what it did, in words
    record: Callable[[], str] | None = None

    def is_trained(self) -> bool:
        """Whether the cell's training is finished."""
        return self.trained() if self.trained else (self.run_dir / "eval.json").is_file()


@dataclasses.dataclass(frozen=True)
class CellDone:
    """What `run_cell` did: "kept", "trained in 12 s", "resumed in 3 s" / "evaluated in 2 s" or None /
    what the cell's `record` said (None without one)."""

    train: str
    evaluate: str | None
    train_s: float
    eval_s: float
    recorded: str | None = None


class ResultsFile:
    """A study's results JSON: the settings it was written with, then one row per cell under "cells";
    rewritten atomically after each cell. A file written with other settings is refused."""

    def __init__(self, path: str | Path, header: dict[str, Any], compare: Sequence[str] | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            self.record: dict[str, Any] = {**header, "cells": {}}
            return
        self.record = json.loads(self.path.read_text())
        differ = [k for k in (header if compare is None else compare) if self.record.get(k) != header.get(k)]
        if differ:
            raise CellError(
                f"{self.path} was written with other settings ({', '.join(differ)}: "
                f"{[self.record.get(k) for k in differ]} vs {[header.get(k) for k in differ]}); "
                "use another output folder"
            )

    def has(self, key: str) -> bool:
        """Whether cell `key` has its row."""
        return key in self.record["cells"]

    def put(self, key: str, row: dict[str, Any]) -> None:
        """Record cell `key`'s row and rewrite the file."""
        self.record["cells"][key] = row
        self.write()

    def write(self) -> None:
        """Write atomically (a kill mid-write keeps the previous file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.record, indent=1))
        tmp.replace(self.path)


def run_cell(cell: StudyCell, results: ResultsFile | None = None) -> CellDone:
    """Train `cell` unless its training is finished (resuming a stopped run), then evaluate it unless its
    result is recorded (a results-JSON row gains the wall seconds `train_s` and `eval_s`), then write its
    committed record (`cell.record`)."""
    done = _train_and_evaluate(cell, results)
    if cell.record is None:
        return done
    return dataclasses.replace(done, recorded=cell.record())


def _train_and_evaluate(cell: StudyCell, results: ResultsFile | None) -> CellDone:
    """`run_cell` but for the record."""
    start = time.perf_counter()
    if cell.is_trained():
        train = "kept"
    else:
        resume = cell.run_dir.is_dir() and latest_step(cell.run_dir) is not None
        cell.train(resume)
        if not cell.is_trained():
            raise CellError(f"training of {cell.key} ended unfinished ({cell.run_dir})")
        train = f"{'resumed' if resume else 'trained'} in {time.perf_counter() - start:.0f} s"
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    if cell.evaluate is None:
        return CellDone(train, None, train_s, 0.0)
    recorded = results.has(cell.key) if results is not None else bool(cell.evaluated and cell.evaluated())
    if recorded:
        return CellDone(train, "kept", train_s, 0.0)
    row = cell.evaluate()
    eval_s = time.perf_counter() - start
    if results is not None and row is not None:
        results.put(cell.key, {**row, "train_s": train_s, "eval_s": eval_s})
    return CellDone(train, f"evaluated in {eval_s:.0f} s", train_s, eval_s)


def run_cells(
    cells: Sequence[StudyCell],
    results: ResultsFile | None = None,
    report: Callable[[int, StudyCell, CellDone | CellError], None] | None = None,
    keep_going: bool = False,
) -> list[StudyCell]:
    """Every cell in turn (`run_cell`), `report(i, cell, done or error)` after each; returns the cells that
    failed (`keep_going`; otherwise the first `CellError` is raised)."""
    failed = []
    for i, cell in enumerate(cells, 1):
        try:
            done: CellDone | CellError = run_cell(cell, results)
        except CellError as exc:
            if not keep_going:
                raise
            failed.append(cell)
            done = exc
        if report is not None:
            report(i, cell, done)
    return failed


def hivex(args: Sequence[str], log: Path | None = None) -> float:
    """Run `python -m hivex_jax ARGS` from the repository root (output to `log`, or to this terminal);
    its wall seconds. Raises `CellError` (with the log's tail) when it fails."""
    cmd = [sys.executable, "-m", "hivex_jax", *args]
    start = time.perf_counter()
    if log is None:
        rc = subprocess.call(cmd, cwd=ROOT)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as f:
            f.write("$ " + " ".join(cmd) + "\n")
            f.flush()
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    if rc != 0:
        tail = "" if log is None else ":\n" + "\n".join(log.read_text().splitlines()[-15:])
        where = "" if log is None else f" (log {log})"
        raise CellError(f"exit status {rc} from {' '.join(cmd)}{where}{tail}")
    return time.perf_counter() - start


def train_args(
    run_dir: Path,
    config: str | Path,
    settings: Sequence[str],
    resume: bool,
    resume_settings: Sequence[str] = (),
    progress: bool = False,
) -> list[str]:
    """The `hivex train` arguments of a cell: fresh (`--config CONFIG SETTINGS` into `run_dir`) or resumed
    (`--resume RUN_DIR RESUME_SETTINGS`)."""
    base = ["train"] + ([] if progress else ["--no-progress"])
    if resume:
        return [*base, "--resume", str(run_dir), *resume_settings]
    return [*base, "--config", str(config), *settings, f"out_dir={run_dir.parent}", f"name={run_dir.name}"]
