"""The reference results as two CSV tables, for researchers who compare against them in code rather than read
docs/hivex_results.md: one row per cell we measured (ours and HIVEX's published numbers side by side) and one
row per (cell, protocol, policy, training seed), the per-seed scores that rliable-style aggregates need.

Both are written from the committed records (`hivex_records.load_records`) by `python scripts/hivex_results.py
page`, beside the records folder: `hivex_cells.csv` and `hivex_seeds.csv`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from hivex_jax.eval import score
from hivex_jax.eval.hivex_cells import Cell
from hivex_jax.eval.hivex_published import level_key, load_published, published_table
from hivex_jax.eval.result_records import ConfigCheck

CELLS_FILE = "hivex_cells.csv"
SEEDS_FILE = "hivex_seeds.csv"

CELL_COLUMNS = (
    "env_id",
    "algo",
    "task",
    "task_name",
    "level",
    "num_seeds",
    "env_steps_per_seed",
    "hivex_test_mean",
    "hivex_best_run",
    "ours_hivex_protocol_stochastic",
    "scripted_hivex_protocol",
    "random_hivex_protocol",
    "heldout_greedy_mean",
    "heldout_greedy_ci95",
    "heldout_greedy_seed_min",
    "heldout_stochastic_mean",
    "heldout_stochastic_ci95",
    "heldout_stochastic_seed_min",
    "heldout_scripted",
    "heldout_random",
    "heldout_greedy_normalised",
    "heldout_stochastic_normalised",
    "heldout_worlds",
    "measured_on",
    "jax_version",
    "backend",
    "config",
    "config_changes",
)
SEED_COLUMNS = ("env_id", "algo", "task", "level", "protocol", "policy", "seed", "return")


def _published(cell: Cell, kind: str) -> float | None:
    """HIVEX's published value of an IPPO cell in table `kind` ("test_mean", "best_run"); None otherwise."""
    table = published_table(cell.env_id, kind)
    if cell.algo != "ippo" or table is None:
        return None
    return table["rows"].get(str(cell.task), {}).get(level_key(cell.level))


def policy_value(
    record: dict[str, Any] | None, protocol: str, policy: str, key: str = "mean"
) -> float | None:
    """A policy's number in a cell record: its HIVEX-protocol cell value (`protocol` "hivex") or its held-out
    summary value `key` ("mean", "ci95", "seed_min"; `protocol` "held_out"); None where not measured."""
    block = ((record or {}).get(protocol) or {}).get("policies", {}).get(policy)
    if block is None:
        return None
    return block["cell"] if protocol == "hivex" else block["summary"].get(key)


def heldout_normalised(record: dict[str, Any] | None, policy: str) -> float | None:
    """A trained policy's held-out normalised score in a cell record (`score.normalised_score` of its mean
    return by the scripted and random means on the same worlds); None where not measured or where scripted
    does not beat random."""
    values = [policy_value(record, "held_out", p) for p in (policy, "scripted", "random")]
    return None if None in values else score.as_json(score.normalised_score(*values))


def _worlds(held: dict[str, Any]) -> str:
    """The held-out worlds as "first:stop" when consecutive (6000:6032), else space-separated."""
    worlds = [int(w) for w in held.get("worlds", [])]
    if worlds and worlds == list(range(worlds[0], worlds[0] + len(worlds))):
        return f"{worlds[0]}:{worlds[-1] + 1}"
    return " ".join(map(str, worlds))


