"""`hivex transfer`: a zero-shot transfer matrix, every trained run of a sweep folder (or a list of run
folders, or a shipped pretrained policy) evaluated on every setting of an evaluation grid
(`baselines.run.transfer_matrix`)."""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

from baselines.cli.common import (
    add_trust_unverified_option,
    check_episode_steps,
    enable_compilation_cache,
    run_folder_config,
)
from baselines.config import validate_env
from baselines.run import checkpoint
from hivex_jax.cli_support import ArgumentParser, check_positive, check_writable_dir, reports_user_errors
from hivex_jax.core.errors import UserError, world_seeds


def _run_folders(paths: list[str]) -> list[tuple[str, Path]]:
    """`(label, run folder)` of each path: a run folder itself, or every run folder inside a sweep
    folder (label: the sub-folder's name, e.g. the sweep combination)."""
    runs: list[tuple[str, Path]] = []
    for text in paths:
        path = Path(text)
        if (path / "config.yaml").is_file():
            runs.append((path.name, path))
            continue
        inside = sorted(p for p in path.iterdir() if (p / "config.yaml").is_file()) if path.is_dir() else []
        if not inside:
            why = "does not exist" if not path.exists() else "holds no run folder (no */config.yaml)"
            raise UserError(f"{path} is not a run folder and {why}")
        runs += [(p.name, p) for p in inside]
    labels = [label for label, _ in runs]
    if len(set(labels)) < len(labels):  # run folders of different sweeps with the same combination
        runs = [(str(p), p) for _, p in runs]
    return runs


def _grid_values(item: str) -> tuple[str, list[str]]:
    """`"level=1,5"` -> `("level", ["1", "5"])`; `"num_agents=1..4"` -> 1, 2, 3, 4 (integers, inclusive)."""
    key, _, values = item.partition("=")
    choices: list[str] = []
    for v in (v.strip() for v in values.split(",") if v.strip()):
        lo, dots, hi = v.partition("..")
        if dots and lo.lstrip("-").isdigit() and hi.lstrip("-").isdigit():
            if int(hi) < int(lo):
                raise UserError(f"--eval-grid {item!r}: the range {v} is empty")
            choices += [str(i) for i in range(int(lo), int(hi) + 1)]
        else:
            choices.append(v)
    if not key.strip() or not choices:
        raise UserError(f"--eval-grid {item!r} must look like key=v1,v2 or key=lo..hi")
    return key.strip(), choices


@reports_user_errors("hivex transfer")
def transfer_main(argv: list[str]) -> int:
    """`hivex transfer RUNS... --eval-grid key=v1,v2 [...]`: the zero-shot transfer matrix."""
    p = ArgumentParser(
        prog="hivex transfer",
        description="Evaluate every trained run (a sweep folder's runs, or run folders) zero-shot\n"
        "on every setting of an evaluation grid (env options and EnvParams fields: num_agents,\n"
        "level, task, ...); writes transfer.json, transfer.md and a heatmap transfer.png\n"
        "(normalised score, 0 random, 1 scripted; 95% CI over seeds). Resumes: cells already in\n"
        "transfer.json are skipped.",
        epilog="examples:\n  hivex transfer runs/sweep --eval-grid level=1..10\n"
        "  hivex transfer runs/a runs/b --eval-grid num_agents=1,2,4,8 --out runs/agents_transfer\n"
        "  hivex transfer --pretrained WindFarmControl-v0 --algo ippo,mappo --eval-grid level=0..8 "
        "--out runs/wfc_levels",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keep the examples one per line
    )
    p.add_argument("runs", nargs="*", metavar="RUN_OR_SWEEP_DIR")
    p.add_argument(
        "--pretrained",
        default=None,
        metavar="ENV",
        help="also (or only) the shipped pretrained policy of this env id or short name (docs/pretrained.md)",
    )
    p.add_argument("--algo", default=None, help="with --pretrained: ippo, mappo or ippo,mappo (default ippo)")
    p.add_argument(
        "--eval-grid", action="append", default=[], metavar="key=v1,v2", help="evaluation settings"
    )
    p.add_argument("--worlds", default=None, help='world seeds, "6000:6032" (32 worlds: the end is excluded) '
                   "or \"1,5,9\" (default: the first run's test pool)")  # fmt: skip
    p.add_argument("--steps", type=int, default=None, help="episode steps (default: the env's max_steps)")
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: FOLDER/transfer when one run or sweep folder is given)",
    )
    p.add_argument("--no-progress", action="store_true")
    add_trust_unverified_option(p)
    args = p.parse_intermixed_args(argv)
    with checkpoint.trusting_unverified(args.trust_unverified):
        return _transfer(args)


