"""HIVEX's published result tables (reference §3) as data: `extract(markdown)` parses a Markdown
transcription of them into what `hivex_jax/eval/data/hivex_published.json` holds
(`scripts/extract_hivex_published.py REFERENCE.md` writes it).

REFERENCE.md is a Markdown transcription of HIVEX's published result tables (arXiv 2501.04180 and the
`hivex-research/hivex-results` files; its §3); it is not part of the repository, so those numbers are
copied once into package data. Output:
`{"source": ..., "envs": {env_id: {"task_names": {task: name}, "levels": [...], "tables": [table, ...]}}}`;
a table is `{title, kind, statistic, levels, rows: {task: {level: value}}}`, kind one of test_mean,
train_mean, train_final, best_run, stat_test_mean (cumulative-reward tables have the statistic
"Environment/Cumulative Reward"), or per_run (the one cell HIVEX published per-run values for:
rows `{run id: {column: value}}`). Levels are strings ("0".."8" patterns, "1".."10" terrain levels,
"none" for Ocean Plastic Collection, which has no level).
"""

from __future__ import annotations

import re

from hivex_jax.eval.hivex_cells import HIVEX_ENVS
from hivex_jax.eval.hivex_published import NO_LEVEL

#: reference §3 subsection title -> registered env id
ENV_IDS = {env.name: env_id for env_id, env in HIVEX_ENVS.items()}
CUMULATIVE_REWARD = "Environment/Cumulative Reward"

#: title prefix -> table kind (checked in order)
KINDS = (
    ("Test mean cumulative episode reward", "test_mean"),
    ("Training: mean cumulative episode reward", "train_mean"),
    ("Training: final cumulative episode reward", "train_final"),
    ("Best single test run", "best_run"),
    ("Test mean of stat", "stat_test_mean"),
    ("Per-run values", "per_run"),
)


def _cells(line: str) -> list[str]:
    """The cells of a markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _number(text: str) -> float:
    """A table value as a float (raises on anything else, so a format change is noticed)."""
    return float(text.replace(",", ""))


def _kind(title: str) -> str:
    """The table kind of a bold table title."""
    for prefix, kind in KINDS:
        if title.startswith(prefix):
            return kind
    raise ValueError(f"unknown §3 table title: {title!r}")


def _parse_table(
    lines: list[str], kind: str
) -> tuple[list[str], dict[str, dict[str, float]], dict[str, str]]:
    """`(levels, rows, task_names)` of a markdown table (header, separator, rows)."""
    header = _cells(lines[0])
    columns = header[1:]
    if kind != "per_run" and columns == ["value"]:  # Ocean Plastic Collection: no level column
        columns = [NO_LEVEL]
    rows: dict[str, dict[str, float]] = {}
    names: dict[str, str] = {}
    for line in lines[2:]:
        first, *values = _cells(line)
        if len(values) != len(columns):
            raise ValueError(f"row {line!r} has {len(values)} values for {len(columns)} columns")
        if kind == "per_run":
            key = first
        else:
            match = re.match(r"(\d+)\s+(.*)", first)
            if not match:
                raise ValueError(f"row label {first!r} does not start with a task id")
            key, names[match.group(1)] = match.group(1), match.group(2)
        rows[key] = {c: _number(v) for c, v in zip(columns, values, strict=True)}
    return columns, rows, names


def extract(text: str) -> dict:
    """Every §3 table of the reference markdown `text`, grouped by env."""
    section = text.split("\n## 3.", 1)[1].split("\n## 4.", 1)[0]
    lines = section.splitlines()
    envs: dict[str, dict] = {}
    env = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        heading = re.match(r"### 3\.\d+ (.+)", line)
        title = re.fullmatch(r"\*\*(.+)\*\*", line)
        constant = re.fullmatch(r"Stat `(.+)`: (-?[\d.]+) for every task and level\.", line)
        if heading:
            env = envs.setdefault(
                ENV_IDS[heading.group(1).strip()], {"task_names": {}, "levels": [], "tables": []}
            )
        elif title and env is not None:
            kind = _kind(title.group(1))
            j = i + 1
            while not lines[j].strip().startswith("|"):
                j += 1
            k = j
            while k < len(lines) and lines[k].strip().startswith("|"):
                k += 1
            levels, rows, names = _parse_table([s.strip() for s in lines[j:k]], kind)
            stat = re.search(r"stat `(.+?)`", title.group(1))
            table = {
                "title": title.group(1),
                "kind": kind,
                "statistic": stat.group(1) if stat else (None if kind == "per_run" else CUMULATIVE_REWARD),
                "levels": levels,
                "rows": rows,
            }
            if kind == "per_run":
                cell = re.search(r"pattern (\d+), task (\d+)", title.group(1))
                if not cell:
                    raise ValueError(f"per-run table title {title.group(1)!r} names no pattern and task")
                table["cell"] = {"task": cell.group(2), "level": cell.group(1)}
            else:
                env["task_names"].update(names)
            if kind == "test_mean":
                env["levels"] = levels
            env["tables"].append(table)
            i = k
            continue
        elif constant and env is not None:
            # one line instead of a table ("0.0 for every task and level"): expanded to the full grid
            value = _number(constant.group(2))
            env["tables"].append(
                {
                    "title": f"Test mean of stat `{constant.group(1)}`",
                    "kind": "stat_test_mean",
                    "statistic": constant.group(1),
                    "levels": list(env["levels"]),
                    "rows": {t: dict.fromkeys(env["levels"], value) for t in env["task_names"]},
                    "note": "stated in one line: " + line,
                }
            )
        i += 1
    return {
        "source": "reference hivex.md §3 (Reported baseline results: PPO, parameter sharing)",
        "generated_by": "scripts/extract_hivex_published.py",
        "envs": envs,
    }
