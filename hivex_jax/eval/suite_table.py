"""The whole suite's learning results as one table: every env x {IPPO, MAPPO}, trained with
its shipped config into `OUT_DIR/<algo>_<env>/` (`scripts/suite_results.py run`) and evaluated on held-out
worlds 6000-6031. Per cell and policy (greedy, stochastic), one row: the held-out return (mean over worlds,
then mean +- 95 % CI over seeds, Student t), the fraction of the scripted controller's return on the same
worlds (per seed: seed mean / scripted mean; then mean and 95 % CI over seeds, Student t;
`score.fraction_of_scripted`, so "—" where the scripted return is not positive), the lowest seed's fraction,
where the record holds random's return the normalised score (`score.normalised_score` of each seed's mean by
the scripted and random means; mean and 95 % CI over seeds), the env's learning target (`ENVS`: a fraction
of scripted on the mean over 5 seeds, what a shipped config must reach without crutches) and the cell's extra
rule (`EXTRA_RULES`: Drone-Based Reforestation every seed >= 0.75, Ocean Plastic Collection at most 0.10
vessel collisions per vessel per episode), whether the row meets both ("met"; when not, which part failed),
the statistic an extra rule reads ("notes"), seeds x worlds, env steps per seed and the run's wall time
(compile + train + final evaluation, from summary.json, which holds no CPU time), and (`table` given each
record's `ConfigCheck`) whether the record is of the config the cell would train with now ("config":
current, changed †, not recorded ‡; what changed below the table).

Run folders are machine-local (`runs/` is git-ignored), so the table renders from each cell's committed
record, `RECORDS_DIR/<algo>_<env>.json` (`cell_record`: what the table shows of the cell, its per-seed means,
and where, when and with what it was measured; `result_records`), written as each cell finishes or imported
from run folders (`record_folders`). `write_between_markers` refuses to drop a cell the page's table shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval.result_records import (
    CONFIG_CHANGED,
    CONFIG_MARKS,
    CONFIG_NOT_RECORDED,
    FORMAT_VERSION,
    RECORDS_ROOT,
    ConfigCheck,
    config_legend,
    file_date,
    portable_path,
    portable_summary,
    read_json,
    read_record,
    vanished,
    write_record,
)
from hivex_jax.eval.score import (
    SCRIPTED_NOT_POSITIVE,
    format_score,
    fraction_of_scripted,
    normalised_score,
    over_seeds,
    scripted_beats_random,
)
from hivex_jax.eval.stats import mean_ci95, mean_ci_text

TEST_WORLDS = "6000:6032"
#: training seeds per cell (the targets are on the mean of 5 seeds, with the lowest seed reported); the
#: shipped configs train 3, `run` passes `num_seeds=5`
SUITE_SEEDS = 5
MARKER_START, MARKER_END = "<!-- suite-results:start -->", "<!-- suite-results:end -->"
#: short name -> (config stem, the learning target: the mean over seeds of the fraction of scripted)
ENVS = {
    "wfc": ("wind_farm_control", 0.92),
    "wrm": ("wildfire_resource_management", 0.95),
    "dbr": ("drone_based_reforestation", 0.85),
    "opc": ("ocean_plastic_collection", 0.6),
    "aws": ("aerial_wildfire_suppression", 1.0),
}


@dataclass(frozen=True)
class ExtraRule:
    """A cell's condition beyond its target, per row: a value (the lowest seed's fraction of scripted, or a
    statistic's mean over seeds) at least or at most `bound`."""

    #: how the table names the value ("lowest seed", "collided")
    label: str
    bound: float
    #: the value must be <= bound (else >= bound)
    at_most: bool = False
    #: the `stats` entry of eval.json whose mean over seeds (of each seed's mean over worlds) it reads;
    #: None: the lowest seed's fraction of scripted
    stat: str | None = None

    def value(self, row: dict[str, Any]) -> float | None:
        """The value the rule reads from a table row; None when the record does not hold it."""
        if self.stat is None:  # no fraction where the scripted return is not positive
            return row["lowest_seed"] if np.isfinite(row["lowest_seed"]) else None
        return row["stats"].get(self.stat)

    def holds(self, value: float) -> bool:
        """Whether `value` meets the rule."""
        return value <= self.bound if self.at_most else value >= self.bound

    def __str__(self) -> str:
        return f"{self.label} {'≤' if self.at_most else '≥'} {self.bound:.2f}"


