"""Reading an env page's fidelity table, shared by the `test_<env>_fidelity_claims.py` files.

A row is `| HIVEX item | source | ours | status |`; a status is one of four forms.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the four statuses a row may have (regexes; the third names the contradiction and its switch)
STATUS_FORMS = (
    r"same as the reference\b",
    r"designed here because NOT FOUND \(.+\)",
    r"contradiction (?P<n>\d+), switch `(?P<switch>\w+)`",
    r"deliberate difference\b.*?: \S",
)
#: how each status begins
STATUSES = (
    "same as the reference",
    "designed here because NOT FOUND",
    "contradiction",
    "deliberate difference",
)


def fidelity_rows(page: Path, heading: str = "## Fidelity table") -> dict[str, list[str]]:
    """{row name: [source, ours, status]} of the markdown table under `heading` (`\\|` is a literal bar)."""
    section = page.read_text().split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells[0] != "HIVEX item":
            rows[cells[0]] = cells[1:]
    return rows
