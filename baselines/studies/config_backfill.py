"""The `config` of result records made before records kept one, backfilled from git where that can be
done honestly, else marked "config not recorded" (`scripts/backfill_record_configs.py`).

A record made before names no commit and no config, only the day its run ended (`measured_on`) and how
long it ran (`summary`). What is known: its numbers were first committed in commit C (`record_commit`),
so its run read its config between the start of its window (midnight of the day it ended, less its
compile, training and evaluation time and `MARGIN_S`) and C (`run_window`). Each commit in that window
that could change a cell's resolved config or env version (`CONFIG_PATHS`), and the state at its start,
is a candidate: the cell's shipped config and its settings resolved there by that commit's own code
(`resolve_at`), and the env version of that commit's golden rollouts. Candidates whose config contradicts
what the record shows of its run (`contradictions`: algo, env, task, level, seeds, envs, env steps,
updates, evaluation seed, held-out worlds) are dropped. When every remaining candidate has the same
fingerprint, the record gets that config (`fingerprint_source: backfilled from commit X ...`); when none
remains (the run had command-line overrides the shipped config lacks) or they differ (the config changed
in the window in a way the record does not show), it is marked not recorded, saying which.

What this cannot see: a config edited in the working tree but not committed before C, and command-line
overrides of keys the record does not show (lr, say). A backfilled config says so.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hivex_jax
from baselines.config import IPPOConfig, MAPPOConfig
from baselines.studies.config_fingerprint import (
    config_block,
    config_changes,
    defaults_of,
    not_recorded,
)
from baselines.studies.config_resolve import Candidate, resolve_at
from hivex_jax.eval.hivex_cells import cell_of_dirname
from hivex_jax.eval.hivex_records import RECORDS_DIR as HIVEX_RECORDS
from hivex_jax.eval.result_records import read_record, write_record
from hivex_jax.eval.suite_table import RECORDS_DIR as SUITE_RECORDS
from hivex_jax.eval.suite_table import cell_config as suite_config

#: the paths a commit must touch to change a cell's resolved config or its env's version: the configs, the
#: config code (its layouts over time), the cells' settings and the golden rollouts
CONFIG_PATHS = (
    "configs",
    "baselines/config.py",
    "baselines/config_schema.py",
    "baselines/config_checks.py",
    "baselines/config_env.py",
    "baselines/config",
    "hivex_jax/eval/hivex_cells.py",
    "hivex_jax/eval/suite_table.py",
    "scripts/hivex_results.py",
    "scripts/suite_results.py",
    "tests/envs/golden_rollouts.json",
)
#: slack before a run's start as its record shows it (a resumed run read its config at its first start)
MARGIN_S = 3 * 3600


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def numbers(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a record measured: all but where it was recorded from (`source`, `summary.run_dir`) and its
    `config`, which later rewrites of the same numbers changed."""
    kept = {k: v for k, v in record.items() if k not in ("source", "config")}
    if "summary" in kept:
        kept["summary"] = {k: v for k, v in kept["summary"].items() if k != "run_dir"}
    return kept


def record_commit(repo: Path, path: Path) -> tuple[str, int] | None:
    """The commit (hash, commit time) that first committed a record's current numbers (`numbers`): the
    oldest of the file's latest versions with the same numbers; None for a file git does not hold."""
    current = numbers(json.loads(path.read_text(encoding="utf-8")))
    log = _git(repo, "log", "--follow", "--format=@%H %ct", "--name-only", "--", str(path.relative_to(repo)))
    entries, header = [], None
    for line in filter(None, log.splitlines()):  # "@<hash> <time>", then the file's name in that commit
        if line.startswith("@"):
            header = line[1:].split()
        elif header is not None:
            entries.append((*header, line))
            header = None
    found = None
    for sha, when, name in entries:  # newest first
        try:
            then = json.loads(_git(repo, "show", f"{sha}:{name}"))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            break
        if numbers(then) != current:
            break
        found = (sha, int(when))
    return found


def run_window(record: Mapping[str, Any], committed: int) -> tuple[int, int]:
    """The span (Unix seconds) in which a record's run read its config: from midnight (UTC) of the earliest
    day it names, less its compile, training and evaluation seconds and `MARGIN_S`, to its commit's time."""
    day = min((record.get("measured_on") or {}).values(), default=None)
    if day is None:
        return committed - 86400, committed
    midnight = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC).timestamp()
    summary = record.get("summary") or {}
    ran = sum(float(summary.get(k) or 0.0) for k in ("compile_s", "train_s", "eval_s"))
    return int(midnight - ran - MARGIN_S), committed


