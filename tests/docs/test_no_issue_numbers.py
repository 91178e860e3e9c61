"""No page, module, script, config or test cites an internal issue number ("issue N's fused sweeps",
"(issue N item 2)"): readers outside the project cannot look one up, so the text says what was asked and
why instead. Checked: README.md, every Markdown page under docs/ (the dated lab notes of docs/experiments/
included), the modules of hivex_jax/ and baselines/, scripts/, configs/*.yaml and tests/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: "issue" or "issues", a space and a number, with or without "#" (not "the issue's", "issue-free" or a
#: folder name like runs/issueNN)
ISSUE_NUMBER = re.compile(r"\bissues? #?\d", re.IGNORECASE)
#: paths (relative to the repository root, a folder or a file) not checked yet, while they are being
#: rewritten; empty when none is
NOT_YET_CHECKED: tuple[str, ...] = ()


def checked_files() -> list[Path]:
    """Every file the rule covers, less NOT_YET_CHECKED."""
    files = [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "hivex_jax").rglob("*.py"),
        *(ROOT / "baselines").rglob("*.py"),
        *(path for path in (ROOT / "scripts").rglob("*") if path.suffix in (".py", ".sh")),
        *(ROOT / "configs").glob("*.yaml"),
        *(ROOT / "tests").rglob("*.py"),
    ]
    return sorted(path for path in files if not skipped(path.relative_to(ROOT).as_posix()))


def skipped(relative: str, entries: tuple[str, ...] = NOT_YET_CHECKED) -> bool:
    """Whether a repository-relative path is (under) one of `entries` (NOT_YET_CHECKED)."""
    return any(relative == entry or relative.startswith(entry + "/") for entry in entries)


def issue_numbers(text: str) -> list[str]:
    """The issue citations in `text`, in order."""
    return ISSUE_NUMBER.findall(text)


def test_the_pattern_finds_issue_numbers():
    # built from pieces, so this file itself does not cite one
    issue, issues = "issue", "Issues"
    text = f"as {issue} 33 asks; ({issue} 19 item 2); {issues} 16 and 32; see {issue} #7\n"
    assert issue_numbers(text) == [f"{issue} 3", f"{issue} 1", f"{issues} 1", f"{issue} #7"]
    assert issue_numbers(f"the {issue}'s 1 %, --out-dir runs/{issue}32, tissue 3, an {issue}-free run") == []


def test_not_yet_checked_are_paths_of_this_repository():
    gone = [entry for entry in NOT_YET_CHECKED if not (ROOT / entry).exists()]
    assert not gone, f"NOT_YET_CHECKED names paths that are gone: {gone}"
    entries = ("baselines", "docs/training.md")
    assert skipped("baselines/core/ppo.py", entries) and skipped("docs/training.md", entries)
    assert not skipped("docs/training.mdx", entries) and not skipped("baselines_extra/x.py", entries)


def test_nothing_cites_an_issue_number():
    files = checked_files()
    assert len(files) > 200 and ROOT / "docs" / "benchmarks.md" in files  # the globs found the tree
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if issue_numbers(line)
    ]
    assert not found, "internal issue numbers (say what was asked and why instead):\n" + "\n".join(found)
