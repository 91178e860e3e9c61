"""The page of HIVEX's published results beside ours (docs/hivex_results.md), rendered from the published
tables (`hivex_published`), each env's metadata (`hivex_cells`) and the committed record of each cell we
measured (`hivex_records`: `RECORDS_DIR/<env id>/task<t>[_level<l>].json`; `result_records`).

`write_page` renders the page from the records alone (`render_page`: the header, the cells not run and
what our cells cost, then each env's section, `results_sections`), refusing to drop a measured cell the
page on disk shows, with the level-trend figures it links (`results_trends`: `images/hivex_trend_<short>.png`
beside the page) and the tables for code (`results_csv`). Given how each record stands against its cell's
config now (`result_records.ConfigCheck`, computed by the trainer's study), it marks the cells not of it
and lists them (`config_lines`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hivex_jax.eval.hivex_cells import (
    GPU_BUDGET,
    HIVEX_ENVS,
    Cell,
    default_cells,
    gpu_budget_spec,
    gpu_budget_tasks,
    published_cells,
)
from hivex_jax.eval.hivex_published import load_published, required_table
from hivex_jax.eval.hivex_records import RECORDS_DIR, load_records, record_cell, record_folders, record_result
from hivex_jax.eval.result_records import (
    CONFIG_CHANGED,
    CONFIG_CURRENT,
    CONFIG_MARKS,
    CONFIG_NOT_RECORDED,
    ConfigCheck,
    config_legend,
    vanished,
)
from hivex_jax.eval.results_csv import CELLS_FILE, SEEDS_FILE, write_csvs
from hivex_jax.eval.results_format import cells_text, ranges
from hivex_jax.eval.results_sections import env_section
from hivex_jax.eval.results_trends import one_budget, write_trend_figures
from hivex_jax.eval.results_variants import load_variants

# record_cell, record_folders and RECORDS_DIR are the trainer's `scripts/hivex_results.py` entry points,
# imported from here
__all__ = [
    "RECORDS_DIR",
    "compute_lines",
    "config_lines",
    "measured_cells",
    "not_run_lines",
    "provenance",
    "record_cell",
    "record_folders",
    "render_page",
    "write_page",
]


def not_run_lines(results: dict[Cell, dict[str, Any]]) -> list[str]:
    """The cells not run: default cells missing a result first, then every published cell not run, by env
    (a cell counts as run when both eval.json and eval_hivex.json exist)."""
    complete = {c for c, r in results.items() if r.get("held_out") and r.get("hivex")}
    missing = [c for c in default_cells() if c not in complete]
    if missing:
        line = "- of the default cells (`run` without `--cells`): " + cells_text(missing)
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
        text = cells_text(left, with_env=False) if left else ("all run" if not gpu else "")
        if gpu:
            text += (
                ("; " if text else "")
                + f"{GPU_BUDGET} (`python scripts/hivex_results.py run --gpu --fuse --cells "
                + f"{gpu_budget_spec(env_id)}`): "
                + cells_text(gpu, with_env=False)
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


def _algo_cells_text(cells: list[Cell]) -> str:
    """Cells grouped by algo, env and task: "IPPO WindFarmControl-v0 task 0 patterns 3–8; MAPPO ..."."""
    return "; ".join(
        f"{algo.upper()} {cells_text(sorted(c for c in cells if c.algo == algo))}"
        for algo in sorted({c.algo for c in cells})
    )


def config_lines(checks: dict[Cell, ConfigCheck]) -> list[str]:
    """The page's section on which config made each record (`checks`: how each record stands against the
    config its cell would train with now): how many are current, then the changed cells grouped by what
    changed and the cells whose record names no config grouped by why; nothing without checks."""
    if not checks:
        return []
    count = {
        state: sum(1 for c in checks.values() if c.state == state)
        for state in (CONFIG_CURRENT, *CONFIG_MARKS)
    }
    changed: dict[tuple[str, ...], list[Cell]] = {}
    unknown: dict[str, list[Cell]] = {}
    for cell, check in sorted(checks.items()):
        if check.state == CONFIG_CHANGED:
            changed.setdefault(check.changes, []).append(cell)
        elif check.state == CONFIG_NOT_RECORDED:
            unknown.setdefault(check.source, []).append(cell)
    mark_changed, mark_unknown = CONFIG_MARKS[CONFIG_CHANGED], CONFIG_MARKS[CONFIG_NOT_RECORDED]
    return [
        "## Configs of the records",
        "",
        "Each record names the config its run trained with (its `config`: the learning keys of the resolved "
        "config, the env's version and a fingerprint of both, `baselines.studies.config_fingerprint`); "
        "`page` compares it with the config the cell would train with now (its shipped config with the "
        "cell's settings, as `run` trains it). "
        f"{count[CONFIG_CURRENT]} of {len(checks)} recorded cells are of the config they would train with "
        f"now; {count[CONFIG_CHANGED]} changed since ({mark_changed} after the cell's level in its env's "
        f"table and after its greedy value in the MAPPO table); {count[CONFIG_NOT_RECORDED]} do not say "
        f"({mark_unknown}). A marked cell's numbers are of the config it had then; `run --retrain-stale` "
        "retrains a changed cell whose run folder is on this machine.",
        "",
        *[
            f"- {mark_changed} {_algo_cells_text(cells)}: {'; '.join(what)}"
            for what, cells in changed.items()
        ],
        *[f"- {mark_unknown} {_algo_cells_text(cells)}: {why}" for why, cells in unknown.items()],
        *([""] if changed or unknown else []),
    ]


def _count_published() -> int:
    """How many (env, task, level) cells HIVEX published a test mean for."""
    envs = load_published()["envs"]
    return sum(len(required_table(e, "test_mean")["rows"]) * len(envs[e]["levels"]) for e in envs)


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
    checks: dict[Cell, ConfigCheck] | None = None,
    variants: dict[str, list[dict[str, Any]]] | None = None,
) -> str:
    """The whole page as markdown: `results` as `load_results` reads them, regenerated by `command`, the
    `provenance` line (if any) and the records folder named in the text; MAPPO cells (in `mappo` or in
    `results`) fill the MAPPO tables only; with `checks` (how each record stands against its cell's config
    now) the cells not of it marked, a legend line and a section on the records' configs (`config_lines`);
    `variants` (per env id, `results_variants.load_variants`) each env's runs at a larger budget."""
    mappo = {**(mappo or {}), **{c: r for c, r in results.items() if c.algo == "mappo"}}
    results = {c: r for c, r in results.items() if c.algo == "ippo"}
    legend = config_legend((checks or {}).values())
    gpu_envs = _gpu_budget_envs()
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
        "policy)."
        + (
            f" {GPU_BUDGET} = a cell the 2-core CPU cannot afford ({gpu_envs}); "
            "`python scripts/hivex_results.py run --gpu` trains "
            "it with the env's GPU config (`configs/ippo_<env>_gpu.yaml`, no early stop), whose time on a "
            "GPU is not measured yet."
            if gpu_envs != "none"
            else ""
        ),
        *(
            [f"- {legend} Which cells and what changed: the section on the records' configs."]
            if legend
            else []
        ),
        "",
        "## Cells not run",
        "",
        f"{_count_complete(results)} of {_count_published()} published cells have both our results "
        "(held-out and HIVEX protocol).",
        "",
        *not_run_lines(results),
        "",
        *config_lines(checks or {}),
        *(compute or []),
    ]
    for env_id in HIVEX_ENVS:
        out += env_section(env_id, results, mappo, checks, (variants or {}).get(env_id))
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
            parts.append(f"{info.name} task{'s' if len(tasks) > 1 else ''} {ranges(tasks)}")
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
                level_text = columns[1].split()[0]  # "3", "3 †" (a config mark), "—"
                level = None if level_text == "—" else int(level_text)
                found.append(Cell(env_id, int(columns[0].split()[0]), level))
            elif in_table == "mappo" and columns[2] != "—":
                found.append(Cell(env_id, 0, None if columns[0] == "—" else int(columns[0]), "mappo"))
    return found


