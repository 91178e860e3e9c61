"""The type check: pyright in basic mode over the paths of pyproject.toml's `[tool.pyright] include`
finds no error and no warning. Run alone: `pytest -m slow tests/core/test_type_check.py` (or `pyright`
from the repository root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _checked_paths() -> list[str]:
    """The `include` list of `[tool.pyright]` in pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["pyright"]["include"]


def _diagnostic_line(d: dict) -> str:
    """`path:line: severity: message (rule)`, the path relative to the repository root."""
    path = os.path.relpath(d.get("file", "?"), ROOT)
    line = d.get("range", {}).get("start", {}).get("line", -1) + 1
    rule = f" ({d['rule']})" if d.get("rule") else ""
    return f"{path}:{line}: {d['severity']}: {d['message']}{rule}"


@pytest.mark.slow  # 17 to 50 s on the two shared CPU cores, by their load
def test_pyright_finds_no_error_in_the_checked_paths():
    try:
        import pyright  # noqa: F401
    except ImportError:
        pytest.fail("pyright is not installed: pip install -e '.[dev]'")
    proc = subprocess.run(
        # --pythonpath: resolve imports in this interpreter's environment; --outputjson also skips
        # pyright-python's check for a newer release (the run needs no network: the wheel bundles pyright)
        [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
        timeout=540,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"pyright did not report (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    found = [d for d in report["generalDiagnostics"] if d["severity"] in ("error", "warning")]
    if found:
        pytest.fail(f"pyright found {len(found)} problem(s):\n" + "\n".join(map(_diagnostic_line, found)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    # every module of the configured scope was checked (a scope that shrank would pass silently)
    modules = sum(len(list((ROOT / p).rglob("*.py"))) for p in _checked_paths())
    assert modules > 0
    assert report["summary"]["filesAnalyzed"] >= modules, report["summary"]
