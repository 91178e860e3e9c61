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


def assert_one_status_each(rows: dict[str, list[str]], min_rows: int) -> None:
    """The table was parsed (at least `min_rows` rows) and every status is exactly one allowed form."""
    assert len(rows) >= min_rows  # the table was parsed, not skipped
    for name, (_, _, status) in rows.items():
        forms = [f for f in STATUS_FORMS if re.match(f, status)]
        assert len(forms) == 1, f"{name!r}: status {status!r} is not exactly one allowed form"
        other = [
            s for s in ("same as the reference", "because NOT FOUND", "deliberate difference") if s in status
        ]
        assert len(other) <= 1, f"{name!r} mixes statuses: {status!r}"


def assert_statuses_name_real_parameters(
    rows: dict[str, list[str]], known: set[str], switches: set[str], contradictions: set[int], env=None
) -> None:
    """Every `name` in a status is in `known` (or `env.<attr>` of `env`); a contradiction row names one of
    the env's contradictions and a switch in `switches`; a designed row names its parameter."""
    for name, (_, _, status) in rows.items():
        for ident in re.findall(r"`([^`]+)`", status):
            if env is not None and ident.startswith("env."):
                assert hasattr(env, ident[4:]), f"{name!r}: env has no {ident}"
            else:
                assert ident in known, f"{name!r}: unknown parameter {ident}"
        match = re.match(STATUS_FORMS[2], status)
        if match:
            assert int(match["n"]) in contradictions
            assert match["switch"] in switches
        if status.startswith("designed here because NOT FOUND"):
            assert "`" in status or "no parameter" in status, f"{name!r} names no parameter"