#: the conditions beyond the target (short name -> rule); cells not named have none
EXTRA_RULES = {
    "dbr": ExtraRule("lowest seed", 0.75),
    "opc": ExtraRule("collided", 0.10, at_most=True, stat="vessel_collisions"),
}
ALGOS = ("ippo", "mappo")
#: the committed records of the suite's cells
RECORDS_DIR = RECORDS_ROOT / "suite"
#: the page whose `<!-- suite-results -->` markers hold the table (`table --write RESULTS_PAGE`)
RESULTS_PAGE = Path("docs/results.md")


def cells(spec: str | None) -> list[tuple[str, str]]:
    """`[(algo, env short name)]` from SPEC (`ALGO:ENV,...`), or every cell; ValueError for a bad one."""
    if not spec:
        return [(a, e) for e in ENVS for a in ALGOS]
    out = []
    for part in spec.split(","):
        algo, _, env = part.strip().partition(":")
        if algo not in ALGOS or env not in ENVS:
            raise ValueError(
                f"bad cell {part!r}: expected ALGO:ENV with ALGO in {ALGOS}, ENV in {list(ENVS)}"
            )
        out.append((algo, env))
    return out


def cell_name(algo: str, env: str) -> str:
    """The cell's run folder name under OUT_DIR: `<algo>_<env>`."""
    return f"{algo}_{env}"


def cell_config(algo: str, env: str) -> str:
    """The cell's shipped config file name under configs/."""
    return f"{algo}_{ENVS[env][0]}.yaml"


def cell_record(
    algo: str, env: str, run_dir: Path, config: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The record of a finished cell's run folder (None: no `eval.json`): the cell, the folder it came from
    (`portable_path`: relative to the working directory), `summary.json` as is but for its folder
    (`portable_summary`; JAX version, backend, compile/train/eval seconds), the date it was measured
    (`measured_on`: when `summary.json`, else `eval.json`, was written) and of `eval.json` its header (all
    but the policies) and per policy what the table renders: greedy and stochastic the mean return of each
    seed over the worlds (`seed_means`) and of each entry of the worlds' `stats` (`stats_seed_means`:
    {name: [per seed]}, e.g. Ocean Plastic Collection's `vessel_collisions`, collisions per vessel per
    episode), scripted and random the mean over the worlds (`world_mean`), each with its world count and
    summary; and, when given, the config the run trained with (`config`, the trainer's
    `baselines.studies.config_fingerprint.config_block`)."""
    held_path, summary_path = run_dir / "eval.json", run_dir / "summary.json"
    results, summary = read_json(held_path), read_json(summary_path)
    if results is None:
        return None
    policies = results["policies"]
    held: dict[str, Any] = {k: v for k, v in results.items() if k != "policies"}
    held["policies"] = {}
    for policy in ("greedy", "stochastic"):
        per_world = policies[policy]["per_world"]
        per_seed_world = np.array([w["return_per_seed"] for w in per_world]).T
        # a statistic every world holds: {name: [per seed]}, each seed's mean over the worlds
        names = set.intersection(*(set(w.get("stats", {})) for w in per_world)) if per_world else set()
        held["policies"][policy] = {
            "seed_means": per_seed_world.mean(axis=1).tolist(),  # [seeds]
            "stats_seed_means": {
                name: np.mean([w["stats"][name] for w in per_world], axis=0, dtype=np.float64).tolist()
                for name in sorted(names)
            },
            "num_worlds": int(per_seed_world.shape[1]),
        }
    for baseline in ("scripted", "random"):  # random: the normalised score's zero (records since it is kept)
        if baseline in policies:
            returns = [w["return_mean"] for w in policies[baseline]["per_world"]]
            held["policies"][baseline] = {"world_mean": float(np.mean(returns)), "num_worlds": len(returns)}
    for policy, entry in held["policies"].items():
        if policies[policy].get("summary"):
            entry["summary"] = policies[policy]["summary"]
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "cell": {"algo": algo, "env": env},
        "source": portable_path(run_dir),
        "measured_on": {"held_out": file_date(summary_path if summary else held_path)},
        "held_out": held,
    }
    if summary:
        record["summary"] = portable_summary(summary)
    if config is not None:
        record["config"] = config
    return record


def record_path(records_dir: str | Path, algo: str, env: str) -> Path:
    """A cell's record file: `RECORDS_DIR/<algo>_<env>.json`."""
    return Path(records_dir) / f"{cell_name(algo, env)}.json"