def contradictions(record: Mapping[str, Any], candidate: Candidate) -> list[str]:
    """How a candidate config contradicts what a record shows of its run ("num_seeds 3 != 5"): algo, env,
    task, level, seeds, envs, env steps per seed, updates done, evaluation seed, held-out worlds."""
    values, held, summary = candidate.values or {}, record.get("held_out") or {}, record.get("summary") or {}
    found = []

    def differ(name: str, shown: Any, config: Any) -> None:
        line = f"{name} {shown!r} != {config!r}"
        if shown is not None and shown != config and line not in found:  # seeds: in both parts
            found.append(line)

    for key in ("algo", "env_id", "task", "num_seeds", "eval_seed"):
        differ(key, held.get(key), values.get(key))
    if values.get("level") is not None:
        differ("level", held.get("level"), values.get("level"))
    differ("num_seeds", summary.get("num_seeds"), values.get("num_seeds"))
    differ("num_envs", summary.get("num_envs"), values.get("num_envs"))
    differ("env_steps_per_seed", held.get("env_steps_per_seed"), candidate.env_steps)
    if held.get("worlds") and values.get("test_worlds"):
        start, _, stop = str(values["test_worlds"]).partition(":")
        if stop:
            differ("worlds", f"{held['worlds'][0]}:{held['worlds'][-1] + 1}", f"{int(start)}:{int(stop)}")
    done, total = summary.get("updates_done"), candidate.num_updates
    if done is not None and total is not None:
        if done > total or (values.get("stop_at_test_return") is None and done != total):
            found.append(f"updates_done {done} of {total}")
    return found


#: errors of a commit whose state could not have trained a run: its own config code does not import (one
#: of a series of commits split from one working tree), or the cell's config file is not there yet
COULD_NOT_TRAIN = (
    "ModuleNotFoundError: No module named 'baselines",
    "ModuleNotFoundError: No module named 'hivex_jax",
)


def _could_not_train(candidate: Candidate) -> bool:
    error = candidate.error or ""
    return error.startswith(COULD_NOT_TRAIN) or (
        error.startswith("ConfigError") and "does not exist" in error
    )


def choose(
    record: Mapping[str, Any], candidates: list[Candidate], defaults: Mapping[str, Any]
) -> tuple[Candidate | None, str]:
    """The candidate a record's config is backfilled from, and a note: the latest of those that could have
    trained the run (`_could_not_train`) and are consistent with the record (`contradictions`), when no
    other of them differs from it in a learning key or the env version (`config_changes`: a key an earlier
    commit lacks is the same at its default, `defaults`); else None and why (one that failed otherwise to
    resolve, none consistent, or consistent ones that differ)."""
    failed = [c for c in candidates if c.error is not None and not _could_not_train(c)]
    if failed:
        return (
            None,
            f"commit {failed[0].commit[:7]} in its run's window does not resolve it ({failed[0].error})",
        )
    possible = [c for c in candidates if c.error is None]
    fitting = [c for c in possible if not contradictions(record, c)]
    if not fitting:
        why = (
            "; ".join(contradictions(record, possible[-1])[:3])
            if possible
            else "no commit could have trained it"
        )
        return None, f"no committed config in its run's window matches the record ({why})"
    last = fitting[-1]
    block = config_block(last.values or {}, last.version, "", "")
    differ = [
        c for c in fitting if config_changes(config_block(c.values or {}, c.version, "", ""), block, defaults)
    ]
    if differ:
        what = config_changes(
            config_block(differ[0].values or {}, differ[0].version, "", ""), block, defaults
        )
        return None, (
            f"the shipped config changed in its run's window, in a way the record does not show (commit "
            f"{differ[0].commit[:7]} -> {last.commit[:7]}: {'; '.join(what[:3])})"
        )
    return last, ""


def backfilled(
    record: Mapping[str, Any],
    candidates: list[Candidate],
    committed: str,
    shipped: str,
    defaults: Mapping[str, Any],
) -> dict:
    """A record's backfilled `config` block (`choose`), or `not_recorded` saying why."""
    chosen, why = choose(record, candidates, defaults)
    if chosen is None:
        return not_recorded(why)
    source = (
        f"backfilled from commit {chosen.commit[:12]}: its shipped config with the cell's settings, resolved "
        f"by its own code; the record's numbers were first committed in {committed[:12]}, and every config "
        "committed in its run's window that fits the record (seeds, envs, env steps, updates, worlds) is "
        "this one (uncommitted edits and command-line overrides of other keys cannot be seen)"
    )
    return config_block(chosen.values or {}, chosen.version, shipped, source)


