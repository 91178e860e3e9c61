"""Writing a pretrained policy from a finished 5-seed run folder of its suite cell: the seed closest to the
cell's median (`choose_seed`), its actor's parameters (`actor_params`, `weights_bytes`), its card
(`build_policy`: config, commit, env steps, held-out result, suite cell, the check figures its test
reproduces), the manifest's sha256 of each file, and the Markdown table of docs/pretrained.md (`table`).
`baselines.studies.pretrained` trains the runs and calls `build_policy`."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from baselines.pretrained_policies.play import card_check, evaluate
from baselines.pretrained_policies.store import (
    DATA_DIR,
    FORMAT_VERSION,
    MANIFEST,
    load,
    read_manifest,
    sha256_file,
)
from baselines.run.evaluation import load_run
from baselines.run.files import machine_summary
from hivex_jax.eval.score import format_score
from hivex_jax.eval.suite_table import cell_record

#: the held-out worlds of a card (the suite's)
HELD_OUT_WORLDS = "6000:6032"
#: docs/pretrained.md's generated table sits between these
MARKER_START, MARKER_END = "<!-- pretrained:start -->", "<!-- pretrained:end -->"


# ------------------------------------------------------------------------------------ the seed
def greedy_fractions(record: dict[str, Any]) -> list[float]:
    """Each seed's greedy mean return over the held-out worlds divided by the scripted mean (a suite record's
    or `cell_record`'s layout)."""
    policies = record["held_out"]["policies"]
    scripted = float(policies["scripted"]["world_mean"])
    return [float(m) / scripted for m in policies["greedy"]["seed_means"]]