def _transfer(args: argparse.Namespace) -> int:
    """`hivex transfer` once its options are parsed."""
    check_positive(steps=args.steps)
    if not args.runs and args.pretrained is None:
        raise UserError("give run or sweep folders, or --pretrained ENV")
    if not args.eval_grid:
        raise UserError("give at least one --eval-grid key=v1,v2 (e.g. --eval-grid level=1..10)")
    grid = [_grid_values(item) for item in args.eval_grid]
    if len({k for k, _ in grid}) < len(grid):
        raise UserError("a key is given in two --eval-grid options; list all its values in one")
    settings = {
        ",".join(c): list(c) for c in itertools.product(*[[f"{k}={v}" for v in vs] for k, vs in grid])
    }
    policies = _pretrained_policies(args.pretrained, args.algo)  # {label: Pretrained}, files checked
    runs = _run_folders(args.runs)
    sources = len(args.runs) + len(policies)
    if args.out is None and sources > 1:
        raise UserError(
            "--out is needed for several folders or policies (one run or sweep folder: default "
            "FOLDER/transfer; one pretrained policy: runs/pretrained/<algo>_<env>/transfer)"
        )
    if args.out:
        out = Path(args.out)
    elif policies:
        out = Path("runs/pretrained") / next(iter(policies.values())).name / "transfer"
    else:
        out = Path(args.runs[0]) / "transfer"
    check_writable_dir(out, "--out folder")
    # every check before anything compiles: run folders, env ids, each cell's overrides
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.transfer import eval_config

    configs = {label: run_folder_config(path, []) for label, path in runs}
    configs.update({label: policy.config for label, policy in policies.items()})
    runs += [(label, None) for label in policies]  # a pretrained policy is a row as a run is
    env_ids = {c.env_id for c in configs.values()}
    if len(env_ids) > 1:
        raise UserError(f"the runs train on different envs {sorted(env_ids)}: a matrix compares one env")
    for config in configs.values():
        validate_env(config)
    evaluated = {
        (label, s): _checked(eval_config, configs[label], overrides, label, s)
        for label, _ in runs
        for s, overrides in settings.items()
    }
    check_episode_steps(args.steps, list(evaluated.values()))
    first = next(iter(configs.values()))
    worlds = world_seeds(args.worlds or first.test_worlds, "--worlds")
    header = {
        "env_id": first.env_id,
        "worlds": worlds.tolist(),
        "num_steps": args.steps,
        "eval_seed": first.eval_seed,
    }
    matrix = _resume(out / "transfer.json", header)
    for label, path in runs:  # a run that trained since the file was written: its cells are stale
        if path is None:  # a pretrained policy: its weights' sha256 stands for the checkpoint
            step, where = policies[label].weights_sha256, f"pretrained:{policies[label].name}"
        else:
            step, where = checkpoint.latest_step(path), str(path)
        if label in matrix["runs"] and matrix["runs"][label].get("checkpoint_step") != step:
            print(f"note: {label} has a newer checkpoint than transfer.json; re-evaluating its cells")
            matrix["cells"].pop(label, None)
        matrix["runs"][label] = {"run_dir": where, "checkpoint_step": step}
    enable_compilation_cache()
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.pretrained_policies.play import loaded_run
    from baselines.run import transfer_matrix as tm
    from baselines.run.files import write_text_atomic

    loaded: dict[str, Any] = {}
    # one program per architecture and static env setting: (runs, settings differing only in data)
    programs: dict[str, tuple[list[str], list[str]]] = {}
    for s in settings:
        for label, path in runs:
            if s in matrix["cells"].get(label, {}):
                continue
            if label not in loaded:
                loaded[label] = run = (
                    tm.load(label, str(path)) if path is not None else loaded_run(policies[label], label)
                )
                matrix["runs"][label].update(_run_record(run))
            labels, names = programs.setdefault(tm.group_key(loaded[label], evaluated[label, s]), ([], []))
            labels += [label] if label not in labels else []
            names += [s] if s not in names else []
    for s, overrides in settings.items():
        matrix["eval_settings"][s] = overrides
    bar = _bar(len(settings), args.no_progress)
    bar.update(len(settings) - len({s for _, names in programs.values() for s in names}))
    for labels, names in programs.values():
        rows = sum(loaded[x].config.num_seeds for x in labels) + 2
        size = tm.settings_per_program(rows, len(worlds))
        for chunk in (names[i : i + size] for i in range(0, len(names), size)):
            cells = tm.evaluate_settings(
                [loaded[x] for x in labels], {s: [evaluated[x, s] for x in labels] for s in chunk}, worlds,
                args.steps, header["eval_seed"],
            )  # fmt: skip
            for s in chunk:
                for label, c in cells[s].items():
                    matrix["cells"].setdefault(label, {})[s] = {"overrides": settings[s], **c}
            out.mkdir(parents=True, exist_ok=True)
            write_text_atomic(out / "transfer.json", json.dumps(matrix, indent=1))
            bar.update(len(chunk))
    bar.close()
    matrix["eval_settings"] = grid_order(matrix["eval_settings"], settings)
    write_text_atomic(out / "transfer.json", json.dumps(matrix, indent=1))
    text = tm.markdown(matrix)
    write_text_atomic(out / "transfer.md", text)
    tm.heatmap(out / "transfer.png", matrix)
    print(text)
    print(f"wrote {out / 'transfer.json'}, transfer.md and transfer.png")
    return 0


