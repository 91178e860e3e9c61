"""Runs of a HIVEX cell with another budget or trainer setting than the cell's ("variants": e.g. a subtask
at 4x HIVEX's budget), recorded beside the cells and shown on docs/hivex_results.md in a table of their own,
never in place of the comparable cell.

A variant's record (`RECORDS_DIR/<env id>/larger_budget/task<t>_level<l>_<name>.json`, written by
`scripts/hivex_results.py record-variant`) is a cell record of its run folder (`hivex_records.hivex_record`:
held-out part, summary, config) plus `variant` (its name and `changes`, the learning keys whose value differs
from the cell's config now: `{key: [cell's, run's]}`) and, when given, `evidence` (per policy, what
`scripts/subtask_evidence.py` measured: return, discounted return, reward-event counts per episode).
`load_records` does not read the folder, so a variant never counts as a cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell
from hivex_jax.eval.result_records import read_record
from hivex_jax.eval.results_csv import heldout_normalised, policy_value
from hivex_jax.eval.results_format import fmt_mean_ci, fmt_value

#: the folder of an env's variant records, under its records folder
VARIANTS_DIR = "larger_budget"
#: a trained policy "learns" when its held-out normalised score reaches this (a tenth of the random-to-
#: scripted span; below it the cell counts as near random)
LEARNED_SCORE = 0.1
#: the trained policies' names in a variant's evidence, in the order the evidence table shows them
TRAINED = ("greedy", "stochastic")
#: the evidence table's order of policies (others after them, by name)
POLICY_ORDER = ("random", "scripted", "zero action", *TRAINED)
#: the evidence table's order of events (`scripts/subtask_evidence.py`'s events of DBR, then of AWS; records
#: keep keys sorted)
EVENT_ORDER = (
    "seed pick-up",
    "paid pick-up",
    "drop",
    "valid drop",
    "drop success",
    "running-back paid",
    "return paid",
    "recharge",
    "out of energy",
    "water pick-up",
    "water dropping",
    "trees extinguished",
    "trees prepared",
    "fire found",
    "village found",
    "fire out",
    "fire near village",
    "crash",
)
#: what an evidence record made before it named them counts per episode and shows the first decision of
#: (Drone-Based Reforestation's, the only env then)
DEFAULT_AGENT, DEFAULT_FIRST_EVENT = "drone", "drop"


def variant_cell(record: Mapping[str, Any]) -> Cell:
    """The cell a variant record is a variant of."""
    cell = record["cell"]
    return Cell(cell["env_id"], int(cell["task"]), cell["level"])


def variant_path(records_dir: str | Path, cell: Cell, name: str) -> Path:
    """A variant's record file: `<records_dir>/<env id>/larger_budget/<cell folder>_<name>.json`."""
    return Path(records_dir) / cell.env_id / VARIANTS_DIR / f"{cell.dirname}_{name}.json"


def load_variants(records_dir: str | Path, env_id: str) -> list[dict[str, Any]]:
    """Every variant record of an env, by task, level and name."""
    folder = Path(records_dir) / env_id / VARIANTS_DIR
    records = [read_record(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return sorted(records, key=lambda r: (r["cell"]["task"], r["cell"]["level"] or 0, r["variant"]["name"]))


def changes_text(changes: Mapping[str, list[Any]]) -> str:
    """`{"total_env_steps": [409600, 1638400]}` -> "total_env_steps 409,600 → 1,638,400 (×4)"."""
    parts = []
    for key, (before, after) in sorted(changes.items()):
        text = f"{key} {_number(before)} → {_number(after)}"
        if key == "total_env_steps" and before:
            text += f" (×{after / before:g})"
        parts.append(text)
    return "; ".join(parts) or "none"


def _number(value: Any) -> str:
    """An int with thousands separators, anything else as is."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def learned_text(record: Mapping[str, Any] | None) -> str:
    """Whether the greedy policy's held-out normalised score reaches `LEARNED_SCORE`: "yes (0.95)",
    "no (0.01)", or "—" where there is no scale (not measured, or scripted does not beat random)."""
    value = heldout_normalised(dict(record) if record else None, "greedy")
    if value is None:
        return "—"
    return f"{'yes' if value >= LEARNED_SCORE else 'no'} ({fmt_value(value, 2)})"


def _trained(record: Mapping[str, Any] | None) -> str:
    """ "greedy / stochastic" held-out mean (± CI over seeds; the mean alone for one seed) of a record, "—"
    without one."""
    held = (record or {}).get("held_out")
    if not held:
        return "—"
    summaries = [held["policies"][p]["summary"] for p in TRAINED]
    if all(s.get("num_seeds", 1) == 1 for s in summaries):
        return " / ".join(fmt_value(s["mean"]) for s in summaries)
    return " / ".join(fmt_mean_ci(s) for s in summaries)


def variant_table(variants: list[dict[str, Any]], results: Mapping[Cell, Mapping[str, Any]]) -> list[str]:
    """The table of an env's variants, each beside its comparable cell (`results`: the cells' records as
    the page reads them)."""
    out = [
        "| subtask | level | variant | what differs from the cell's config | seeds "
        "| held-out greedy / stochastic | the cell: greedy / stochastic | scripted / random (held-out) "
        "| normalised score (greedy / stochastic) | learns? variant / cell |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in variants:
        cell = variant_cell(record)
        result = results.get(cell)
        held = record.get("held_out") or {}
        scores = " / ".join(fmt_value(heldout_normalised(record, p), 2) for p in TRAINED)
        baselines = " / ".join(fmt_value(policy_value(record, "held_out", p)) for p in ("scripted", "random"))
        level = "—" if cell.level is None else str(cell.level)
        out.append(
            f"| {cell.task} | {level} | {record['variant']['name']} "
            f"| {changes_text(record['variant'].get('changes', {}))} | {held.get('num_seeds', '—')} "
            f"| {_trained(record)} | {_trained(result)} | {baselines} | {scores} "
            f"| {learned_text(record)} / {learned_text(result)} |"
        )
    return out


def evidence_events(variants: list[dict[str, Any]]) -> list[str]:
    """The events some policy of some variant's evidence sees at least once (`EVENT_ORDER`, then others by
    name), less those whose counts repeat an earlier shown event's in every row."""
    summaries = [s for r in variants for s in r.get("evidence", {}).get("policies", {}).values()]
    seen = {n for s in summaries for n, c in s["events"].items() if c["per_episode"] > 0}
    names: list[str] = []
    for name in sorted(
        seen, key=lambda n: (EVENT_ORDER.index(n) if n in EVENT_ORDER else len(EVENT_ORDER), n)
    ):
        repeats = any(all(_counts(s, name) == _counts(s, other) for s in summaries) for other in names)
        if not repeats:
            names.append(name)
    return names


