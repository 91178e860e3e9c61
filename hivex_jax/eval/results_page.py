"""The page of HIVEX's published results beside ours (docs/hivex_results.md), rendered from the published
tables (`hivex_published`), each env's metadata (`hivex_cells`) and the committed record of each cell we
measured (`RECORDS_DIR/<env id>/task<t>[_level<l>].json`, `hivex_record`; `result_records`).

A cell is measured in its run folder (`OUT_DIR/<env id>/task<t>[_level<l>]/`, machine-local: `eval.json`
of `hivex train`, `eval_hivex.json` of the HIVEX protocol, `summary.json`), as `scripts/hivex_results.py run`
writes them; `hivex_record` keeps what the page renders of it (`load_results` reads the same from run
folders) and `write_page` renders the page from the records alone, refusing to drop a measured cell the
page on disk shows, with the level-trend figures it links (`results_trends`: `images/hivex_trend_<short>.png`
beside the page).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

from hivex_jax.eval.hivex_cells import (
    COMMON_WHY,
    GPU_BUDGET,
    HIVEX_ENVS,
    Cell,
    cell_of_dirname,
    default_cells,
    gpu_budget_spec,
    gpu_budget_tasks,
    published_cells,
)
from hivex_jax.eval.hivex_published import NO_LEVEL, load_published, published_table
from hivex_jax.eval.result_records import (
    FORMAT_VERSION,
    RECORDS_ROOT,
    file_date,
    read_json,
    read_record,
    vanished,
    write_record,
)
from hivex_jax.eval.results_csv import CELLS_FILE, SEEDS_FILE, heldout_normalised, policy_value, write_csvs
from hivex_jax.eval.results_trends import (
    BOOTSTRAP_RESAMPLES,
    MIN_CELLS,
    figure_name,
    protocol_seeds,
    spearman,
    spearman_ci,
    trend_panels,
    write_trend_figures,
)
from hivex_jax.eval.score import scripted_beats_random

#: relative spread (max - min over |mean|) below which a published level series counts as flat
FLAT_SPREAD = 0.02
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


def _mean(values: Any) -> float:
    values = _as_list(values)
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


def hivex_record(cell: Cell, run_dir: Path) -> dict[str, Any] | None:
    """The record of a cell's run folder (None: neither `eval.json` nor `eval_hivex.json` there): the cell,
    the folder it came from, `summary.json` as is (JAX version, backend, compile/train/eval seconds, seeds),
    the measurement date of each part (`measured_on`: the date `summary.json` (else `eval.json`) and
    `eval_hivex.json` were written), the held-out part (`_held_out_part`) and the HIVEX-protocol part
    (`_hivex_part`)."""
    held_path, hivex_path = run_dir / "eval.json", run_dir / "eval_hivex.json"
    summary_path = run_dir / "summary.json"
    held, hivex, summary = read_json(held_path), read_json(hivex_path), read_json(summary_path)
    if not held and not hivex:
        return None
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "cell": {"env_id": cell.env_id, "task": cell.task, "level": cell.level},
        "source": str(run_dir),
        "measured_on": {},
    }
    if summary:
        record["summary"] = summary
    if held:
        record["held_out"] = _held_out_part(held, cell.env_id)
        record["measured_on"]["held_out"] = file_date(summary_path if summary else held_path)
    if hivex:
        record["hivex"] = _hivex_part(hivex)
        record["measured_on"]["hivex"] = file_date(hivex_path)
    return record


def record_path(records_dir: str | Path, cell: Cell) -> Path:
    """A cell's record file: `RECORDS_DIR/<env id>/task<t>[_level<l>].json`."""
    return Path(records_dir) / cell.env_id / f"{cell.dirname}.json"


def record_cell(cell: Cell, run_dir: Path, records_dir: str | Path) -> tuple[Path, bool] | None:
    """Write (or refresh) the record of a cell's run folder; `(its file, whether it changed)`, or None
    when the folder has no results."""
    record = hivex_record(cell, run_dir)
    if record is None:
        return None
    path = record_path(records_dir, cell)
    return path, write_record(path, record)


def record_folders(out_dir: str | Path, records_dir: str | Path) -> list[tuple[Cell, Path, bool]]:
    """Record every cell folder with results under `out_dir`: `[(cell, record file, changed)]`."""
    done = []
    for cell, run_dir in _run_dirs(out_dir):
        written = record_cell(cell, run_dir, records_dir)
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


