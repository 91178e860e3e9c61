"""The record of a run of a HIVEX results cell at another budget or trainer setting
(`hivex_jax.eval.results_variants`; `record-variant` of `baselines.studies.hivex_results`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from baselines.studies.config_fingerprint import (
    read_golden,
    run_config,
)
from baselines.studies.hivex_configs import config_changes, shipped_now
from hivex_jax.eval.hivex_cells import (
    Cell,
)
from hivex_jax.eval.hivex_records import hivex_record


def _nan_as_none(value: Any) -> Any:
    """`value` with every NaN float (an event never seen has no first decision) as None: JSON's null."""
    if isinstance(value, dict):
        return {k: _nan_as_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_as_none(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def variant_record(cell: Cell, run_dir: Path, name: str, evidence: dict | None = None) -> dict | None:
    """The record of a run of `cell` with another budget or trainer setting (`results_variants`): the cell
    record of its folder (None without results), `variant` (its `name` and `changes`, the learning keys
    whose value differs from the cell's config now) and, with `evidence` (`scripts/subtask_evidence.py
    --json`), that file's header and its policies for the cell's task."""
    if evidence is not None and evidence.get("env_id", cell.env_id) != cell.env_id:
        raise ValueError(f"the evidence file is of {evidence['env_id']}, the cell of {cell.env_id}")
    golden = read_golden()
    ran = run_config(run_dir, f"configs/{cell.config}", golden)
    record = hivex_record(cell, run_dir, ran)
    if record is None:
        return None
    record["variant"] = {"name": name, "changes": config_changes(shipped_now(cell, False, golden)[1], ran)}
    if evidence is not None:
        policies = evidence.get("tasks", {}).get(str(cell.task))
        if policies is None:
            raise ValueError(
                f"the evidence file has no task {cell.task} (tasks: {sorted(evidence.get('tasks', {}))})"
            )
        header = {k: v for k, v in evidence.items() if k not in ("tasks", "runs")}
        record["evidence"] = _nan_as_none({**header, "policies": policies})
    return record
