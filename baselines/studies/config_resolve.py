"""A cell's shipped config resolved by a past commit's own code (`baselines.studies.config_backfill`): each
commit's tree extracted from git, one process importing each tree's packages in turn (`RESOLVER`), and
what it resolved as a `Candidate` on the env version of that commit's golden rollouts."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.studies.config_fingerprint import env_version

#: the folders a commit's code is resolved from (`resolve_at`)
TREE_PATHS = ("baselines", "hivex_jax", "configs", "tests/envs/golden_rollouts.json")

# Run by `resolve_at`: for each job (a commit's tree and its requests), each request's shipped config and
# settings resolved by that commit's code, one JSON line per job. One process serves every commit (jax is
# imported once; the project's packages are imported afresh from each tree). The cells' settings as that
# commit's study passed them: its `hivex_cells.train_settings` (before that module, scripts/hivex_results.py
# passed task, level, the held-out worlds and no GIF), and the suite's held-out worlds, seeds (since it set
# them) and no GIF.
RESOLVER = r"""
import importlib, json, os, sys

def resolve(requests):
    from baselines import load_config
    try:
        from hivex_jax.eval.hivex_cells import Cell, train_settings
    except ImportError:
        Cell = None
    try:
        from hivex_jax.eval.suite_table import TEST_WORLDS
    except ImportError:
        TEST_WORLDS = "6000:6032"
    try:
        from hivex_jax.eval.suite_table import SUITE_SEEDS
        suite = [f"test_worlds={TEST_WORLDS}", f"num_seeds={SUITE_SEEDS}", "gif_frames=0"]
    except ImportError:
        suite = [f"test_worlds={TEST_WORLDS}", "gif_frames=0"]

    def hivex_settings(r):
        if Cell is None:
            level = [] if r["level"] is None else [f"level={r['level']}"]
            return [f"task={r['task']}", *level, "test_worlds=6000:6032", "gif_frames=0"]
        try:
            cell = Cell(r["env_id"], r["task"], r["level"], r["algo"])
        except TypeError:  # before MAPPO cells
            cell = Cell(r["env_id"], r["task"], r["level"])
        return train_settings(cell, [])

    out = {}
    for r in requests:
        try:
            settings = hivex_settings(r) if r["kind"] == "hivex" else suite
            c = load_config("configs/" + r["config"], settings)
            out[r["key"]] = {"values": c.to_dict(), "env_steps": c.env_steps, "num_updates": c.num_updates}
        except Exception as exc:
            out[r["key"]] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out

for job in json.load(sys.stdin):
    for name in [m for m in sys.modules if m.split(".")[0] in ("baselines", "hivex_jax", "_jax_setup")]:
        del sys.modules[name]
    others = [p for p in sys.path if p not in ("", ".") and not p.startswith(job["root"])]
    sys.path[:] = [job["tree"], *others]
    os.chdir(job["tree"])
    importlib.invalidate_caches()
    try:
        out = resolve(job["requests"])
        code = sys.modules["baselines"].__file__
        if not code.startswith(job["tree"]):  # the installed checkout's code, not this commit's
            raise ImportError(f"baselines imported from {code}")
        line = {"tree": job["tree"], "out": out}
    except Exception as exc:
        line = {"tree": job["tree"], "error": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps(line), flush=True)
"""


@dataclass(frozen=True)
class Candidate:
    """A cell's config as one commit resolved it: `values` (`to_dict()`), its env steps and updates per
    seed, and the env version of that commit's golden rollouts; `error` instead where it did not resolve."""

    commit: str
    values: dict[str, Any] | None
    env_steps: int | None
    num_updates: int | None
    version: str
    error: str | None = None


def _extract(repo: Path, commit: str, folder: Path) -> Path:
    """`commit`'s `TREE_PATHS` extracted into `folder/<commit>`."""
    tree = folder / commit
    tree.mkdir()
    paths = [p for p in TREE_PATHS if _exists(repo, commit, p)]
    archive = subprocess.run(["git", "archive", commit, *paths], cwd=repo, check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def _run_resolver(jobs: list[dict[str, Any]], root: Path, on_line: Callable[[dict], None]) -> None:
    """Run `RESOLVER` over `jobs` in one process, calling `on_line` with each job's line as it comes; a job
    the process did not reach gets an error line."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": ""}  # PJRT_NPROC: inherited
    jobs = [{**job, "root": str(root)} for job in jobs]
    seen = set()
    with subprocess.Popen(
        [sys.executable, "-c", RESOLVER],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write(json.dumps(jobs))
        process.stdin.close()
        for text in process.stdout:
            if text.startswith("{"):
                line = json.loads(text)
                seen.add(line["tree"])
                on_line(line)
        error = (process.stderr.read().strip().splitlines() or ["no output"])[-1][:300]
    for job in jobs:
        if job["tree"] not in seen:
            on_line({"tree": job["tree"], "error": error})


def _candidates(
    commit: str,
    requests: list[dict[str, Any]],
    line: dict[str, Any],
    tree: Path,
    has_images: Callable[[str], bool],
) -> dict[str, Candidate]:
    """The `Candidate` of each request from its job's resolver line (`cnn_channels` dropped on envs without
    images, as `fit_saved_config` reads old runs), on the env version of the tree's golden rollouts."""
    golden_file = tree / "tests/envs/golden_rollouts.json"
    golden = json.loads(golden_file.read_text()) if golden_file.is_file() else None
    out = {}
    for r in requests:
        got = line.get("out", {}).get(r["key"], {"error": line.get("error", "not resolved")})
        if "error" in got:
            out[r["key"]] = Candidate(commit, None, None, None, "", got["error"])
            continue
        values = dict(got["values"])
        if values.get("cnn_channels") and not has_images(values["env_id"]):
            values["cnn_channels"] = []
        version = env_version(values["env_id"], golden)
        out[r["key"]] = Candidate(commit, values, got["env_steps"], got["num_updates"], version)
    return out


def resolve_at(
    repo: Path,
    work: dict[str, list[dict[str, Any]]],
    has_images: Callable[[str], bool],
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, dict[str, Candidate]]:
    """`{commit: {request key: Candidate}}` of each commit's requests (`{"key", "kind": "hivex"|"suite",
    "config", "env_id", "task", "level", "algo"}`) resolved by that commit's own code in a temporary copy of
    its tree (`RESOLVER`, one process for all); a commit whose code failed to import there is retried in a
    process of its own."""
    out: dict[str, dict[str, Candidate]] = {}
    with tempfile.TemporaryDirectory() as folder:
        trees = {commit: _extract(repo, commit, Path(folder)) for commit in work}
        commit_of = {str(tree): commit for commit, tree in trees.items()}
        jobs = [{"tree": str(trees[c]), "requests": requests} for c, requests in work.items()]
        failed: list[str] = []

        def take(line: dict[str, Any]) -> None:
            commit = commit_of[line["tree"]]
            if "error" in line and commit not in failed:  # retried alone below
                failed.append(commit)
                return
            out[commit] = _candidates(commit, work[commit], line, trees[commit], has_images)
            log(f"[{len(out)}/{len(work)}] {commit[:12]}: {len(work[commit])} record(s)")

        _run_resolver(jobs, Path(folder), take)
        for commit in failed:  # its code failed beside the others': in a process of its own
            _run_resolver([job for job in jobs if job["tree"] == str(trees[commit])], Path(folder), take)
    return out


def _exists(repo: Path, commit: str, path: str) -> bool:
    return (
        subprocess.run(
            ["git", "cat-file", "-e", f"{commit}:{path}"], cwd=repo, capture_output=True
        ).returncode
        == 0
    )