def record_cell(
    algo: str, env: str, run_dir: Path, records_dir: str | Path, config: dict[str, Any] | None = None
) -> tuple[Path, bool] | None:
    """Write (or refresh) the record of a cell's run folder (with `config`, the config it trained with, when
    given); `(its file, whether it changed)`, or None when the cell is not finished."""
    record = cell_record(algo, env, run_dir, config)
    if record is None:
        return None
    path = record_path(records_dir, algo, env)
    return path, write_record(path, record)


def record_folders(
    out_dir: str | Path,
    records_dir: str | Path,
    todo: list[tuple[str, str]] | None = None,
    config_of: Callable[[str, str, Path], dict[str, Any] | None] | None = None,
) -> list[tuple[str, str, Path | None, bool]]:
    """Record the finished cells (of `todo`, default every cell) under `out_dir`, each with
    `config_of(algo, env, run folder)`, the config it trained with, when given: `[(algo, env, record file or
    None if not finished, changed)]`."""
    done = []
    for algo, env in todo or cells(None):
        run_dir = Path(out_dir) / cell_name(algo, env)
        config = config_of(algo, env, run_dir) if config_of and (run_dir / "eval.json").is_file() else None
        written = record_cell(algo, env, run_dir, records_dir, config)
        done.append((algo, env, *(written or (None, False))))
    return done