def choose_seed(cell: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The run's seed whose greedy fraction of scripted is closest to the median over the suite cell's seeds
    (`cell`: the cell's record; `run`: `cell_record` of the run trained for the policy, 5 seeds of the same
    config), and whether the run reproduced the cell: the same seed means (`reproduced`, to 1e-6
    relative; `max_seed_mean_difference` None for a run of another seed count). With a reproduced cell it is
    the cell's own median seed."""
    cell_fractions, run_fractions = greedy_fractions(cell), greedy_fractions(run)
    median = float(np.median(cell_fractions))
    seed = int(np.argmin([abs(f - median) for f in run_fractions]))
    cell_means = np.asarray(cell["held_out"]["policies"]["greedy"]["seed_means"], np.float64)
    run_means = np.asarray(run["held_out"]["policies"]["greedy"]["seed_means"], np.float64)
    same_shape = cell_means.shape == run_means.shape
    difference = float(np.max(np.abs(cell_means - run_means))) if same_shape else None
    return {
        "seed_index": seed,
        "median_greedy_fraction": median,
        "cell_greedy_fractions": cell_fractions,
        "run_greedy_fractions": run_fractions,
        "reproduced": difference is not None
        and difference <= 1e-6 * max(1.0, float(np.max(np.abs(cell_means)))),
        "max_seed_mean_difference": difference,
    }


def in_middle_half(fraction: float, cell: dict[str, Any]) -> bool:
    """Whether a greedy fraction of scripted lies between the cell's seeds' first and third quartiles."""
    low, high = np.percentile(greedy_fractions(cell), [25, 75])
    return bool(low <= fraction <= high)


def actor_params(population_params: dict[str, Any], seed: int) -> dict[str, Any]:
    """What acting needs of seed `seed` of population parameters `[S, ...]`: the actor (and its
    observation statistics)."""
    params = {"actor": population_params["actor"]}
    if "obs_norm" in population_params:
        params["obs_norm"] = {"actor": population_params["obs_norm"]["actor"]}
    return jax.tree.map(lambda x: np.asarray(jax.device_get(x))[seed], params)


def weights_bytes(params: dict[str, Any]) -> bytes:
    """`params` as flax msgpack (numpy arrays; the same bytes for the same arrays)."""
    return serialization.msgpack_serialize(serialization.to_state_dict(jax.device_get(params)))


# ---------------------------------------------------------------------------------- the files
def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def git_commit() -> dict[str, Any]:
    """`{"sha", "dirty"}` of the checkout the package runs from (dirty: tracked files of the trainer, the
    library or the configs differ from the commit, the shipped policies' data aside); empty strings where
    git is not there."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    # the shipped policies' own files are not code: rebuilding one rewrites them mid-build
    paths = ("baselines", "hivex_jax", "configs", ":(exclude)baselines/pretrained_policies/data")
    changed = git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    return {"sha": git("rev-parse", "HEAD"), "dirty": bool(changed)}


def update_manifest(data_dir: Path, name: str, entry: dict[str, Any]) -> None:
    """Add or replace policy `name` in the manifest of `data_dir` (written if there is none)."""
    path = data_dir / MANIFEST
    manifest = (
        read_manifest(data_dir) if path.is_file() else {"format_version": FORMAT_VERSION, "policies": {}}
    )
    manifest["policies"][name] = entry
    manifest["policies"] = dict(sorted(manifest["policies"].items()))
    write_atomic(path, (json.dumps(manifest, indent=1) + "\n").encode())


def write_card(data_dir: Path, card: dict[str, Any], card_file: str) -> None:
    """Write `card` to `data_dir / card_file`, then its policy's manifest entry with the new checksums."""
    write_atomic(data_dir / card_file, (json.dumps(card, indent=1) + "\n").encode())
    weights_file = card["weights"]["file"]
    entry = manifest_entry(data_dir, card["env_id"], card["algo"], card["env"], weights_file, card_file)
    update_manifest(data_dir, card["name"], entry)


def is_built(name: str, data_dir: Path = DATA_DIR) -> bool:
    """Whether policy `name` is in the manifest with its files there and their checksums right."""
    try:
        entry = read_manifest(data_dir)["policies"].get(name)
    except ValueError:  # no or unreadable manifest: PretrainedError
        return False
    if entry is None:
        return False
    files = [entry.get("weights"), entry.get("card")]
    return all(
        f and (data_dir / f).is_file() and sha256_file(data_dir / f) == entry["sha256"][f] for f in files
    )


def build_policy(
    name: str,
    env: str,
    run_dir: Path,
    cell_path: Path,
    training: dict[str, Any],
    data_dir: Path = DATA_DIR,
    log: Any = print,
) -> dict[str, Any]:
    """Write policy `name` (`<algo>_<env>`) from the finished run folder `run_dir` (5 seeds) and its suite
    cell's record `cell_path`: weights, card (with `training`: how the run was made) and manifest entry,
    after playing it on the held-out worlds and the check's; returns the card."""
    cell = json.loads(Path(cell_path).read_text())
    config, _, state = load_run(run_dir)
    run = cell_record(config.algo, env, Path(run_dir))
    if run is None:
        raise ValueError(f"{run_dir} has no eval.json: its training is not finished")
    seed = choose_seed(cell, run)
    log(
        f"{name}: seed {seed['seed_index']} of {run_dir} (greedy fraction "
        f"{seed['run_greedy_fractions'][seed['seed_index']]:.4f}; the cell's median "
        f"{seed['median_greedy_fraction']:.4f}"
        f"; run {'reproduces' if seed['reproduced'] else 'does not reproduce'} the cell's seed means)"
    )
    weights_file, card_file = f"{name}.msgpack", f"{name}.json"
    weights = weights_bytes(actor_params(state.params, seed["seed_index"]))
    write_atomic(data_dir / weights_file, weights)
    updates_done = int(np.asarray(jax.device_get(state.update))[0])
    card: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "name": name,
        "env_id": config.env_id,
        "algo": config.algo,
        "env": env,
        "task": config.task,
        "level": config.level,
        "num_agents": config.num_agents,
        "config": config.to_dict(),
        "commit": git_commit(),
        "env_steps": updates_done * config.steps_per_update,
        "updates_done": updates_done,
        "training": {
            **training,
            "num_seeds": config.num_seeds,
            "seed": config.seed,
            "seed_index": seed["seed_index"],
            "greedy_fraction_per_seed": seed["run_greedy_fractions"],
            "max_seed_mean_difference_to_the_cell": seed["max_seed_mean_difference"],
        },
        "weights": {
            "file": weights_file,
            "bytes": len(weights),
            "parameters": int(
                sum(np.size(x) for x in jax.tree.leaves(state.params["actor"])) // config.num_seeds
            ),
        },
        "built": {"date": datetime.date.today().isoformat(), **machine_summary()},
    }
    # a provisional manifest entry (card without results) so the policy loads through the one loader
    write_card(data_dir, card, card_file)
    policy = load(name.split("_", 1)[1], config.algo, data_dir=data_dir)
    card["held_out"] = held_out_summary(evaluate(policy, HELD_OUT_WORLDS), cell)
    card["suite_cell"] = suite_cell_summary(cell, Path(cell_path), seed["reproduced"])
    card["check"] = card_check(policy)
    write_card(data_dir, card, card_file)
    return card


