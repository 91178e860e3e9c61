"""Committed result records: one small JSON file per study cell under `docs/data/results/`, so the pages
that show our measurements (docs/hivex_results.md, the suite table of docs/results.md) can be regenerated
on any checkout, without the machine-local run folders (`runs/`, git-ignored) they were measured in.

A record holds everything its page renders from the cell and nothing else: the study writes it as soon as
the cell is trained and evaluated (`scripts/hivex_results.py run`, `scripts/suite_results.py run`), `record`
imports run folders made before, and `page` / `table` render from the records only. What a record of each
study holds: `hivex_jax.eval.hivex_records.hivex_record` and `hivex_jax.eval.suite_table.cell_record`; the
layout: docs/data/results/README.md.

Records are JSON with sorted keys, one key per line and lists of numbers on one line, floats rounded to
`SIGNIFICANT` significant digits (a diff shows which numbers changed). Each names its measurement dates
explicitly (`measured_on`, from the run folder's files when recorded; a git checkout resets file times, so
they are never read from the records' own files); refreshing a record from a run folder whose numbers did
not change keeps the dates it has.

`page` and `table --write` refuse to write a page that would show fewer measured cells than the page on
disk (`vanished`), unless told `--allow-fewer`.

A record's `config` names the config its run trained with (its learning keys, the env's version and a
fingerprint of both; `baselines.studies.config_fingerprint`); the pages mark a cell whose shipped config
changed since it was recorded, or whose record does not say (`ConfigCheck`, `config_mark`).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

#: the folder of every study's records (relative to the repository root, where the scripts run)
RECORDS_ROOT = Path("docs/data/results")
#: the record format; a reader refuses another
FORMAT_VERSION = 1
#: significant digits a record keeps of a float (ours are float32 measurements or means of them)
SIGNIFICANT = 12


def rounded(value: Any, digits: int = SIGNIFICANT) -> Any:
    """`value` with every float rounded to `digits` significant digits (NaN and infinities kept)."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def dumps(value: Any, indent: int = 0) -> str:
    """JSON with sorted keys, one key (or one list item holding a dict or list) per line and a list of
    plain values on one line."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{dumps(str(k))}: {dumps(value[k], indent + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return "[\n" + ",\n".join(f"{inner}{dumps(v, indent + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def file_date(path: Path) -> str:
    """The local date a run folder's file was last written (the measurement date of what it holds)."""
    return datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file's content, or None if it does not exist."""
    return json.loads(path.read_text()) if path.is_file() else None


def read_record(path: Path) -> dict[str, Any]:
    """A record file's content (ValueError for another format version)."""
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: record format_version {record.get('format_version')!r}; this code reads "
            f"{FORMAT_VERSION}"
        )
    return record


def portable_path(path: str | Path) -> str:
    """`path` as a record keeps it: relative to the working directory (the repository root, where the
    scripts run) when it is under it (`runs/suite5/ippo_wfc`), else the folder's name; never the absolute
    path of one machine."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(os.getcwd()).as_posix()
    except ValueError:
        return absolute.name


def portable_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """A run's `summary.json` as a record keeps it: as is but for its `run_dir` (`portable_path`)."""
    if "run_dir" not in summary:
        return summary
    return {**summary, "run_dir": portable_path(summary["run_dir"])}


def write_record(path: Path, record: dict[str, Any]) -> bool:
    """Write `record` to `path` (atomically), keeping the existing record's `measured_on` date of each part
    whose content did not change; returns whether the file changed."""
    record = rounded(record)
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for part in record.get("measured_on", {}):
        before = old.get("measured_on", {}).get(part)
        if before and old.get(part) == record.get(part):
            record["measured_on"][part] = before
    text = dumps(record) + "\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def vanished(
    what: str,
    page: Path,
    before: Iterable[Hashable],
    after: Iterable[Hashable],
    describe: Callable[[list[Any]], str] = lambda gone: "; ".join(map(str, gone)),
) -> str | None:
    """One line refusing to write `page` when a measured cell it shows now (`before`, in its order) is not
    among those it would show (`after`), naming them (`describe`); None when none would vanish."""
    before, after = list(dict.fromkeys(before)), set(after)
    gone = [cell for cell in before if cell not in after]
    if not gone:
        return None
    return (
        f"refusing to write {page}: the {what} would show {len(after)} measured cell(s) instead of its "
        f"{len(before)}, and these would vanish: {describe(gone)} (their records are missing from the "
        "records folder; --allow-fewer writes it anyway)"
    )


#: a record's config against the config its cell would train with now: the same, changed, or not recorded
CONFIG_CURRENT, CONFIG_CHANGED, CONFIG_NOT_RECORDED = "current", "changed", "not recorded"
#: the mark a page puts beside a cell whose record is not of the current config
CONFIG_MARKS = {CONFIG_CHANGED: "†", CONFIG_NOT_RECORDED: "‡"}


@dataclasses.dataclass(frozen=True)
class ConfigCheck:
    """How a cell's record stands against the config the cell would train with now (the studies compute it,
    where configs can be loaded): `state` one of `CONFIG_CURRENT` / `CONFIG_CHANGED` / `CONFIG_NOT_RECORDED`,
    `changes` what differs ("lr 0.001 -> 0.0003"), `source` where the record's config came from (or why
    there is none)."""

    state: str
    changes: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if self.state not in (CONFIG_CURRENT, CONFIG_CHANGED, CONFIG_NOT_RECORDED):
            raise ValueError(f"config state {self.state!r}")


def config_mark(check: ConfigCheck | None) -> str:
    """ " †" (changed since recorded), " ‡" (not recorded) or "" (current, or not checked) to put after a
    cell's entry."""
    mark = CONFIG_MARKS.get(check.state) if check is not None else None
    return f" {mark}" if mark else ""


def config_legend(checks: Iterable[ConfigCheck]) -> str:
    """One line saying what the marks of `checks` mean and how many cells carry each ("" when every cell's
    config is current)."""
    checks = list(checks)
    counts = {state: sum(1 for c in checks if c.state == state) for state in CONFIG_MARKS}
    parts = []
    if counts[CONFIG_CHANGED]:
        parts.append(
            f"{CONFIG_MARKS[CONFIG_CHANGED]} = its shipped config (with the cell's settings) or its env "
            f"changed since the cell was recorded ({counts[CONFIG_CHANGED]} of {len(checks)} cells): the "
            "numbers are of the config it had then"
        )
    if counts[CONFIG_NOT_RECORDED]:
        parts.append(
            f"{CONFIG_MARKS[CONFIG_NOT_RECORDED]} = the record does not say which config made it "
            f"({counts[CONFIG_NOT_RECORDED]} of {len(checks)} cells)"
        )
    return "; ".join(parts) + "." if parts else ""