def _counts(summary: Mapping[str, Any], event: str) -> tuple[float, float]:
    """An event's (mean count, share of agent-episodes with one) in one policy's evidence (0 if absent)."""
    counts = summary["events"].get(event, {})
    return counts.get("per_episode", 0.0), counts.get("episodes_with", 0.0)


def _policies(evidence: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """An evidence block's policies in `POLICY_ORDER` (others after them, by name)."""
    rank = {name: i for i, name in enumerate(POLICY_ORDER)}
    return sorted(evidence["policies"].items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def evidence_table(variants: list[dict[str, Any]]) -> list[str]:
    """One row per variant and policy of its evidence: return, discounted returns (one column per gamma of
    the first variant's evidence) and, per event any row sees, the mean count per agent and episode with
    the share of agent-episodes that see one; the mean decision of the first of the evidence's
    `first_event` ([] when no variant has evidence)."""
    with_evidence = [r for r in variants if r.get("evidence")]
    if not with_evidence:
        return []
    events = evidence_events(with_evidence)
    gammas = [str(g) for g in with_evidence[0]["evidence"].get("gammas", [])]
    first_event = with_evidence[0]["evidence"].get("first_event", DEFAULT_FIRST_EVENT)
    out = [
        "| subtask | policy | return | "
        + "".join(f"discounted, γ {g} | " for g in gammas)
        + " | ".join(f"{e}: count (share)" for e in events)
        + f" | first {first_event} (decision) |",
        "|" + "---|" * (len(events) + len(gammas) + 4),
    ]
    for record in with_evidence:
        task = record["cell"]["task"]
        for policy, summary in _policies(record["evidence"]):
            name = f"trained {policy} ({record['variant']['name']})" if policy in TRAINED else policy
            counts = [summary["events"].get(e, {"per_episode": 0.0, "episodes_with": 0.0}) for e in events]
            first = summary["events"].get(first_event, {}).get("first_step")
            discounted = summary.get("discounted_returns", {})
            returns = " | ".join(
                fmt_value(v) for v in [summary["return"], *(discounted.get(g) for g in gammas)]
            )
            out.append(
                f"| {task} | {name} | {returns} | "
                + " | ".join(f"{c['per_episode']:.2f} ({c['episodes_with']:.0%})" for c in counts)
                + f" | {fmt_value(first, 0) if first is not None else '—'} |"
            )
    return out


def variant_lines(
    env_id: str,
    variants: list[dict[str, Any]],
    results: Mapping[Cell, Mapping[str, Any]],
    findings: Mapping[int, str] | None = None,
    task_names: Mapping[str, str] | None = None,
) -> list[str]:
    """An env's "Subtasks at a larger budget" part of the page: the variants' table, their evidence and one
    paragraph per task of `findings` ([] when the env has no variant)."""
    if not variants:
        return []
    evidence = next((r["evidence"] for r in variants if r.get("evidence")), None)
    out = [
        "### Subtasks at a larger budget",
        "",
        "Subtasks whose cells end near random (greedy within a tenth of the random-to-scripted span) at the "
        "cells' budget, each trained once more at a larger budget or with a general trainer change "
        f"(records under `{VARIANTS_DIR}/` beside the cells', `scripts/hivex_results.py record-variant`), "
        "beside the comparable cell, which stays the one the tables above show. Held-out worlds and "
        "baselines as the cells'; learns? = the greedy policy's normalised score reaches "
        f"{LEARNED_SCORE:g}.",
        "",
        *variant_table(variants, results),
        "",
    ]
    rows = evidence_table(variants)
    if rows and evidence is not None:
        agent = evidence.get("agent", DEFAULT_AGENT)
        short = HIVEX_ENVS[env_id].short
        out += [
            f"What each policy does, per {agent} and episode (`python scripts/subtask_evidence.py --env "
            f"{short}`: level {evidence.get('level', '—')}, worlds {evidence.get('worlds', '—')}, the "
            "held-out episodes' keys; the discounted return is what PPO maximises; an event's count is its "
            f"steps, its share the {agent}-episodes with at least one; the trained policy is the variant's, "
            "played by another compiled program than the held-out evaluation's, so its returns can differ "
            "from the table's by a few percent where float rounding moves an episode's events):",
            "",
            *rows,
            "",
        ]
    for task, text in sorted((findings or {}).items()):
        name = (task_names or {}).get(str(task), "")
        out += [f"**Task {task}{' ' + name if name else ''}.** {text}", ""]
    return out