@dataclass(frozen=True)
class History:
    """The first-parent history: `(commit, commit time)` oldest first, and the commits touching
    `CONFIG_PATHS`."""

    commits: tuple[tuple[str, int], ...]
    touching: frozenset[str]

    @classmethod
    def of(cls, repo: Path) -> History:
        """The history of `repo`'s HEAD."""
        lines = _git(repo, "log", "--first-parent", "--format=%H %ct", "HEAD").split("\n")
        commits = tuple((sha, int(when)) for sha, when in (line.split() for line in lines if line))[::-1]
        touching = _git(repo, "log", "--first-parent", "--format=%H", "HEAD", "--", *CONFIG_PATHS).split()
        return cls(commits, frozenset(touching))

    def window(self, start: int, end: int) -> list[str]:
        """The commits whose state a run reading its config in [start, end] may have read: the last at or
        before `start`, then every one after it up to `end` that touches `CONFIG_PATHS`, oldest first."""
        before = [sha for sha, when in self.commits if when <= start][-1:]
        within = [sha for sha, when in self.commits if start < when <= end and sha in self.touching]
        return before + within


def request(path: Path, records_root: Path) -> dict[str, Any]:
    """The `resolve_at` request of a record file under `records_root` (`hivex/<env id>/<cell>.json` or
    `suite/<algo>_<env>.json`): what to resolve and which shipped config the cell trains with."""
    key = path.relative_to(records_root).as_posix()
    if path.parent.parent.name == HIVEX_RECORDS.name:
        cell = cell_of_dirname(path.parent.name, path.stem)
        if cell is None:
            raise ValueError(f"{path}: not a HIVEX cell's record name")
        return {
            "key": key,
            "kind": "hivex",
            "config": cell.config,
            "env_id": cell.env_id,
            "task": cell.task,
            "level": cell.level,
            "algo": cell.algo,
        }
    algo, _, env = path.stem.partition("_")
    return {"key": key, "kind": "suite", "config": suite_config(algo, env)}


@functools.cache
def _has_images(env_id: str) -> bool:
    """Whether an env's default observation has images (`obs["visual"]`)."""
    env, params = hivex_jax.make(env_id)
    return "visual" in env.observation_space(params).spaces


def _resolved(
    repo: Path, work: dict[str, list[dict[str, Any]]], cache: Path | None, log: Callable[[str], None]
) -> dict[str, dict[str, Candidate]]:
    """`resolve_at` of `work`, reusing and extending `cache/<commit>.json` when a cache folder is given (what
    a commit's code resolves never changes)."""
    known = {
        commit: json.loads((cache / f"{commit}.json").read_text())
        if cache is not None and (cache / f"{commit}.json").is_file()
        else {}
        for commit in work
    }
    missing = {c: [r for r in reqs if r["key"] not in known[c]] for c, reqs in work.items()}
    missing = {c: reqs for c, reqs in missing.items() if reqs}
    log(f"{len(work)} commit(s) to resolve the records at, {len(missing)} not in the cache")
    for commit, found in resolve_at(repo, missing, _has_images, log).items():
        known[commit].update({key: dataclasses.asdict(candidate) for key, candidate in found.items()})
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / f"{commit}.json").write_text(json.dumps(known[commit]))
    return {c: {r["key"]: Candidate(**known[c][r["key"]]) for r in reqs} for c, reqs in work.items()}


def backfill_records(
    repo: Path, records_root: Path, log: Callable[[str], None] = print, cache: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Backfill the `config` of every record under `records_root` (its `hivex/` and `suite/` records) that
    has none, writing each record file (its numbers and dates unchanged); `{record key: config block}`.
    `cache`: a folder keeping what each commit resolved, for a rerun."""
    paths = sorted((records_root / HIVEX_RECORDS.name).glob("*/*.json")) + sorted(
        (records_root / SUITE_RECORDS.name).glob("*.json")
    )
    todo = {}
    for path in paths:
        record = read_record(path)
        if record.get("config") is not None:
            continue
        req = request(path, records_root)
        committed = record_commit(repo, path)
        todo[req["key"]] = (path, record, req, committed)
    history = History.of(repo)
    windows = {
        key: history.window(*run_window(record, committed[1])) if committed else []
        for key, (_, record, _, committed) in todo.items()
    }
    commits = [sha for sha, _ in history.commits if any(sha in w for w in windows.values())]
    log(f"{len(todo)} record(s) without a config")
    work = {sha: [req for key, (_, _, req, _) in todo.items() if sha in windows[key]] for sha in commits}
    resolved = _resolved(repo, work, cache, log)
    blocks = {}
    for key, (path, record, req, committed) in todo.items():
        shipped = f"configs/{req['config']}"
        if committed is None:
            block = not_recorded("git holds no version of the record with its numbers")
        else:
            candidates = [resolved[sha][key] for sha in windows[key]]
            algo = (record.get("held_out") or {}).get("algo") or record.get("cell", {}).get("algo")
            defaults = defaults_of(MAPPOConfig() if algo == "mappo" else IPPOConfig())
            block = backfilled(record, candidates, committed[0], shipped, defaults)
        write_record(path, {**record, "config": block})
        blocks[key] = block
    return blocks