def manifest_entry(
    data_dir: Path, env_id: str, algo: str, env: str, weights_file: str, card_file: str
) -> dict[str, Any]:
    """A policy's manifest entry: env id, algorithm, short env name, its two files, their sha256 and sizes."""
    files = (weights_file, card_file)
    return {
        "env_id": env_id,
        "algo": algo,
        "env": env,
        "weights": weights_file,
        "card": card_file,
        "sha256": {f: sha256_file(data_dir / f) for f in files},
        "bytes": {f: (data_dir / f).stat().st_size for f in files},
    }


def held_out_summary(results: dict[str, Any], cell: dict[str, Any]) -> dict[str, Any]:
    """What a card keeps of the policy's held-out evaluation (`play.evaluate`): per policy the mean return
    (greedy also per world), the scores, and the worlds, key and episode length."""
    policies = results["policies"]
    out: dict[str, Any] = {
        "worlds": HELD_OUT_WORLDS,
        "eval_seed": results["eval_seed"],
        "episode_steps": results["episode_steps"],
        "mean_return": {n: float(p["summary"]["mean"]) for n, p in policies.items()},
        "greedy_per_world": [float(w["return_mean"]) for w in policies["greedy"]["per_world"]],
    }
    for key in ("fraction_of_scripted", "normalised_score"):
        if key in results:
            out[key] = results[key]
    return out


def suite_cell_summary(cell: dict[str, Any], cell_path: Path, reproduced: bool) -> dict[str, Any]:
    """What a card keeps of its suite cell: the record's file, date and run, each seed's greedy fraction of
    scripted, their median and mean, and whether the policy's 5-seed run reproduced its seed means."""
    fractions = greedy_fractions(cell)
    return {
        "record": portable(cell_path),
        "source": cell.get("source"),
        "measured_on": cell.get("measured_on", {}).get("held_out"),
        "greedy_fraction_per_seed": fractions,
        "median_greedy_fraction": float(np.median(fractions)),
        "mean_greedy_fraction": float(np.mean(fractions)),
        "reproduced": reproduced,
    }


def portable(path: Path) -> str:
    """`path` relative to the working directory when inside it (a repository path), else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------- the table
def read_cards(data_dir: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Every shipped policy's card, in the manifest's order."""
    entries = read_manifest(data_dir)["policies"].values()
    return [json.loads((data_dir / entry["card"]).read_text()) for entry in entries]


def table(cards: Sequence[dict[str, Any]]) -> str:
    """docs/pretrained.md's table of the shipped policies, one row per card: its training (env steps, which
    of the 5 seeds), its held-out greedy result on worlds 6000-6031 (mean return, fraction of scripted,
    normalised score), its suite cell's median and mean greedy fraction of scripted, and its files."""
    lines = [
        "| policy | env | algo | env steps | seed | greedy return | of scripted | normalised "
        "| suite cell: median (mean) of scripted | parameters | weights | commit |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for card in cards:
        held, cell = card.get("held_out", {}), card.get("suite_cell", {})
        fraction = held.get("fraction_of_scripted", {}).get("greedy")
        score = held.get("normalised_score", {}).get("greedy")
        commit = card["commit"]["sha"][:10] + (" (modified)" if card["commit"]["dirty"] else "")
        lines.append(
            f"| `{card['name']}` | {card['env_id']} | {card['algo'].upper()} | {card['env_steps']:,} | "
            f"{seed_text(card['training'])} | "
            f"{held.get('mean_return', {}).get('greedy', float('nan')):.1f} | {format_score(fraction)} | "
            f"{format_score(score)} | {format_score(cell.get('median_greedy_fraction'))} "
            f"({format_score(cell.get('mean_greedy_fraction'))}) | "
            f"{card['weights']['parameters']:,} | {card['weights']['bytes'] / 1024:.0f} KiB | `{commit}` |"
        )
    return "\n".join(lines)


def seed_text(training: dict[str, Any]) -> str:
    """Which seed a policy is: "1 of 5" (index in its run's population) or "seed=2 alone" (a one-seed run)."""
    if training["num_seeds"] > 1:
        return f"{training['seed_index']} of {training['num_seeds']}"
    return f"seed={training['seed']} alone"


def write_table(page: Path, cards: Sequence[dict[str, Any]]) -> bool:
    """Replace the table between the page's markers with `table(cards)`; whether the page changed."""
    text = page.read_text()
    pattern = re.compile(re.escape(MARKER_START) + r".*?" + re.escape(MARKER_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{page} has no {MARKER_START} ... {MARKER_END} markers")
    new = pattern.sub(lambda _: f"{MARKER_START}\n{table(cards)}\n{MARKER_END}", text)
    if new != text:
        page.write_text(new)
    return new != text
