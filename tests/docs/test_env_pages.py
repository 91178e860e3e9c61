"""Reference pages stay references: every docs/envs/*.md and docs/training.md is at most
MAX_ENV_PAGE_LINES lines (what was tried, dated, lives in docs/experiments/; results, sweeps and tests on
their own pages), and every relative Markdown link of the README, docs/, docs/envs/ and docs/experiments/
points at a file that exists and, with a `#anchor` into a Markdown page, at one of that page's headings
(GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV_PAGES = sorted((ROOT / "docs" / "envs").glob("*.md"))
LINKED_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *ENV_PAGES]
LINKED_PAGES += sorted((ROOT / "docs" / "experiments").glob("*.md"))
MAX_ENV_PAGE_LINES = 400
FENCE = re.compile(r"^\s*(```+|~~~+)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line, text) of the lines outside fenced code blocks."""
    out, fence = [], None
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        m = FENCE.match(line)
        if m and (fence is None or m[1].startswith(fence)):
            fence = m[1] if fence is None else None
        elif fence is None:
            out.append((n, line))
    return out


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page: lower case, punctuation dropped (letters, digits,
    `_`, `-` and spaces kept), spaces to `-`; a repeated anchor gets `-1`, `-2`, ..."""
    seen: dict[str, int] = {}
    for _, line in prose_lines(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m[1].lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_the_slugs_are_githubs():
    """Hand-computed anchors of headings this repository links to."""
    assert "memorisation-probe-train-pool-size-vs-the-trainheld-out-gap" in anchors(
        ROOT / "docs" / "generalisation.md"
    )
    assert "wakes-optional-not-in-hivex" in anchors(ROOT / "docs" / "envs" / "wind_farm_control.md")


@pytest.mark.parametrize("path", [*ENV_PAGES, ROOT / "docs" / "training.md"], ids=rel)
def test_env_page_is_a_reference_of_at_most_400_lines(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_ENV_PAGE_LINES, (
        f"{rel(path)} has {lines} lines (at most {MAX_ENV_PAGE_LINES}): move what was tried (dated) "
        "to docs/experiments/ and link it from the page"
    )


@pytest.mark.parametrize("path", LINKED_PAGES, ids=rel)
def test_relative_links_resolve(path: Path):
    broken = []
    for n, line in prose_lines(path):
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            target = m[1]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{rel(path)}:{n}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{rel(path)}:{n}: {target} (no heading with that anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_pages_are_found():
    """The parametrized tests above are not silently empty (a moved folder)."""
    assert len(ENV_PAGES) == 5 and len(LINKED_PAGES) >= 25