def _fmt(value: float | None, digits: int | None = None) -> str:
    """A number for a table: about 4 significant figures ("—" for None/NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if digits is None:
        digits = 1 if abs(value) >= 10 or value == 0 else 3
    return f"{value:.{digits}f}"


def _pub(value: float) -> str:
    """A published value as the reference prints it (up to trailing zeros)."""
    return repr(float(value))


def _ci(summary: dict[str, Any]) -> str:
    """The held-out "mean ± CI", both to the mean's decimals (no ± for a policy run once)."""
    digits = 1 if abs(summary["mean"]) >= 10 else 3
    if summary.get("num_seeds", 1) > 1:
        return f"{_fmt(summary['mean'], digits)} ± {_fmt(summary['ci95'], digits)}"
    return _fmt(summary["mean"], digits)


def _both(result: dict[str, Any] | None, policy: str) -> str:
    """ "HIVEX-protocol / held-out" value of a baseline policy."""
    return f"{_fmt(policy_value(result, 'hivex', policy))} / {_fmt(policy_value(result, 'held_out', policy))}"


def _normalised(result: dict[str, Any] | None) -> str:
    """The held-out normalised score of IPPO greedy / stochastic (`results_csv.heldout_normalised`), or why
    there is none: "—" (not run), "— (scripted ≤ random)" where the scripted controller does not beat
    random on the held-out worlds."""
    scripted, random = (policy_value(result, "held_out", p) for p in ("scripted", "random"))
    if scripted is None or random is None:
        return "—"
    if not scripted_beats_random(scripted, random):
        return "— (scripted ≤ random)"
    return " / ".join(_fmt(heldout_normalised(result, p), 2) for p in ("greedy", "stochastic"))


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


def _spread(values: list[float]) -> float:
    """(max - min) / |mean|."""
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / abs(mean) if mean else float("inf")


def _extremes(series: dict[int, float], word: str) -> str:
    """ "pattern 2 lowest (4588.4), 0 highest (4605.9), spread 0.4% of the mean"."""
    lo = min(series, key=series.get)
    hi = max(series, key=series.get)
    return (
        f"{word} {lo} lowest ({_fmt(series[lo])}), {hi} highest ({_fmt(series[hi])}), "
        f"spread {_spread(list(series.values())):.1%} of the mean"
    )


