"""The checksum record of a checkpoint step: the size and sha256 of every file orbax wrote, written
after the step is committed and checked before a restore reads anything (`baselines.checkpoint`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

#: the record of a step's files, inside the step's folder
CHECKSUMS_FILE = "hivex_checksums.json"


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


def step_damage(step_dir: Path) -> str | None:
    """Why the step in `step_dir` fails its checksum record (a few words naming the file), or None if it
    passes or has no record."""
    record_path = step_dir / CHECKSUMS_FILE
    if not record_path.exists():
        return None
    try:
        expected = json.loads(record_path.read_text())["files"]
        if not isinstance(expected, dict):
            raise TypeError(type(expected).__name__)
    except (OSError, ValueError, KeyError, TypeError):  # ValueError covers bad JSON and bad UTF-8
        return f"unreadable {CHECKSUMS_FILE}"
    try:
        actual = file_digests(step_dir)
    except OSError as error:  # unreadable, or moved aside by another process meanwhile
        return f"unreadable file: {first_line(error)}"
    for name, want in expected.items():
        if name not in actual:
            return f"missing file {name}"
        if actual[name] != want:
            return f"checksum mismatch in {name}"
    return None
