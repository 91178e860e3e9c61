"""Follow one config through `run_training`: which module reads each config field, in order.

    PJRT_NPROC=1 python scripts/config_walk.py [--stops] [--json] [key=value ...]

Trains a tiny run (Wind Farm Control, one seed, one update, two held-out worlds; `key=value` changes it)
in a temporary folder with every config field read recorded by the module that reads it (reads inside
the config class itself, its checks and the standard library count for the `baselines` module that
asked: `config.replace(...)`, `to_dict()` and a derived size are that module's reads). Consecutive reads
by one module are one stop; a stop in a module the walk had already left is a return. Prints the counts
(stops, returns, the functions that read the config), `--stops` the walk itself, `--json` all of it.
A walk that goes down (the host loop, then the population, then the trainer, which hands each piece its
part) has few returns; one where every piece reads the config itself goes back and forth.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from baselines.config import PPOConfig, load_config
from baselines.config.schema import ALGORITHMS

#: the tiny run walked: seconds of training, an evaluation of two held-out worlds, no GIF
TINY = (
    "num_seeds=1",
    "num_envs=2",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "chunk_updates=1",
    "total_env_steps=16",
    "train_worlds=5000:5004",
    "test_worlds=6000:6002",
    "gif_frames=0",
    "eval_every=1",
    "checkpoint_every=1",
)
#: modules whose reads count for the module that called them (the config class and its checks, the
#: standard library's `dataclasses` / `copy`...)
PASS_THROUGH = ("baselines.config.schema", "baselines.config.checks", "baselines.config.notes")
#: derived sizes (properties of the config class): a read of one counts as one read
DERIVED = ("steps_per_update", "num_chunks", "num_updates", "env_steps", "minibatch_env_steps")


@dataclass(frozen=True)
class Read:
    """One read of a config field: the module and function that asked, and the field."""

    module: str
    function: str
    field: str


@dataclass(frozen=True)
class Stop:
    """Consecutive reads by one module: the module, the fields it read (in order, repeats kept once) and
    whether the walk had been there before (a return)."""

    module: str
    fields: tuple[str, ...]
    is_return: bool


def stops_of(reads: Sequence[Read]) -> list[Stop]:
    """The walk's stops: `reads` grouped into runs of one module, each marked a return when its module
    had an earlier stop."""
    stops: list[Stop] = []
    seen: set[str] = set()
    for read in reads:
        if stops and stops[-1].module == read.module:
            last = stops[-1]
            if read.field not in last.fields:
                stops[-1] = Stop(last.module, (*last.fields, read.field), last.is_return)
            continue
        stops.append(Stop(read.module, (read.field,), read.module in seen))
        seen.add(read.module)
    return stops


def summary_of(reads: Sequence[Read]) -> dict[str, Any]:
    """The walk's figures: reads, stops, returns (and their share of the stops), modules and the
    functions that read a config field."""
    stops = stops_of(reads)
    returns = sum(s.is_return for s in stops)
    readers = sorted({f"{r.module}.{r.function}" for r in reads})
    return {
        "reads": len(reads),
        "stops": len(stops),
        "returns": returns,
        "return_share": returns / len(stops) if stops else 0.0,
        "modules": len({r.module for r in reads}),
        "readers": len(readers),
        "reader_functions": readers,
    }


def _reader(frame: Any) -> tuple[str, str]:
    """`(module, function)` of the first `baselines` frame from `frame` outwards that is not a
    pass-through module; `("?", "?")` when none (a read from outside the trainer)."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("baselines.") and module not in PASS_THROUGH:
            return module, frame.f_code.co_qualname
        frame = frame.f_back
    return "?", "?"


@contextmanager
def recording(reads: list[Read]) -> Iterator[None]:
    """While inside: every read of a config field (any config object) appended to `reads`."""
    names = {f.name for cls in ALGORITHMS.values() for f in fields(cls)} | set(DERIVED)
    inside_derived: list[bool] = [False]
    original = PPOConfig.__getattribute__

    def getattribute(self: Any, name: str) -> Any:
        if name not in names or inside_derived[0]:
            return original(self, name)
        module, function = _reader(sys._getframe(1))
        reads.append(Read(module, function, name))
        if name not in DERIVED:
            return original(self, name)
        inside_derived[0] = True  # a derived size's own reads are part of it
        try:
            return original(self, name)
        finally:
            inside_derived[0] = False

    PPOConfig.__getattribute__ = getattribute  # type: ignore[method-assign]
    try:
        yield
    finally:
        PPOConfig.__getattribute__ = original  # type: ignore[method-assign]


def walk(overrides: Sequence[str] = ()) -> list[Read]:
    """The reads of one tiny `run_training` (the default config with `TINY`, then `overrides`, as
    `key=value`) from its call to its return."""
    from baselines.run.runner import run_training

    config = load_config(None, [*TINY, *overrides])
    reads: list[Read] = []
    with tempfile.TemporaryDirectory() as folder, recording(reads):
        run_training(config, f"{folder}/walk", progress=False, log=lambda *a, **k: None)
    return reads


def main(argv: Sequence[str] | None = None) -> None:
    """Print the walk's figures (and `--stops`: each stop; `--json`: everything as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", action="store_true", help="print every stop of the walk")
    parser.add_argument("--json", action="store_true", help="the figures and the stops as JSON")
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    args = parser.parse_args(argv)
    reads = walk(args.overrides)
    summary = summary_of(reads)
    stops = stops_of(reads)
    if args.json:
        summary["stops_in_order"] = [
            {"module": s.module, "fields": list(s.fields), "return": s.is_return} for s in stops
        ]
        print(json.dumps(summary, indent=1))
        return
    if args.stops:
        for i, stop in enumerate(stops):
            mark = "<-" if stop.is_return else "  "
            print(f"{i:3d} {mark} {stop.module}: {', '.join(stop.fields)}")
    print(
        f"{summary['reads']} reads, {summary['stops']} stops, {summary['returns']} returns to a module "
        f"already left ({summary['return_share']:.0%}), {summary['modules']} modules, "
        f"{summary['readers']} functions read the config"
    )


if __name__ == "__main__":
    main()
