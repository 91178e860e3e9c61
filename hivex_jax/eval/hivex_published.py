"""HIVEX's published baseline results (reference §3), as package data.

`hivex_jax/eval/data/hivex_published.json` is written by `scripts/extract_hivex_published.py` from the
reference; see that script for the format. Levels are strings ("0".."8", "1".."10", "none").
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

#: the level key of Ocean Plastic Collection, which has no level
NO_LEVEL = "none"


@functools.cache
def load_published() -> dict[str, Any]:
    """The published-results JSON: `{"envs": {env_id: {"task_names", "levels", "tables"}}, ...}`."""
    text = resources.files("hivex_jax.eval").joinpath("data/hivex_published.json").read_text()
    return json.loads(text)


def published_table(env_id: str, kind: str, statistic: str | None = None) -> dict[str, Any] | None:
    """The first table of `env_id` of `kind` (and `statistic`, for stat tables), or None."""
    for table in load_published()["envs"][env_id]["tables"]:
        if table["kind"] == kind and (statistic is None or table["statistic"] == statistic):
            return table
    return None


def required_table(env_id: str, kind: str, statistic: str | None = None) -> dict[str, Any]:
    """`published_table`, or a ValueError when the published data has no such table (every env has its
    `test_mean` and `best_run` tables)."""
    table = published_table(env_id, kind, statistic)
    if table is None:
        shown = kind if statistic is None else f"{kind} ({statistic})"
        raise ValueError(f"the published HIVEX results have no {shown} table for {env_id}")
    return table


def level_key(level: int | None) -> str:
    """The published table's key of an integer level (None -> "none")."""
    return NO_LEVEL if level is None else str(int(level))