def write_page(
    records_dir: str | Path,
    out: str | Path,
    command: str,
    allow_fewer: bool = False,
    checks: dict[Cell, ConfigCheck] | None = None,
) -> tuple[Path, int]:
    """Render the page from the records under `records_dir` (regenerated by `command`; with `checks`, how
    each record stands against its cell's config now) into `out`, and the trend figures it links into
    `images/` beside it (`write_trend_figures`); returns the file and how many cells had records. ValueError
    (one line, naming them) when a cell the page on disk shows our results for would vanish, unless
    `allow_fewer`."""
    records = load_records(records_dir)
    results = {cell: record_result(record) for cell, record in records.items()}
    variants = {env_id: load_variants(records_dir, env_id) for env_id in HIVEX_ENVS}
    text = render_page(
        results,
        command,
        provenance(records),
        records_dir,
        compute_lines(records),
        checks=checks,
        variants=variants,
    )
    results = {cell: result for cell, result in results.items() if cell.algo == "ippo"}  # the trends
    out = Path(out)
    if out.is_file() and not allow_fewer:
        before = measured_cells(out.read_text(encoding="utf-8"))
        refusal = vanished("page", out, before, measured_cells(text), cells_text)
        if refusal:
            raise ValueError(refusal)
    write_trend_figures(one_budget(results)[0], out.parent / "images")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    write_csvs(records, Path(records_dir).parent, checks)
    return out, len(records)