def cell_rows(
    records: dict[Cell, dict[str, Any]], checks: dict[Cell, ConfigCheck] | None = None
) -> list[dict[str, Any]]:
    """One row per record (`CELL_COLUMNS`) in env, algo, task, level order; None where a value is absent;
    `config` how the record stands against the cell's config now ("current", "changed", "not recorded"; from
    `checks`) and `config_changes` what changed ("; "-separated)."""
    envs = load_published()["envs"]
    rows = []
    for cell, record in sorted(records.items(), key=lambda kv: _order(kv[0])):
        held = record.get("held_out") or {}
        summary = record.get("summary") or {}
        check = (checks or {}).get(cell)
        rows.append(
            {
                "env_id": cell.env_id,
                "algo": cell.algo,
                "task": cell.task,
                "task_name": envs[cell.env_id]["task_names"].get(str(cell.task)),
                "level": cell.level,
                "num_seeds": held.get("num_seeds"),
                "env_steps_per_seed": held.get("env_steps_per_seed"),
                "hivex_test_mean": _published(cell, "test_mean"),
                "hivex_best_run": _published(cell, "best_run"),
                "ours_hivex_protocol_stochastic": policy_value(record, "hivex", "stochastic"),
                "scripted_hivex_protocol": policy_value(record, "hivex", "scripted"),
                "random_hivex_protocol": policy_value(record, "hivex", "random"),
                "heldout_greedy_mean": policy_value(record, "held_out", "greedy", "mean"),
                "heldout_greedy_ci95": policy_value(record, "held_out", "greedy", "ci95"),
                "heldout_greedy_seed_min": policy_value(record, "held_out", "greedy", "seed_min"),
                "heldout_stochastic_mean": policy_value(record, "held_out", "stochastic", "mean"),
                "heldout_stochastic_ci95": policy_value(record, "held_out", "stochastic", "ci95"),
                "heldout_stochastic_seed_min": policy_value(record, "held_out", "stochastic", "seed_min"),
                "heldout_scripted": policy_value(record, "held_out", "scripted", "mean"),
                "heldout_random": policy_value(record, "held_out", "random", "mean"),
                "heldout_greedy_normalised": heldout_normalised(record, "greedy"),
                "heldout_stochastic_normalised": heldout_normalised(record, "stochastic"),
                "heldout_worlds": _worlds(held),
                "measured_on": " ".join(sorted(set((record.get("measured_on") or {}).values()))),
                "jax_version": summary.get("jax_version"),
                "backend": summary.get("backend"),
                "config": check.state if check else None,
                "config_changes": "; ".join(check.changes) if check and check.changes else None,
            }
        )
    return rows


def seed_rows(records: dict[Cell, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (cell, protocol, trained policy, training seed) (`SEED_COLUMNS`): the held-out mean over
    the worlds of seed i, and the HIVEX protocol's run i (run i = training seed i)."""
    rows = []
    for cell, record in sorted(records.items(), key=lambda kv: _order(kv[0])):
        base = {"env_id": cell.env_id, "algo": cell.algo, "task": cell.task, "level": cell.level}
        for policy in ("greedy", "stochastic"):
            block = (record.get("held_out") or {}).get("policies", {}).get(policy) or {}
            for seed, value in enumerate(block.get("seed_means", [])):
                rows.append({**base, "protocol": "held_out", "policy": policy, "seed": seed, "return": value})
        block = (record.get("hivex") or {}).get("policies", {}).get("stochastic") or {}
        for seed, run in enumerate(block.get("runs", [])):
            rows.append(
                {**base, "protocol": "hivex", "policy": "stochastic", "seed": seed, "return": run["mean"]}
            )
    return rows


def _order(cell: Cell) -> tuple:
    """Sort key: the published envs' order, then IPPO before MAPPO, task, level."""
    envs = list(load_published()["envs"])
    return (
        envs.index(cell.env_id),
        cell.algo != "ippo",
        cell.algo,
        cell.task,
        -1 if cell.level is None else cell.level,
    )


def _write(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    """Write `rows` under the header `columns`; None as an empty field, floats as repr (no rounding)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row[k] is None else row[k] for k in columns})


def write_csvs(
    records: dict[Cell, dict[str, Any]], out_dir: str | Path, checks: dict[Cell, ConfigCheck] | None = None
) -> tuple[Path, Path]:
    """Write `hivex_cells.csv` (with `checks`, each record's config against its cell's now) and
    `hivex_seeds.csv` of `records` into `out_dir`; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cells, seeds = out_dir / CELLS_FILE, out_dir / SEEDS_FILE
    _write(cells, CELL_COLUMNS, cell_rows(records, checks))
    _write(seeds, SEED_COLUMNS, seed_rows(records))
    return cells, seeds
