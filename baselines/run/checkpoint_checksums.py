"""The checksum record of a checkpoint step: the size and sha256 of every file orbax wrote, written
after the step is committed and checked before a restore reads anything (`baselines.run.checkpoint`). A step
whose record is missing or unreadable is unverified: damaged, unless restores trust unverified steps
(`trusting_unverified`, the commands' `--trust-unverified`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: the record of a step's files, inside the step's folder
CHECKSUMS_FILE = "hivex_checksums.json"
#: the start of the reason given for a step whose checksum record is missing or unreadable
UNVERIFIED = "unverified"
#: the option of the restoring commands that restores unverified steps
TRUST_OPTION = "--trust-unverified"
#: whether restores in this process trust unverified steps (set by `trusting_unverified` only)
_trust_unverified = False


@contextmanager
def trusting_unverified(trust: bool = True) -> Iterator[None]:
    """Within the block, restores without an explicit `trust_unverified` (`baselines.run.checkpoint.restore`,
    `read_meta`) restore a step without a readable checksum record instead of treating it as damaged."""
    global _trust_unverified
    before, _trust_unverified = _trust_unverified, trust
    try:
        yield
    finally:
        _trust_unverified = before


def trusted(trust_unverified: bool | None) -> bool:
    """`trust_unverified`, or when None the setting of the enclosing `trusting_unverified` (else False)."""
    return _trust_unverified if trust_unverified is None else trust_unverified


def damaged_line(where: Path, damaged: list[tuple[int, str]]) -> str:
    """`checkpoint step 40 in runs/x/checkpoints is damaged (why)` for one or more steps of the checkpoint
    folder `where` (`is unverified` for a step without a readable checksum record)."""
    unverified = [why.startswith(UNVERIFIED) for _, why in damaged]
    state = "unverified" if all(unverified) else "damaged or unverified" if any(unverified) else "damaged"
    if all(unverified):  # "unverified: no hivex_checksums.json" -> "no hivex_checksums.json"
        damaged = [(step, why.removeprefix(f"{UNVERIFIED}: ")) for step, why in damaged]
    if len(damaged) == 1:
        return f"checkpoint step {damaged[0][0]} in {where} is {state} ({damaged[0][1]})"
    listed = "; ".join(f"step {step}: {why}" for step, why in damaged)
    steps = ", ".join(str(step) for step, _ in damaged)
    return f"checkpoint steps {steps} in {where} are {state} ({listed})"


def trust_hint(damaged: list[tuple[int, str]]) -> str:
    """What to do about the unverified steps among `damaged` (empty if none is)."""
    if not any(why.startswith(UNVERIFIED) for _, why in damaged):
        return ""
    return (
        f"; {TRUST_OPTION} restores a checkpoint without its {CHECKSUMS_FILE} (e.g. one written before "
        "hivex_jax recorded checksums) if you trust its files"
    )


def first_line(error: BaseException) -> str:
    """An exception as one short line (for a damaged-checkpoint message)."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def file_digests(step_dir: Path) -> dict[str, dict[str, Any]]:
    """`{path relative to step_dir: {"size", "sha256"}}` of every file of the step but the record."""
    digests = {}
    for path in sorted(p for p in step_dir.rglob("*") if p.is_file()):
        name = path.relative_to(step_dir).as_posix()
        if name == CHECKSUMS_FILE or name.startswith(CHECKSUMS_FILE + "."):
            continue
        sha = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
        digests[name] = {"size": path.stat().st_size, "sha256": sha.hexdigest()}
    return digests


def write_checksums(step_dir: Path) -> None:
    """Record the size and sha256 of every file of committed step `step_dir`, atomically."""
    record = {"algorithm": "sha256", "files": file_digests(step_dir)}
    tmp = step_dir / f"{CHECKSUMS_FILE}.tmp"
    with tmp.open("w") as f:
        json.dump(record, f, indent=0)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, step_dir / CHECKSUMS_FILE)


def record_problem(step_dir: Path) -> str | None:
    """Why the step in `step_dir` cannot be verified (its record is missing or unreadable), or None if
    it has a readable record."""
    record_path = step_dir / CHECKSUMS_FILE
    if not record_path.exists():
        return f"no {CHECKSUMS_FILE}"
    if _read_record(record_path) is None:
        return f"unreadable {CHECKSUMS_FILE}"
    return None


def _read_record(record_path: Path) -> dict[str, Any] | None:
    """The `files` entry of a checksum record, or None if it does not read as one."""
    try:
        expected = json.loads(record_path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):  # ValueError covers bad JSON and bad UTF-8
        return None
    if not isinstance(expected, dict) or not all(isinstance(want, dict) for want in expected.values()):
        return None
    return expected


def step_damage(step_dir: Path) -> str | None:
    """Why the step in `step_dir` fails its checksum record (a few words naming the file: a changed,
    missing or unrecorded one), or None if it passes or has no readable record (`record_problem`)."""
    expected = _read_record(step_dir / CHECKSUMS_FILE)
    if expected is None:
        return None
    try:
        actual = file_digests(step_dir)
    except OSError as error:  # unreadable, or moved aside by another process meanwhile
        return f"unreadable file: {first_line(error)}"
    for name, want in expected.items():
        if name not in actual:
            return f"missing file {name}"
        if actual[name] != want:
            return f"checksum mismatch in {name}"
    unrecorded = sorted(set(actual) - set(expected))  # e.g. a record emptied to `{"files": {}}`
    if unrecorded:
        return f"unrecorded file {unrecorded[0]}"
    return None