def _r2(value: float) -> str:
    """A correlation to 2 decimals, without a sign on zero ("-0.00" -> "0.00")."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def level_trend(
    published: dict[int, float],
    ours: dict[int, float],
    word: str = "level",
    seeds: dict[int, list[float]] | None = None,
) -> str:
    """The level-trend sentence: HIVEX's extremes over levels, ours under the same protocol, and whether
    the trend is reproduced (flat series: both flat; otherwise the same lowest and highest level, or
    "partly" with a rank correlation >= 0.5 over the levels both have). With `seeds` (our per-training-seed
    values per level) the rank correlation gets its bootstrap 95% CI over our seeds (`spearman_ci`)."""
    hivex_flat = _spread(list(published.values())) < FLAT_SPREAD
    text = "HIVEX: " + _extremes(published, word) + (" (flat)" if hivex_flat else "")
    common = [k for k in sorted(published) if k in ours]
    if len(common) < 3:
        return text + f"; ours: {len(common)} {word}(s) run, too few to check the trend."
    mine = {k: ours[k] for k in common}
    theirs = {k: published[k] for k in common}
    ours_flat = _spread(list(mine.values())) < FLAT_SPREAD
    rho = spearman([theirs[k] for k in common], [mine[k] for k in common])
    text += "; ours under the same protocol: " + _extremes(mine, word) + (" (flat)" if ours_flat else "")
    text += f"; rank correlation over the {len(common)} {word}s both have {_r2(rho)}"
    complete = seeds is not None and all(seeds.get(k) for k in common) and not math.isnan(rho)
    ci = spearman_ci(theirs, {k: seeds[k] for k in common}) if complete else None
    if ci is not None:
        text += f" (95% CI {_r2(ci[0])} to {_r2(ci[1])})"
    same_ends = min(theirs, key=theirs.get) == min(mine, key=mine.get) and max(theirs, key=theirs.get) == max(
        mine, key=mine.get
    )
    if hivex_flat:
        verdict = "reproduced (flat in both)" if ours_flat else "not reproduced (HIVEX flat, ours not)"
    elif ours_flat:
        verdict = "not reproduced (ours flat, HIVEX not)"
    elif same_ends:
        verdict = "reproduced (same lowest and highest)"
    elif rho >= 0.5:
        verdict = "partly reproduced (similar order, different extremes)"
    else:
        verdict = "not reproduced"
    return text + f": {verdict}."


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
    values = [v for w in per_world if key in w["stats"] for v in _as_list(w["stats"][key])]
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


def _as_list(value: Any) -> list[float]:
    return list(value) if isinstance(value, list) else [value]


def _level_label(env_id: str, level: str) -> str:
    return "—" if level == NO_LEVEL else level


def trend_figure_lines(env_id: str, results: dict[Cell, dict[str, Any]]) -> list[str]:
    """The link to an env's trend figure (`images/hivex_trend_<short>.png`, beside the page, written by
    `write_page`) and its caption; [] when no task has `MIN_CELLS` of our cells (no figure)."""
    panels = trend_panels(env_id, results)
    if not panels:
        return []
    info = HIVEX_ENVS[env_id]
    word = info.level_name
    tasks = ", ".join(str(t) for t in panels)
    return [
        f"![{info.name}: our return per {word} beside HIVEX's published test mean]"
        f"(images/{figure_name(env_id)})",
        "",
        f"*{word.capitalize()} trends, task{'s' if len(panels) > 1 else ''} {tasks} (each task with at "
        f"least {MIN_CELLS} of our cells): ours (left axis) under the HIVEX protocol (IPPO stochastic) and "
        f"held-out (IPPO greedy), mean and Student-t 95% CI over training seeds; HIVEX's published test "
        f"mean per {word} (right axis, one trained policy). Compare the shapes, not the heights: the "
        "absolute returns are not comparable, since our dynamics are designed where HIVEX is silent. The "
        f"rank correlation's 95% CI in the trend sentence resamples our seeds per {word} "
        f"({BOOTSTRAP_RESAMPLES:,} bootstrap resamples).*",
        "",
    ]


def mappo_lines(
    env_id: str, results: dict[Cell, dict[str, Any]], mappo: dict[Cell, dict[str, Any]]
) -> list[str]:
    """MAPPO beside IPPO on the env's main task (task 0) at every level: held-out greedy and stochastic
    (mean ± 95% CI over seeds) of each, and MAPPO under the HIVEX protocol; "—" where not run."""
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
        value = {
            (algo, policy): _ci(part["policies"][policy]["summary"]) if part else "—"
            for algo, part in held.items()
            for policy in ("greedy", "stochastic")
        }
        protocol = policy_value(mappo.get(dataclasses.replace(cell, algo="mappo")), "hivex", "stochastic")
        out.append(
            f"| {_level_label(env_id, level)} | {value['ippo', 'greedy']} | {value['mappo', 'greedy']} "
            f"| {value['ippo', 'stochastic']} | {value['mappo', 'stochastic']} | {_fmt(protocol)} |"
        )
    return [*out, ""]


def _budget(result: dict[str, Any]) -> int | None:
    """A cell's training budget (held-out `env_steps_per_seed`), None when it has no held-out result."""
    return (result.get("held_out") or {}).get("env_steps_per_seed")


def one_budget(results: dict[Cell, dict[str, Any]]) -> tuple[dict[Cell, dict[str, Any]], list[str]]:
    """For trends: per (env, algo, task), only the cells trained at that task's most common budget (ties:
    the larger), so a level series does not mix budgets; and a sentence per series that lost cells."""
    groups: dict[tuple[str, str, int], list[Cell]] = {}
    for cell in results:
        groups.setdefault((cell.env_id, cell.algo, cell.task), []).append(cell)
    kept: dict[Cell, dict[str, Any]] = {}
    notes = []
    for (env_id, _algo, task), cells in groups.items():
        budgets = [b for c in cells if (b := _budget(results[c])) is not None]
        if not budgets:
            kept.update({c: results[c] for c in cells})
            continue
        common = max(set(budgets), key=lambda b: (budgets.count(b), b))
        left = sorted(c for c in cells if _budget(results[c]) not in (None, common))
        kept.update({c: results[c] for c in cells if c not in left})
        if left:
            word = HIVEX_ENVS[env_id].level_name + ("s" if len(left) > 1 else "")
            levels = _ranges(sorted(c.level for c in left if c.level is not None))
            notes.append(
                f"task {task}: {word} {levels} left out (trained at another budget than the "
                f"{common:,} env steps per seed of the others)"
            )
    return kept, notes


