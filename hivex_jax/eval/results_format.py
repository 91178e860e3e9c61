"""Numbers and cell lists as the HIVEX results page (docs/hivex_results.md) writes them: about 4
significant figures, published values as the reference prints them, "mean ± CI", integer ranges and
cells grouped by env and task.
"""

from __future__ import annotations

import math
from typing import Any

from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell
from hivex_jax.eval.stats import ONE_SEED


def fmt_value(value: float | None, digits: int | None = None) -> str:
    """A number for a table: about 4 significant figures ("—" for None/NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if digits is None:
        digits = 1 if abs(value) >= 10 or value == 0 else 3
    return f"{value:.{digits}f}"


def fmt_published(value: float) -> str:
    """A published value as the reference prints it (up to trailing zeros)."""
    return repr(float(value))


def fmt_mean_ci(summary: dict[str, Any]) -> str:
    """A trained policy's held-out "mean ± CI" over seeds, both to the mean's decimals; for one seed the
    mean and "(one seed: no interval)"."""
    digits = 1 if abs(summary["mean"]) >= 10 else 3
    if summary.get("num_seeds", 1) > 1:
        return f"{fmt_value(summary['mean'], digits)} ± {fmt_value(summary['ci95'], digits)}"
    return f"{fmt_value(summary['mean'], digits)} ({ONE_SEED})"


def ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] -> "0–2, 5"."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}–{v}")
            start = None
    return ", ".join(parts)


def cells_text(cells: list[Cell], with_env: bool = True) -> str:
    """Cells grouped by env and task: "WindFarmControl-v0 task 0 patterns 3–8; ..."."""
    groups: dict[tuple[str, int], list[int | None]] = {}
    for cell in cells:
        groups.setdefault((cell.env_id, cell.task), []).append(cell.level)
    parts = []
    for (env_id, task), levels in groups.items():
        text = (f"{env_id} " if with_env else "") + f"task {task}"
        if levels != [None]:
            word = HIVEX_ENVS[env_id].level_name + ("s" if len(levels) > 1 else "")
            text += f" {word} {ranges(sorted(lv for lv in levels if lv is not None))}"
        parts.append(text)
    return "; ".join(parts)
