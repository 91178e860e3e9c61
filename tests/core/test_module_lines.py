"""Every module of the library (hivex_jax/) is at most `MAX_LINES` lines, so each can be read in one
sitting: a module that grows past it is split by role (as worlds/files.py was into file_checks, field_fit
and files), not left to grow."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the most lines a module of hivex_jax/ may have
MAX_LINES = 450


def line_count(path: Path) -> int:
    """Lines of a text file, as `wc -l` counts them for a file ending in a newline."""
    return len(path.read_text(encoding="utf-8").splitlines())


def long_modules(root: Path, limit: int = MAX_LINES) -> list[str]:
    """`path: N lines` of every .py file under `root` longer than `limit` lines, longest first."""
    counts = {path: line_count(path) for path in root.rglob("*.py")}
    return [
        f"{path.relative_to(root)}: {n} lines"
        for path, n in sorted(counts.items(), key=lambda item: -item[1])
        if n > limit
    ]


def test_the_count_finds_long_modules(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 451)
    (tmp_path / "pkg" / "exact.py").write_text("x = 1\n" * 450)
    (tmp_path / "short.py").write_text("x = 1\n")
    assert long_modules(tmp_path) == [f"{Path('pkg', 'long.py')}: 451 lines"]
    assert line_count(tmp_path / "pkg" / "exact.py") == 450


def test_every_library_module_is_at_most_max_lines():
    assert len(list((ROOT / "hivex_jax").rglob("*.py"))) > 50  # the glob found the library
    found = long_modules(ROOT / "hivex_jax")
    assert not found, f"modules over {MAX_LINES} lines (split them by role):\n" + "\n".join(found)
