"""One env's section of the HIVEX results page (docs/hivex_results.md): HIVEX's published test means
beside ours under both protocols, the scripted and random baselines, the normalised score and whether
the cell is comparable; our budgets; MAPPO beside IPPO on the main task; the level trend and its
figure; the per-run test means; and every published statistics table beside ours.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hivex_jax.eval.hivex_cells import COMMON_WHY, GPU_BUDGET, HIVEX_ENVS, Cell
from hivex_jax.eval.hivex_published import NO_LEVEL, load_published, published_table, required_table
from hivex_jax.eval.hivex_records import as_list
from hivex_jax.eval.result_records import ConfigCheck, config_mark
from hivex_jax.eval.results_csv import heldout_normalised, policy_value
from hivex_jax.eval.results_format import fmt_mean_ci, fmt_published, fmt_value
from hivex_jax.eval.results_trends import level_trend, one_budget, protocol_seeds, trend_figure_lines
from hivex_jax.eval.results_variants import variant_lines
from hivex_jax.eval.score import scripted_beats_random


def _both(result: dict[str, Any] | None, policy: str) -> str:
    """ "HIVEX-protocol / held-out" value of a baseline policy."""
    hivex, held_out = (policy_value(result, protocol, policy) for protocol in ("hivex", "held_out"))
    return f"{fmt_value(hivex)} / {fmt_value(held_out)}"


def _normalised(result: dict[str, Any] | None) -> str:
    """The held-out normalised score of IPPO greedy / stochastic (`results_csv.heldout_normalised`), or why
    there is none: "—" (not run), "— (scripted ≤ random)" where the scripted controller does not beat
    random on the held-out worlds."""
    scripted, random = (policy_value(result, "held_out", p) for p in ("scripted", "random"))
    if scripted is None or random is None:
        return "—"
    if not scripted_beats_random(scripted, random):
        return "— (scripted ≤ random)"
    return " / ".join(fmt_value(heldout_normalised(result, p), 2) for p in ("greedy", "stochastic"))


def _comparable(cell: Cell, result: dict[str, Any] | None) -> str:
    """The comparable? column of a cell: the env's verdict plus this cell's protocol differences; "not run",
    or `GPU_BUDGET` for a cell left to a GPU."""
    if result is None:
        return GPU_BUDGET if cell.gpu_budget else "not run"
    notes = [HIVEX_ENVS[cell.env_id].verdict]
    hivex = result.get("hivex")
    if hivex is None:
        notes.append("no HIVEX-protocol run")
    else:
        scale = hivex.get("agent_steps_scale", 1.0)
        if scale != 1.0:
            notes.append(f"HIVEX protocol at ×{scale:g} of its agent steps")
        runs = hivex["test_run"]["runs"]
        if runs != 3:
            notes.append(f"{runs} test run{'s' if runs != 1 else ''}, not 3")
    return "; ".join(notes)


def _budget_lines(env_id: str, cells: dict[Cell, dict[str, Any]]) -> list[str]:
    """One line per distinct (seeds, env steps, HIVEX agent steps) among an env's run cells."""
    info = HIVEX_ENVS[env_id]
    seen: dict[str, list[str]] = {}
    for cell, result in sorted(cells.items()):
        held, hivex = result.get("held_out"), result.get("hivex")
        parts = []
        if held:
            steps = held.get("env_steps_per_seed")
            agent = f" = {steps * info.agents:,} agent-steps" if steps else ""
            parts.append(
                f"IPPO {held['num_seeds']} seeds × {steps:,} env steps{agent} per seed"
                if steps
                else f"IPPO {held['num_seeds']} seeds"
            )
            parts.append(f"held-out: {len(held['worlds'])} worlds {held['worlds'][0]}–{held['worlds'][-1]}")
        if hivex:
            run = hivex["test_run"]
            scale = hivex.get("agent_steps_scale", 1.0)
            parts.append(
                f"HIVEX protocol: {run['runs']} run(s) × {run['agent_steps']:,} agent steps "
                f"(×{scale:g} of HIVEX's {HIVEX_ENVS[env_id].test_run.agent_steps:,}), summary every "
                f"{run['summary_freq']:,}"
            )
        where = cell.dirname
        seen.setdefault("; ".join(parts), []).append(where)
    return [f"- {text} ({', '.join(where)})" for text, where in seen.items()]


def _level_cols(env: dict[str, Any]) -> list[str]:
    return env["levels"]


def _stat_value(result: dict[str, Any] | None, key: str | None) -> float | None:
    """Our value of a mapped statistic in a cell: the HIVEX-protocol stochastic per-agent episode length
    (None for results written before it was counted), or the held-out IPPO stochastic mean over seeds
    and worlds of the per-agent episode sum."""
    if result is None or key is None:
        return None
    if key == "episode_length":
        hivex = result.get("hivex")
        return hivex["policies"]["stochastic"].get("agent_episode_length") if hivex else None
    held = result.get("held_out")
    if not held:
        return None
    per_world = held["policies"]["stochastic"]["per_world"]
    values = [v for w in per_world if key in w["stats"] for v in as_list(w["stats"][key])]
    return sum(values) / len(values) if values else None