def env_section(
    env_id: str, results: dict[Cell, dict[str, Any]], mappo: dict[Cell, dict[str, Any]] | None = None
) -> list[str]:
    """The page section of one env: results table, budget, MAPPO beside IPPO, trend, statistics tables."""
    info = HIVEX_ENVS[env_id]
    env = load_published()["envs"][env_id]
    test = published_table(env_id, "test_mean")
    best = published_table(env_id, "best_run")
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
            greedy = _ci(held["policies"]["greedy"]["summary"]) if held else "—"
            stochastic = _ci(held["policies"]["stochastic"]["summary"]) if held else "—"
            out.append(
                f"| {task} {env['task_names'][task]} | {_level_label(env_id, level)} | {_pub(row[level])} "
                f"| {_pub(best['rows'][task][level])} | {_fmt(policy_value(result, 'hivex', 'stochastic'))} "
                f"| {greedy} | {stochastic} | {_both(result, 'scripted')} | {_both(result, 'random')} "
                f"| {_normalised(result)} | {_comparable(cell, result)} |"
            )
    out.append("")
    if info.notes:
        out += [info.notes, ""]
    out += mappo_lines(env_id, results, mappo or {})
    if info.level_name:
        published_series = {int(k): v for k, v in test["rows"]["0"].items()}
        same_budget, left_out = one_budget(mine)
        ours = {
            c.level: v
            for c, r in same_budget.items()
            if c.task == 0 and (v := policy_value(r, "hivex", "stochastic")) is not None
        }
        seeds = {
            c.level: s for c, r in same_budget.items() if c.task == 0 and (s := protocol_seeds(r)) is not None
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
            _pub(v["test mean (all summaries)"]) for k, v in per_run["rows"].items() if k != "mean"
        )
        hivex = (mine.get(cell) or {}).get("hivex")
        ours = (
            ", ".join(_fmt(r["mean"]) for r in hivex["policies"]["stochastic"]["runs"])
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
                    cells.append(f"{_pub(row[level])} / {_fmt(value)}")
                elif world is not None:
                    cells.append(f"{_pub(row[level])} / — (world {_fmt(world)})")
                else:
                    cells.append(_pub(row[level]))
            out.append(f"| {task} {env['task_names'][task]} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] -> "0–2, 5"."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}–{v}")
            start = None
    return ", ".join(parts)


def _group(cells: list[Cell], with_env: bool = True) -> str:
    """Cells grouped by env and task: "WindFarmControl-v0 task 0 patterns 3–8; ..."."""
    groups: dict[tuple[str, int], list[int | None]] = {}
    for cell in cells:
        groups.setdefault((cell.env_id, cell.task), []).append(cell.level)
    parts = []
    for (env_id, task), levels in groups.items():
        text = (f"{env_id} " if with_env else "") + f"task {task}"
        if levels != [None]:
            word = HIVEX_ENVS[env_id].level_name + ("s" if len(levels) > 1 else "")
            text += f" {word} {_ranges(sorted(lv for lv in levels if lv is not None))}"
        parts.append(text)
    return "; ".join(parts)


def not_run_lines(results: dict[Cell, dict[str, Any]]) -> list[str]:
    """The cells not run: default cells missing a result first, then every published cell not run, by env
    (a cell counts as run when both eval.json and eval_hivex.json exist)."""
    complete = {c for c, r in results.items() if r.get("held_out") and r.get("hivex")}
    missing = [c for c in default_cells() if c not in complete]
    if missing:
        line = "- of the default cells (`run` without `--cells`): " + _group(missing)
        partial = [
            f"{c.label()} has {'eval.json' if results[c].get('held_out') else 'eval_hivex.json'} only"
            for c in missing
            if c in results
        ]
        lines = [line + (f" ({'; '.join(partial)})" if partial else "")]
    else:
        lines = ["- every default cell has been run"]
    for env_id in HIVEX_ENVS:
        left = [c for c in published_cells(env_id) if c not in complete and not c.gpu_budget]
        gpu = [c for c in published_cells(env_id) if c not in complete and c.gpu_budget]
        text = _group(left, with_env=False) if left else ("all run" if not gpu else "")
        if gpu:
            text += (
                ("; " if text else "")
                + f"{GPU_BUDGET} (`python scripts/hivex_results.py run --gpu --fuse --cells "
                + f"{gpu_budget_spec(env_id)}`): "
                + _group(gpu, with_env=False)
            )
        lines.append(f"- {env_id}: {text}")
    return lines


def _wall_s(record: dict[str, Any]) -> float:
    """A cell's wall seconds from its record: compile + training + held-out evaluation (`summary`; a cell
    trained as one of `fused_members` members of one program, its share) + the HIVEX protocol (`wall_s`)."""
    summary = record.get("summary", {})
    program_s = sum(summary.get(k, 0.0) for k in ("compile_s", "train_s", "eval_s"))
    return program_s / summary.get("fused_members", 1) + record.get("hivex", {}).get("wall_s", 0.0)


def compute_lines(records: dict[Cell, dict[str, Any]]) -> list[str]:
    """What our recorded cells cost beside HIVEX's budget for the same cells, per env and in total: our wall
    seconds (`_wall_s`), our training agent steps over every seed, and HIVEX's (one training run of
    `train_agent_steps` per cell, reference §2); MAPPO cells (no HIVEX counterpart) in a sentence."""
    timed = {c: r for c, r in records.items() if "summary" in r and r.get("held_out")}
    rows, totals = [], [0, 0.0, 0, 0]
    for env_id, env in HIVEX_ENVS.items():
        mine = [r for c, r in timed.items() if c.env_id == env_id and c.algo == "ippo"]
        if not mine:
            continue
        wall = sum(_wall_s(r) for r in mine)
        ours = sum(
            r["held_out"]["env_steps_per_seed"] * r["held_out"]["num_seeds"] * env.agents for r in mine
        )
        theirs = env.train_agent_steps * len(mine)
        for i, value in enumerate((len(mine), wall, ours, theirs)):
            totals[i] += value
        rows.append(
            f"| {env.name} | {len(mine)} | {wall / 3600:.2f} | {ours:,} | {theirs:,} | {ours / theirs:.2f} |"
        )
    if not rows:
        return []
    cells, wall, ours, theirs = totals
    mappo = [r for c, r in timed.items() if c.algo == "mappo"]
    return [
        "## Compute",
        "",
        "What our recorded cells took, from their records: wall time of one process per cell on the shared "
        "2-core CPU, often beside other jobs (an upper bound), compiling, training every seed, the held-out "
        "evaluation and the HIVEX protocol (a cell trained as one of N members of a fused program, `run "
        "--fuse`, counts 1/N of that program's time); training agent steps over all our seeds beside "
        "HIVEX's one training run per cell (reference §2, `max_steps`). HIVEX's run times are not "
        "published (the reference has none), so no ratio of times can be given: the ratio is of agent steps.",
        "",
        "| env | IPPO cells | our wall time (h) | our training agent steps (all seeds) "
        "| HIVEX's (1 run per cell) | ours / HIVEX's |",
        "|---|---|---|---|---|---|",
        *rows,
        f"| all | {cells} | {wall / 3600:.2f} | {ours:,} | {theirs:,} | {ours / theirs:.2f} |",
        "",
        *(
            [f"The {len(mappo)} MAPPO cells took {sum(_wall_s(r) for r in mappo) / 3600:.2f} h more.", ""]
            if mappo
            else []
        ),
    ]


def _count_published() -> int:
    """How many (env, task, level) cells HIVEX published a test mean for."""
    envs = load_published()["envs"]
    return sum(len(published_table(e, "test_mean")["rows"]) * len(envs[e]["levels"]) for e in envs)


def _count_complete(results: dict[Cell, dict[str, Any]]) -> int:
    """How many cells have both eval.json and eval_hivex.json."""
    return sum(1 for r in results.values() if r.get("held_out") and r.get("hivex"))


def render_page(
    results: dict[Cell, dict[str, Any]],
    command: str,
    provenance: str = "",
    records_dir: str | Path = RECORDS_DIR,
    compute: list[str] | None = None,
    mappo: dict[Cell, dict[str, Any]] | None = None,
) -> str:
    """The whole page as markdown: `results` as `load_results` reads them, regenerated by `command`, the
    `provenance` line (if any) and the records folder named in the text; MAPPO cells (in `mappo` or in
    `results`) fill the MAPPO tables only."""
    mappo = {**(mappo or {}), **{c: r for c, r in results.items() if c.algo == "mappo"}}
    results = {c: r for c, r in results.items() if c.algo == "ippo"}
    out = [
        "# HIVEX's published results beside ours",
        "",
        "Generated; do not edit by hand. Regenerate with:",
        "",
        "```",
        command,
        "```",
        "",
        f"It renders from the committed record of each cell we measured, `{records_dir}/<env id>/"
        "task<t>_level<l>.json` (`task<t>.json` for Ocean Plastic Collection): the numbers this page shows "
        "of the cell, its per-seed means and per-world statistics, and where, when and with what it was "
        "measured. `python scripts/hivex_results.py run [--fuse] [--agent-steps-scale F]` trains and "
        "evaluates the missing cells and records each as it finishes (it is resumable; with `--fuse` the "
        "cells of one env and algo train as one fused population, as `hivex sweep` fuses, each into its own "
        "folder: faster for Wind Farm Control and Wildfire Resource Management on the 2-core CPU, not for "
        "Drone-Based Reforestation and Aerial Wildfire Suppression, whose cells' cost is training, not "
        "compiling; a cell trained with another config than its shipped one now is named, and retrained "
        "with `--retrain-stale`); `python "
        "scripts/hivex_results.py record` records run folders trained before. The page is not written "
        "when it would show fewer of our cells than the page it replaces (`--allow-fewer` overrides).",
        "",
        f"The same numbers as tables for code, written with the page: `{Path(records_dir).parent}/"
        f"{CELLS_FILE}` (one row per cell we measured, IPPO and MAPPO, beside HIVEX's published values) and "
        f"`{Path(records_dir).parent}/{SEEDS_FILE}` (one row per cell, protocol, policy and training seed: "
        "the per-seed scores an rliable aggregate needs). Columns: returns are per agent and episode as on "
        "this page; `heldout_<policy>_mean` is the mean over training seeds of each seed's mean over the "
        "held-out worlds (`heldout_worlds`), `_ci95` its Student-t 95% half-width, `_seed_min` the lowest "
        "seed's; `heldout_<policy>_normalised` is that mean's normalised score (see below; empty where "
        "scripted does not beat random); `ours_hivex_protocol_stochastic` and the `_hivex_protocol` "
        "baselines are HIVEX-protocol cell values; `hivex_test_mean` / `hivex_best_run` are HIVEX's (IPPO "
        "rows only); an empty field was not measured.",
        "",
        *([provenance, ""] if provenance else []),
        "What the columns are:",
        "",
        "- **HIVEX test mean / best run**: reference §3, ML-Agents PPO with parameter sharing. Test mean = "
        "the mean over all summary points of 3 test runs (learning rate 0, stochastic actions, seed 6000), "
        "averaged over the runs; best run = the leaderboard's single test run. HIVEX's training-curve "
        "tables (mean and final) are in `hivex_jax/eval/data/hivex_published.json`, not on this page: our "
        "training logs are not the same quantity.",
        "- **ours, HIVEX protocol**: our trained IPPO scored the way HIVEX scored its policies (`hivex "
        "evaluate RUN --protocol hivex`, `hivex_jax.eval.hivex_protocol`): stochastic actions, worlds 6000, "
        "6001, ... one per episode, the mean of per-window mean returns, run i = training seed i, mean over "
        "runs. The budget (agent steps per run) is listed per env; below HIVEX's it is noted in the "
        "comparable? column.",
        "- **ours, held-out**: our own protocol (`eval.json` of `hivex train`): full episodes on named "
        "held-out worlds 6000–6031, greedy and stochastic, mean ± 95% CI over training seeds.",
        "- **scripted / random**: the env's scripted controller and uniform random actions, under both "
        "protocols (HIVEX protocol first; each plays one run: the protocol's step keys are the same in "
        "every run, so more runs of a policy without parameters would repeat the first).",
        "- **normalised score, held-out**: (R - R_random) / (R_scripted - R_random) of the held-out mean "
        "returns on the same worlds (`hivex_jax.eval.score`): 0 = random, 1 = the scripted controller, "
        "rising with the return whatever the baselines' signs. Where the scripted controller does not beat "
        "random (e.g. tasks whose reward it was not written for) there is no scale: `— (scripted ≤ "
        "random)`, never a ratio.",
        "- Returns are per-agent undiscounted episode returns in every column. `—` = not run (or no such "
        f"policy). {GPU_BUDGET} = a cell the 2-core CPU cannot afford ({_gpu_budget_envs()}); "
        "`python scripts/hivex_results.py run --gpu` trains "
        "it with the env's GPU config (`configs/ippo_<env>_gpu.yaml`, no early stop), whose time on a GPU "
        "is not measured yet.",
        "",
        "## Cells not run",
        "",
        f"{_count_complete(results)} of {_count_published()} published cells have both our results "
        "(held-out and HIVEX protocol).",
        "",
        *not_run_lines(results),
        "",
        *(compute or []),
    ]
    for env_id in HIVEX_ENVS:
        out += env_section(env_id, results, mappo)
    return "\n".join(out).rstrip() + "\n"


def provenance(records: dict[Cell, dict[str, Any]]) -> str:
    """One line: the dates, backends and JAX versions our cells were measured with (from their records;
    "" when there are none)."""
    dates = {d for r in records.values() for d in r.get("measured_on", {}).values()}
    setups = {
        f"JAX {r['summary'].get('jax_version', '?')} on {r['summary'].get('backend', '?')}"
        for r in records.values()
        if "summary" in r
    }
    if not dates:
        return ""
    return (
        f"Our cells were measured on {', '.join(sorted(dates))}"
        + (f" with {', '.join(sorted(setups))}" if setups else "")
        + " (the project's 2-core CPU machine unless a summary says otherwise)."
    )


def _gpu_budget_envs() -> str:
    """Which cells are left to a GPU, in words: "Aerial Wildfire Suppression tasks 1–8"."""
    parts = []
    for env_id, info in HIVEX_ENVS.items():
        tasks = gpu_budget_tasks(env_id)
        if tasks:
            parts.append(f"{info.name} task{'s' if len(tasks) > 1 else ''} {_ranges(tasks)}")
    return ", ".join(parts) or "none"


def measured_cells(page: str) -> list[Cell]:
    """The cells a rendered page shows any of our results for, in its order: the rows of each env's
    results table whose comparable? column is not "not run" or `GPU_BUDGET`."""
    found, env_id, in_table = [], None, False
    for line in page.splitlines():
        heading = re.fullmatch(r"## .* \(`(.+)`\)", line)
        if heading:
            env_id, in_table = heading.group(1), False
        elif line.startswith("| task | "):
            in_table = "ippo"
        elif line.startswith("| main task, "):
            in_table = "mappo"
        elif not line.startswith("|"):
            in_table = False
        elif in_table and env_id in HIVEX_ENVS and not line.startswith("|---"):
            columns = [c.strip() for c in line.strip().strip("|").split("|")]
            if in_table == "ippo" and columns[-1] not in ("not run", GPU_BUDGET):
                level = None if columns[1] == "—" else int(columns[1])
                found.append(Cell(env_id, int(columns[0].split()[0]), level))
            elif in_table == "mappo" and columns[2] != "—":
                found.append(Cell(env_id, 0, None if columns[0] == "—" else int(columns[0]), "mappo"))
    return found


def write_page(
    records_dir: str | Path, out: str | Path, command: str, allow_fewer: bool = False
) -> tuple[Path, int]:
    """Render the page from the records under `records_dir` (regenerated by `command`) into `out`, and the
    trend figures it links into `images/` beside it (`write_trend_figures`); returns the file and how many
    cells had records. ValueError (one line, naming them) when a cell the page on
    disk shows our results for would vanish, unless `allow_fewer`."""
    records = load_records(records_dir)
    results = {cell: record_result(record) for cell, record in records.items()}
    text = render_page(results, command, provenance(records), records_dir, compute_lines(records))
    results = {cell: result for cell, result in results.items() if cell.algo == "ippo"}  # the trends
    out = Path(out)
    if out.is_file() and not allow_fewer:
        before = measured_cells(out.read_text(encoding="utf-8"))
        refusal = vanished("page", out, before, measured_cells(text), _group)
        if refusal:
            raise ValueError(refusal)
    write_trend_figures(one_budget(results)[0], out.parent / "images")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    write_csvs(records, Path(records_dir).parent)
    return out, len(records)