def _pretrained_policies(env: str | None, algos: str | None) -> dict[str, Any]:
    """`{label: Pretrained}` of `--pretrained ENV --algo A[,B]` (label `pretrained:<algo>_<env>`), each
    policy's files checked; empty without --pretrained."""
    if env is None:
        if algos is not None:
            raise UserError("--algo picks pretrained policies: give --pretrained ENV with it")
        return {}
    names = [a.strip().lower() for a in (algos or "ippo").split(",") if a.strip()]
    if not names or set(names) - {"ippo", "mappo"} or len(set(names)) < len(names):
        raise UserError(f"--algo {algos!r}: give ippo, mappo or ippo,mappo")
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.pretrained_policies import pretrained

    loaded = [pretrained(env, algo) for algo in names]
    return {f"pretrained:{policy.name}": policy for policy in loaded}


def grid_order(stored: dict[str, list[str]], grid: dict[str, list[str]]) -> dict[str, list[str]]:
    """The matrix's columns in the order of this call's grid, then those of earlier calls that it does not
    list (in their order): a resumed `--eval-grid num_agents=1,4,12,16` after `1,4,16` gives 1, 4, 12, 16,
    not the insertion order 1, 4, 16, 12."""
    return {**{s: grid[s] for s in grid}, **{s: v for s, v in stored.items() if s not in grid}}


def _checked(eval_config: Any, config: Any, overrides: list[str], label: str, setting: str) -> Any:
    """`eval_config(config, overrides)`, its `UserError` naming the cell."""
    try:
        return eval_config(config, overrides)
    except UserError as exc:
        raise UserError(f"run {label}, setting {setting}: {exc}") from exc


def _resume(path: Path, header: dict) -> dict:
    """The matrix in `path` if it was computed on the same worlds, steps and evaluation key (its cells
    are kept), a new one if there is none; a `UserError` if it was computed otherwise."""
    fresh = {**header, "runs": {}, "eval_settings": {}, "cells": {}}
    if not path.is_file():
        return fresh
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} exists but is not a transfer matrix ({exc}); use another --out") from exc
    differs = [k for k in header if old.get(k) != header[k]]
    if differs:
        raise UserError(f"{path} was computed with other {', '.join(differs)}; use another --out to keep it")
    return {**fresh, **old}


def _run_record(run: Any) -> dict:
    """What the matrix records of a run: algorithm, seeds, updates and its training setting."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.transfer import env_setting

    return {
        "algo": run.config.algo,
        "num_seeds": run.config.num_seeds,
        "updates_done": run.updates_done,
        "train_setting": env_setting(run.config),
    }


def _bar(total: int, disabled: bool) -> Any:
    """A tqdm bar over evaluation settings."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="transfer (evaluation settings)", unit="setting", disable=disabled)