def _world_length(result: dict[str, Any] | None) -> float | None:
    """The HIVEX-protocol stochastic world episode length of a cell whose results predate the per-agent
    count (None otherwise): shown in brackets, as a different quantity from HIVEX's."""
    hivex = (result or {}).get("hivex")
    if not hivex or "agent_episode_length" in hivex["policies"]["stochastic"]:
        return None
    return hivex["policies"]["stochastic"].get(
        "world_episode_length", hivex["policies"]["stochastic"].get("episode_length")
    )


def _level_label(env_id: str, level: str) -> str:
    return "—" if level == NO_LEVEL else level


def mappo_lines(
    env_id: str,
    results: dict[Cell, dict[str, Any]],
    mappo: dict[Cell, dict[str, Any]],
    checks: dict[Cell, ConfigCheck] | None = None,
) -> list[str]:
    """MAPPO beside IPPO on the env's main task (task 0) at every level: held-out greedy and stochastic
    (mean ± 95% CI over seeds) of each, and MAPPO under the HIVEX protocol; "—" where not run; each greedy
    value marked where its record's config is not the shipped one now (`checks`, `config_mark`)."""
    env = load_published()["envs"][env_id]
    level_head = HIVEX_ENVS[env_id].level_name or "level"
    out = [
        f"**MAPPO beside IPPO, main task** (`configs/{Cell(env_id, 0, None, 'mappo').config}`: "
        "the IPPO config with a centralised critic on the global state, the same actor; what else differs: "
        "the config's header; held-out worlds 6000–6031).",
        "",
        f"| main task, {level_head} | IPPO greedy | MAPPO greedy | IPPO stochastic | MAPPO stochastic "
        "| MAPPO, HIVEX protocol (stochastic) |",
        "|---|---|---|---|---|---|",
    ]
    for level in _level_cols(env):
        cell = Cell(env_id, 0, None if level == NO_LEVEL else int(level))
        held = {
            algo: (source.get(dataclasses.replace(cell, algo=algo)) or {}).get("held_out")
            for algo, source in (("ippo", results), ("mappo", mappo))
        }
        value = {}
        for algo, part in held.items():
            mark = config_mark((checks or {}).get(dataclasses.replace(cell, algo=algo)))
            for policy in ("greedy", "stochastic"):
                text = fmt_mean_ci(part["policies"][policy]["summary"]) if part else "—"
                value[algo, policy] = text + (mark if part and policy == "greedy" else "")
        protocol = policy_value(mappo.get(dataclasses.replace(cell, algo="mappo")), "hivex", "stochastic")
        out.append(
            f"| {_level_label(env_id, level)} | {value['ippo', 'greedy']} | {value['mappo', 'greedy']} "
            f"| {value['ippo', 'stochastic']} | {value['mappo', 'stochastic']} | {fmt_value(protocol)} |"
        )
    return [*out, ""]