def load_records(records_dir: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """`{(algo, env): record}` of every cell with a record under `records_dir`."""
    found = {}
    for algo, env in cells(None):
        path = record_path(records_dir, algo, env)
        if path.is_file():
            found[(algo, env)] = read_record(path)
    return found


def load_run_folders(out_dir: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """`{(algo, env): record}` of every finished cell under `out_dir`, as `cell_record` makes them."""
    found = {}
    for algo, env in cells(None):
        record = cell_record(algo, env, Path(out_dir) / cell_name(algo, env))
        if record is not None:
            found[(algo, env)] = record
    return found


def record_rows(record: dict[str, Any], target: float, rule: ExtraRule | None = None) -> list[dict[str, Any]]:
    """The table rows (greedy, stochastic) of one cell's record, each with whether it meets `target` (the
    mean over seeds of the fraction of scripted) and `rule` (`met`: True, False or None, unknown: the record
    lacks the statistic the rule reads) and, when not, which part failed (`failed`)."""
    held, summary = record["held_out"], record.get("summary", {})
    scripted = float(held["policies"]["scripted"]["world_mean"])
    random = held["policies"].get("random", {}).get("world_mean")  # records before random was kept: none
    wall = sum(float(summary.get(k) or 0.0) for k in ("compile_s", "train_s", "eval_s"))
    rows = []
    for policy in ("greedy", "stochastic"):
        seed_means = np.asarray(held["policies"][policy]["seed_means"], np.float64)
        ret, ret_ci = mean_ci95(seed_means)
        fractions = fraction_of_scripted(seed_means, scripted)  # NaN unless the scripted return is positive
        frac, frac_ci = mean_ci95(fractions) if np.isfinite(fractions).all() else (np.nan, np.nan)
        normalised = None if random is None else over_seeds(normalised_score(seed_means, scripted, random))
        # records made before stats_seed_means was kept: no statistic, so a rule reading one is unknown
        stats = held["policies"][policy].get("stats_seed_means", {})
        row = {
            "env_id": held["env_id"],
            "algo": held["algo"],
            "policy": policy,
            "return": float(ret),
            "return_ci95": float(ret_ci),
            "scripted": scripted,
            "fraction": float(frac),
            "fraction_ci95": float(frac_ci),
            "lowest_seed": float(np.min(fractions)),
            "random": random,
            # mean and Student-t CI over seeds of each seed's normalised score; None without random's
            # return or where scripted does not beat random
            "normalised": normalised,
            "stats": {name: float(np.mean(per_seed)) for name, per_seed in stats.items()},
            "target": target,
            "num_seeds": int(len(seed_means)),
            "num_worlds": int(held["policies"][policy]["num_worlds"]),
            "env_steps_per_seed": int(held["env_steps_per_seed"]),
            "wall_s": wall,
            "backend": summary.get("backend", "?"),
            "jax_version": summary.get("jax_version", "?"),
        }
        rows.append({**row, **verdict(row, target, rule)})
    return rows


def verdict(row: dict[str, Any], target: float, rule: ExtraRule | None) -> dict[str, Any]:
    """Whether a row meets its target and extra rule: `met` (True, False, or None: the rule's value is not
    recorded and the target is met) and `failed`, the parts that did not hold ("mean 0.949": 3 decimals, as
    a mean just under its target reads as the target at 2; "lowest seed 0.71"; "collided ?"); plus the
    rule's value (`rule_value`, None without a rule or value)."""
    if not np.isfinite(row["fraction"]):
        failed = [SCRIPTED_NOT_POSITIVE]
    else:
        failed = [] if row["fraction"] >= target else [f"mean {row['fraction']:.3f}"]
    value = rule.value(row) if rule else None
    unknown = rule is not None and value is None
    if rule is not None and value is None:
        failed.append(f"{rule.label} ?")
    elif rule is not None and value is not None and not rule.holds(value):
        failed.append(f"{rule.label} {value:.2f}")
    met = None if unknown and len(failed) == 1 else not failed
    return {"met": met, "failed": failed, "rule_value": value}


def met_text(row: dict[str, Any]) -> str:
    """A row's "met" cell: "yes", "?" (with the unknown part) or "no (the parts that failed)"."""
    if row["met"]:
        return "yes"
    return f"{'?' if row['met'] is None else 'no'} ({'; '.join(row['failed'])})"


def table(
    records: dict[tuple[str, str], dict[str, Any]], checks: dict[tuple[str, str], ConfigCheck] | None = None
) -> str:
    """The Markdown table of the cells' records (`{(algo, env): record}`): per cell a greedy and a
    stochastic row (columns: the module docstring's), then the cells not run yet; with `checks` (how each
    record stands against its cell's shipped config now) a last column, config, and below the table what
    its marks mean and what changed."""
    # the normalised score's column where a record holds random's return (records since it is kept)
    normalised = any("random" in r["held_out"]["policies"] for r in records.values())
    lines = [
        "| env | algo | policy | held-out return | scripted | fraction of scripted (95 % CI) | lowest seed "
        + ("| normalised score (95 % CI) " if normalised else "")
        + "| target | met | notes | seeds x worlds | env steps per seed | wall s (run) |"
        + (" config |" if checks is not None else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        + ("---|" if normalised else "")
        + ("---|" if checks is not None else ""),
    ]
    missing = []
    for env, (_stem, target) in ENVS.items():
        rule = EXTRA_RULES.get(env)
        for algo in ALGOS:
            if (algo, env) not in records:
                missing.append(f"{algo}:{env}")
                continue
            for r in record_rows(records[(algo, env)], target, rule):
                wanted = f"{target:g}" + (f", {rule}" if rule else "")
                notes = ""  # the statistic a rule reads (the lowest seed has its own column)
                if rule and rule.stat:
                    value = r["rule_value"]
                    notes = f"{rule.label} {'?' if value is None else f'{value:.2f}'}"
                lines.append(
                    f"| {r['env_id']} | {r['algo'].upper()} | {r['policy']} | "
                    f"{mean_ci_text(r['return'], r['return_ci95'], r['num_seeds'])} | {r['scripted']:.1f} | "
                    f"{_fraction_text(r)} | "
                    f"{format_score(r['lowest_seed'], 2, '—')} | "
                    + (f"{_normalised_text(r)} | " if normalised else "")
                    + f"{wanted} | "
                    f"{met_text(r)} | {notes} | {r['num_seeds']} x {r['num_worlds']} | "
                    f"{r['env_steps_per_seed']:,} | {r['wall_s']:.0f} ({r['backend']}, "
                    f"jax {r['jax_version']}) |"
                    + (f" {_config_text(checks.get((algo, env)))} |" if checks is not None else "")
                )
    if missing:
        lines.append("")
        lines.append("Not run yet: " + ", ".join(missing) + ".")
    if checks is not None:
        lines += _config_notes({cell: check for cell, check in checks.items() if cell in records})
    return "\n".join(lines)


def _config_text(check: ConfigCheck | None) -> str:
    """A row's config cell: "current", "changed †" or "not recorded ‡" (`result_records.CONFIG_MARKS`)."""
    if check is None:
        return "—"
    mark = CONFIG_MARKS.get(check.state)
    return f"{check.state} {mark}" if mark else check.state


def _config_notes(checks: dict[tuple[str, str], ConfigCheck]) -> list[str]:
    """Below the table: what the config column says, what its marks mean, what changed in each changed cell
    and why a record names no config."""
    legend = config_legend(checks.values())
    lines = [
        "",
        "Config: whether each cell's record is of the config the cell would train with now, its shipped "
        "config with the suite's settings (`run`'s): current, changed or not recorded (its record's "
        "`config`)." + (f" {legend}" if legend else ""),
    ]
    for (algo, env), check in checks.items():
        if check.state == CONFIG_CHANGED:
            lines.append(f"- {algo}:{env} {CONFIG_MARKS[CONFIG_CHANGED]}: {'; '.join(check.changes)}")
        elif check.state == CONFIG_NOT_RECORDED:
            lines.append(f"- {algo}:{env} {CONFIG_MARKS[CONFIG_NOT_RECORDED]}: {check.source}")
    return lines


def _fraction_text(row: dict[str, Any]) -> str:
    """A row's fraction of scripted "mean ± CI", or "—" where the scripted return is not positive."""
    if not np.isfinite(row["fraction"]):
        return "—"
    return mean_ci_text(row["fraction"], row["fraction_ci95"], row["num_seeds"], digits=2)


def _normalised_text(row: dict[str, Any]) -> str:
    """A row's normalised score "mean ± CI"; "—" where the record has no random return, or where the
    scripted controller does not beat random (said so)."""
    if row["normalised"] is not None:
        return mean_ci_text(row["normalised"]["mean"], row["normalised"]["ci95"], row["num_seeds"], digits=2)
    if row["random"] is not None and not scripted_beats_random(row["scripted"], row["random"]):
        return "— (scripted does not beat random)"
    return "—"


def measured_cells(text: str) -> list[str]:
    """The cells a table shows results of ("IPPO WindFarmControl-v0"), in its order."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()]
    return list(dict.fromkeys(f"{r[1]} {r[0]}" for r in rows if len(r) > 2 and r[1].lower() in ALGOS))


def write_between_markers(path: Path, text: str, allow_fewer: bool = False) -> None:
    """Replace what lies between the suite-results markers of `path` by `text`. ValueError: no markers, or
    (one line, naming them, unless `allow_fewer`) a cell the table there shows would vanish."""
    page = path.read_text(encoding="utf-8")
    if MARKER_START not in page or MARKER_END not in page:
        raise ValueError(f"{path} has no {MARKER_START} ... {MARKER_END} markers")
    head, rest = page.split(MARKER_START, 1)
    old, tail = rest.split(MARKER_END, 1)
    refusal = vanished("table", path, measured_cells(old), measured_cells(text))
    if refusal and not allow_fewer:
        raise ValueError(refusal)
    path.write_text(f"{head}{MARKER_START}\n{text}\n{MARKER_END}{tail}", encoding="utf-8")
