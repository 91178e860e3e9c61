"""The committed record of each HIVEX cell we measured (`RECORDS_DIR/<env id>/task<t>[_level<l>].json`):
`hivex_record` keeps what docs/hivex_results.md renders of a cell's run folder (`OUT_DIR/<env id>/
task<t>[_level<l>]/`, machine-local: `eval.json` of `hivex train`, `eval_hivex.json` of the HIVEX
protocol, `summary.json`, as `scripts/hivex_results.py run` writes them), `load_records` reads the
records back and `record_result` gives a record the shape `load_results` reads from run folders, the
shape the page renders (`hivex_jax.eval.results_page`). The file format: `hivex_jax.eval.result_records`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell, cell_of_dirname
from hivex_jax.eval.result_records import (
    FORMAT_VERSION,
    RECORDS_ROOT,
    file_date,
    portable_path,
    portable_summary,
    read_json,
    read_record,
    write_record,
)

#: the committed records of our cells
RECORDS_DIR = RECORDS_ROOT / "hivex"


def _run_dirs(out_dir: str | Path) -> list[tuple[Cell, Path]]:
    """Every cell folder under `out_dir` (`<env id>/task<t>[_level<l>]/`)."""
    found = []
    for env_id in HIVEX_ENVS:
        env_dir = Path(out_dir) / env_id
        if env_dir.is_dir():
            for run_dir in sorted(env_dir.iterdir()):
                cell = cell_of_dirname(env_id, run_dir.name)
                if cell is not None and run_dir.is_dir():
                    found.append((cell, run_dir))
    return found


def load_results(out_dir: str | Path) -> dict[Cell, dict[str, Any]]:
    """`{cell: {"held_out": eval.json or None, "hivex": eval_hivex.json or None}}` of every cell folder
    under `out_dir` holding at least one of them (what `render_page` reads)."""
    found: dict[Cell, dict[str, Any]] = {}
    for cell, run_dir in _run_dirs(out_dir):
        held, hivex = read_json(run_dir / "eval.json"), read_json(run_dir / "eval_hivex.json")
        if held or hivex:
            found[cell] = {"held_out": held, "hivex": hivex}
    return found


def _stat_keys(env_id: str) -> list[str]:
    """Our `info["stats"]` keys the env's statistics tables average (held-out, per-agent episode sums)."""
    return sorted({k for k in HIVEX_ENVS[env_id].stat_map.values() if k and k != "episode_length"})


def as_list(value: Any) -> list[float]:
    """A recorded statistic as a list (a record holds one number, or one per seed)."""
    return list(value) if isinstance(value, list) else [value]


def _mean(values: Any) -> float:
    values = as_list(values)
    return sum(values) / len(values)


def _held_out_part(held: dict[str, Any], env_id: str) -> dict[str, Any]:
    """What the page renders of `eval.json`: its header as is; per policy its summary and per-seed means
    (of the per-world returns); for the stochastic policy the per-world means over seeds of each statistic
    the statistics tables average (`stats_per_world`, in `per_world`'s order, None where a world lacks it)."""
    part = {k: v for k, v in held.items() if k != "policies"}
    part["policies"] = {}
    for name, block in held["policies"].items():
        entry: dict[str, Any] = {"summary": block.get("summary", {})}
        per_seed = [w["return_per_seed"] for w in block.get("per_world", []) if "return_per_seed" in w]
        if per_seed:
            entry["seed_means"] = [sum(seed) / len(seed) for seed in zip(*per_seed, strict=True)]
        if name == "stochastic":
            stats = [w.get("stats", {}) for w in block.get("per_world", [])]
            entry["stats_per_world"] = {
                key: [_mean(s[key]) if key in s else None for s in stats]
                for key in _stat_keys(env_id)
                if any(key in s for s in stats)
            }
        part["policies"][name] = entry
    return part


def _hivex_part(hivex: dict[str, Any]) -> dict[str, Any]:
    """`eval_hivex.json` as is but for each run's per-summary-point lists (the page shows run means)."""

    def points_dropped(run: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in run.items() if not isinstance(v, list)}

    policies = {
        name: {**block, "runs": [points_dropped(run) for run in block.get("runs", [])]}
        for name, block in hivex["policies"].items()
    }
    return {**hivex, "policies": policies}