def env_section(
    env_id: str,
    results: dict[Cell, dict[str, Any]],
    mappo: dict[Cell, dict[str, Any]] | None = None,
    checks: dict[Cell, ConfigCheck] | None = None,
    variants: list[dict[str, Any]] | None = None,
) -> list[str]:
    """The page section of one env: results table, budget, its `variants` (runs at a larger budget,
    `results_variants`), MAPPO beside IPPO, trend, statistics tables; a cell whose record is not of its
    shipped config now (`checks`) marked after its level (`config_mark`)."""
    info = HIVEX_ENVS[env_id]
    env = load_published()["envs"][env_id]
    test = required_table(env_id, "test_mean")
    best = required_table(env_id, "best_run")
    mine = {c: r for c, r in results.items() if c.env_id == env_id}
    level_head = info.level_name or "level"
    out = [f"## {info.name} (`{env_id}`)", ""]
    out.append(f"**Comparable?** {info.why} {COMMON_WHY}")
    out.append("")
    out.append(
        f"HIVEX trained ML-Agents PPO for {info.train_agent_steps:,} agent-steps per run and tested "
        f"{HIVEX_ENVS[env_id].test_run.agent_steps:,} agent-steps per run. Our cells:"
    )
    out += _budget_lines(env_id, mine) or ["- none run yet"]
    out += [
        "",
        f"| task | {level_head} | HIVEX test mean | HIVEX best run | ours, HIVEX protocol (IPPO stochastic) "
        "| ours held-out, IPPO greedy | ours held-out, IPPO stochastic | scripted (HIVEX / held-out) "
        "| random (HIVEX / held-out) | normalised score, held-out (greedy / stochastic) | comparable? |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task, row in test["rows"].items():
        for level in _level_cols(env):
            cell = Cell(env_id, int(task), None if level == NO_LEVEL else int(level))
            result = mine.get(cell)
            held = (result or {}).get("held_out")
            greedy = fmt_mean_ci(held["policies"]["greedy"]["summary"]) if held else "—"
            stochastic = fmt_mean_ci(held["policies"]["stochastic"]["summary"]) if held else "—"
            mark = config_mark((checks or {}).get(cell)) if result is not None else ""
            out.append(
                f"| {task} {env['task_names'][task]} | {_level_label(env_id, level)}{mark} "
                f"| {fmt_published(row[level])} | {fmt_published(best['rows'][task][level])} "
                f"| {fmt_value(policy_value(result, 'hivex', 'stochastic'))} "
                f"| {greedy} | {stochastic} | {_both(result, 'scripted')} | {_both(result, 'random')} "
                f"| {_normalised(result)} | {_comparable(cell, result)} |"
            )
    out.append("")
    if info.notes:
        out += [info.notes, ""]
    out += variant_lines(env_id, variants or [], mine, info.subtask_findings, env["task_names"])
    out += mappo_lines(env_id, results, mappo or {}, checks)
    if info.level_name:
        published_series = {int(k): v for k, v in test["rows"]["0"].items()}
        same_budget, left_out = one_budget(mine)
        ours = {
            c.level: v
            for c, r in same_budget.items()
            if c.task == 0
            and c.level is not None
            and (v := policy_value(r, "hivex", "stochastic")) is not None
        }
        seeds = {
            c.level: s
            for c, r in same_budget.items()
            if c.task == 0 and c.level is not None and (s := protocol_seeds(r)) is not None
        }
        out += [
            f"**{info.level_name.capitalize()} trend, main task (test mean).** "
            + level_trend(published_series, ours, info.level_name, seeds)
            + (f" One budget per trend: {'; '.join(left_out)}." if left_out else ""),
            "",
        ]
        out += trend_figure_lines(env_id, same_budget)
    per_run = published_table(env_id, "per_run")
    if per_run:
        cell = Cell(env_id, int(per_run["cell"]["task"]), int(per_run["cell"]["level"]))
        runs = ", ".join(
            fmt_published(v["test mean (all summaries)"]) for k, v in per_run["rows"].items() if k != "mean"
        )
        hivex = (mine.get(cell) or {}).get("hivex")
        ours = (
            ", ".join(fmt_value(r["mean"]) for r in hivex["policies"]["stochastic"]["runs"])
            if hivex
            else "not run"
        )
        out += [
            f"**Per-run test means, {cell.label()}.** HIVEX (the one cell it published runs for): {runs}; "
            f"ours under the HIVEX protocol (run i = training seed i): {ours}.",
            "",
        ]
    out += _stat_section(env_id, env, mine)
    return out


def _stat_section(env_id: str, env: dict[str, Any], mine: dict[Cell, dict[str, Any]]) -> list[str]:
    """Every published "test mean of stat X" table of an env, each cell "HIVEX / ours" where we ran it."""
    mapping = HIVEX_ENVS[env_id].stat_map
    out = [
        "### Logged statistics",
        "",
        "Each cell: HIVEX's test mean, then ours where the cell was run (`HIVEX / ours`). Ours: "
        "`Environment/Episode Length` is the HIVEX-protocol per-agent episode length of IPPO (stochastic): "
        "each agent's decisions while it was active in the episode, the quantity ML-Agents logs (per "
        "agent; HIVEX restarts agents one at a time), not the world's episode length, which credits every "
        "agent with the whole episode. Cells evaluated before the per-agent count show `— (world N)`: "
        "the world's length N, a different quantity, not comparable with HIVEX's. Every other statistic "
        "is the held-out IPPO stochastic mean over seeds and worlds of the per-agent "
        "episode sum of "
        'the `info["stats"]` key named in the heading (HIVEX\'s statistics are means over its summary points '
        "of what the Unity env recorded, so a pair compares the same event count or reward sum only where "
        "both count it per episode).",
        "",
    ]
    for table in env["tables"]:
        if table["kind"] != "stat_test_mean":
            continue
        stat = table["statistic"]
        key = mapping.get(stat)
        ours_key = (
            "HIVEX-protocol per-agent episode length"
            if key == "episode_length"
            else (f"`{key}`" if key else "—")
        )
        out.append(f"**`{stat}`** (ours: {ours_key})")
        note = HIVEX_ENVS[env_id].stat_notes.get(stat) or table.get("note")
        if note:
            out.append(f"Note: {note}.")
        out.append("")
        levels = table["levels"]
        head = HIVEX_ENVS[env_id].level_name or "value"
        out.append(f"| task \\ {head} | " + " | ".join(_level_label(env_id, lv) for lv in levels) + " |")
        out.append("|---|" + "---|" * len(levels))
        for task, row in table["rows"].items():
            cells = []
            for level in levels:
                cell = Cell(env_id, int(task), None if level == NO_LEVEL else int(level))
                value = _stat_value(mine.get(cell), key)
                world = _world_length(mine.get(cell)) if key == "episode_length" else None
                if value is not None:
                    cells.append(f"{fmt_published(row[level])} / {fmt_value(value)}")
                elif world is not None:
                    cells.append(f"{fmt_published(row[level])} / — (world {fmt_value(world)})")
                else:
                    cells.append(fmt_published(row[level]))
            out.append(f"| {task} {env['task_names'][task]} | " + " | ".join(cells) + " |")
        out.append("")
    return out