def hivex_record(cell: Cell, run_dir: Path, config: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The record of a cell's run folder (None: neither `eval.json` nor `eval_hivex.json` there): the cell,
    the folder it came from (`portable_path`: relative to the working directory), `summary.json` as is
    but for its folder (`portable_summary`; JAX version, backend, compile/train/eval seconds, seeds),
    the measurement date of each part (`measured_on`: the date `summary.json` (else `eval.json`) and
    `eval_hivex.json` were written), the held-out part (`_held_out_part`), the HIVEX-protocol part
    (`_hivex_part`) and, when given, the config the run trained with (`config`, the trainer's
    `baselines.studies.config_fingerprint.config_block`)."""
    held_path, hivex_path = run_dir / "eval.json", run_dir / "eval_hivex.json"
    summary_path = run_dir / "summary.json"
    held, hivex, summary = read_json(held_path), read_json(hivex_path), read_json(summary_path)
    if not held and not hivex:
        return None
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "cell": {"env_id": cell.env_id, "task": cell.task, "level": cell.level},
        "source": portable_path(run_dir),
        "measured_on": {},
    }
    if summary:
        record["summary"] = portable_summary(summary)
    if held:
        record["held_out"] = _held_out_part(held, cell.env_id)
        record["measured_on"]["held_out"] = file_date(summary_path if summary else held_path)
    if hivex:
        record["hivex"] = _hivex_part(hivex)
        record["measured_on"]["hivex"] = file_date(hivex_path)
    if config is not None:
        record["config"] = config
    return record


def record_path(records_dir: str | Path, cell: Cell) -> Path:
    """A cell's record file: `RECORDS_DIR/<env id>/task<t>[_level<l>].json`."""
    return Path(records_dir) / cell.env_id / f"{cell.dirname}.json"


def record_cell(
    cell: Cell, run_dir: Path, records_dir: str | Path, config: dict[str, Any] | None = None
) -> tuple[Path, bool] | None:
    """Write (or refresh) the record of a cell's run folder (with `config`, the config it trained with, when
    given); `(its file, whether it changed)`, or None when the folder has no results."""
    record = hivex_record(cell, run_dir, config)
    if record is None:
        return None
    path = record_path(records_dir, cell)
    return path, write_record(path, record)


def record_folders(
    out_dir: str | Path,
    records_dir: str | Path,
    config_of: Callable[[Cell, Path], dict[str, Any] | None] | None = None,
) -> list[tuple[Cell, Path, bool]]:
    """Record every cell folder with results under `out_dir` (each with `config_of(cell, run folder)`, the
    config it trained with, when given): `[(cell, record file, changed)]`."""
    done = []
    for cell, run_dir in _run_dirs(out_dir):
        written = record_cell(cell, run_dir, records_dir, config_of(cell, run_dir) if config_of else None)
        if written is not None:
            done.append((cell, *written))
    return done


def load_records(records_dir: str | Path) -> dict[Cell, dict[str, Any]]:
    """`{cell: record}` of every record under `records_dir`."""
    found: dict[Cell, dict[str, Any]] = {}
    for env_id in HIVEX_ENVS:
        for path in sorted((Path(records_dir) / env_id).glob("*.json")):
            cell = cell_of_dirname(env_id, path.stem)
            if cell is not None:
                found[cell] = read_record(path)
    return found


def record_result(record: dict[str, Any]) -> dict[str, Any]:
    """A record as `load_results` reads a run folder (`{"held_out": ..., "hivex": ...}`), the shape
    `render_page` reads: the stochastic policy's `per_world` rebuilt from `stats_per_world`."""
    held = record.get("held_out")
    if held:
        held = {**held, "policies": dict(held["policies"])}
        stochastic = held["policies"].get("stochastic")
        if stochastic is not None:
            columns = stochastic.get("stats_per_world", {})
            count = max((len(v) for v in columns.values()), default=0)
            per_world = [
                {"stats": {k: v[i] for k, v in columns.items() if v[i] is not None}} for i in range(count)
            ]
            held["policies"]["stochastic"] = {**stochastic, "per_world": per_world}
    return {"held_out": held, "hivex": record.get("hivex")}
