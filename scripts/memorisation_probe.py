"""Memorisation probe: train on pools of 1, 10, 100, 1000 worlds (seeds vmapped in one run per pool), then
score the greedy policy on held-out worlds and on its own training worlds; the gap between the two is
what the policy memorised rather than learned.

Usage:
  PJRT_NPROC=1 python scripts/memorisation_probe.py --env WildfireResourceManagement-v0 --out runs/probe_wrm
  PJRT_NPROC=1 python scripts/memorisation_probe.py --env wfc --out DIR --pools 1,10 total_env_steps=1e5

Per pool size N: one training run (the env's shipped IPPO config, or --config, plus key=value overrides)
with `train_worlds = BASE:BASE+N`, `num_seeds` seeds vmapped; then the greedy policy of every seed on the
held-out worlds (default 6000:6064) and on its first min(N, --max-train-eval) training worlds, and the
scripted and random policies on the same worlds (same evaluation key). Per seed: the mean return over
worlds, its fraction of the scripted return on the same worlds, and train minus held-out (paired by
seed); every figure is the mean and a Student-t 95% CI over seeds of those per-seed values.

Writes OUT/probe.json (rewritten after each pool: resumable), OUT/probe.md and OUT/probe.png; the runs
are OUT/pool_<N>/. Run again with the same arguments to skip finished pools (a run stopped mid-training
resumes from its last checkpoint); more --pools add cells.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)

from baselines.cli import _compilation_cache  # also sets the CPU compile flags before jax starts
from baselines.config import load_config, validate_env

REPO = Path(__file__).resolve().parent.parent
SHORT_NAMES = {
    "wfc": "WindFarmControl-v0",
    "wrm": "WildfireResourceManagement-v0",
    "dbr": "DroneBasedReforestation-v0",
    "opc": "OceanPlasticCollection-v0",
    "aws": "AerialWildfireSuppression-v0",
}
#: what a resumed probe must share with the file it continues
HEADER_KEYS = ("env_id", "config", "overrides", "num_seeds", "heldout_worlds", "train_base", "max_train_eval")


def env_id_of(name: str) -> str:
    """`WindFarmControl-v0` from itself, `wfc` or `wind_farm_control`."""
    from hivex_jax.envs import BUNDLED_ENV_IDS

    if name.lower() in SHORT_NAMES:
        return SHORT_NAMES[name.lower()]
    for env_id in BUNDLED_ENV_IDS:
        if name in (env_id, snake(env_id)):
            return env_id
    return name  # another registered env (e.g. a test env): load_config checks it


def snake(env_id: str) -> str:
    """`wind_farm_control` from `WindFarmControl-v0`."""
    base = env_id.split("-v")[0]
    return "".join("_" + c.lower() if c.isupper() else c for c in base).lstrip("_")


def default_config(env_id: str) -> Path:
    """The env's shipped IPPO config, `configs/ippo_<env>.yaml`."""
    return REPO / "configs" / f"ippo_{snake(env_id)}.yaml"


def world_range(lo: int, n: int) -> str:
    """`"lo:lo+n"`."""
    return f"{lo}:{lo + n}"


def pool_config(args: argparse.Namespace, pool: int) -> Any:
    """The training config of one pool size (its run folder: OUT/pool_<N>)."""
    overrides = [
        *args.overrides,
        f"train_worlds={world_range(args.train_base, pool)}",
        f"num_seeds={args.seeds}",
        "eval_every=0",  # the probe evaluates after training; the run's own test pool is scored once
        "gif_frames=0",
        f"name=pool_{pool}",
        f"out_dir={args.out}",
    ]
    return load_config(args.config, overrides)


# ------------------------------------------------------------------------------------ statistics
def seed_stats(per_seed: Any) -> dict[str, Any]:
    """Mean and Student-t 95% CI over seeds of per-seed values `[S]`."""
    import numpy as np

    from hivex_jax.eval.stats import mean_ci95

    values = np.asarray(per_seed, np.float64)
    mean, half = mean_ci95(values)
    return {"mean": float(mean), "ci95": float(half), "per_seed": values.tolist()}


def side(per_seed_world: Any, scripted: list[float], random: list[float]) -> dict[str, Any]:
    """One side (train or held-out) of a pool: greedy returns `[S, W]` and the baselines' `[W]` on the
    same worlds -> per-seed means, fraction of scripted (each seed's mean / the scripted mean)."""
    import numpy as np

    x = np.asarray(per_seed_world, np.float64)
    scripted_mean = float(np.mean(scripted)) if scripted else None
    per_seed = x.mean(axis=1)
    fraction = None
    if scripted_mean is not None and scripted_mean > 0:  # a ratio to a return <= 0 reads nothing
        fraction = seed_stats(per_seed / scripted_mean)
    return {
        "num_worlds": int(x.shape[1]),
        "return": seed_stats(per_seed),
        "return_per_seed_world": x.tolist(),
        "scripted": scripted_mean,
        "random": float(np.mean(random)),
        "fraction_of_scripted": fraction,
    }


def gap(train: dict[str, Any], heldout: dict[str, Any]) -> dict[str, Any]:
    """Train minus held-out, paired by seed: return and (when both exist) fraction of scripted."""
    import numpy as np

    out = {
        "return": seed_stats(
            np.subtract(train["return"]["per_seed"], heldout["return"]["per_seed"]),
        )
    }
    if train["fraction_of_scripted"] and heldout["fraction_of_scripted"]:
        out["fraction_of_scripted"] = seed_stats(
            np.subtract(
                train["fraction_of_scripted"]["per_seed"], heldout["fraction_of_scripted"]["per_seed"]
            )
        )
    return out


# ------------------------------------------------------------------------------------ the probe
def train_pool(config: Any, run_dir: Path, progress: bool) -> dict[str, Any]:
    """Train (or finish) the run of one pool size; returns its summary."""
    from baselines import checkpoint
    from baselines.runner import run_training

    summary_file = run_dir / "summary.json"
    if summary_file.is_file() and json.loads(summary_file.read_text()).get("finished"):
        return json.loads(summary_file.read_text())
    resume = checkpoint.latest_step(run_dir) is not None
    return run_training(config, run_dir, resume=resume, progress=progress, outputs=False, log=_quiet)


def _quiet(*_: Any) -> None:
    """The runner's log lines are not the probe's output (its progress bar is)."""


def greedy_returns(run_dir: Path, worlds: str, num_steps: int | None) -> Any:
    """Greedy return per seed and world `[S, W]` (mean over agents) of a saved run on `worlds`."""
    import jax.numpy as jnp

    from baselines.evaluation import get_evaluation, load_run

    config, population, state = load_run(run_dir)
    evaluation = get_evaluation(population, worlds, num_steps)
    greedy = jnp.ones(config.num_seeds, bool)  # the greedy half of trained_totals only
    totals = evaluation.trained((state.params, greedy), evaluation.worlds)
    return totals["return"].mean(-1)


def baseline_returns(run_dir: Path, worlds: str, num_steps: int | None) -> dict[str, list[float]]:
    """Scripted (if the env has one) and random return per world (mean over agents) on `worlds`."""
    from baselines.evaluation import get_evaluation, load_run

    _, population, _ = load_run(run_dir)
    totals = get_evaluation(population, worlds, num_steps).baseline_totals()
    return {name: t["return"].mean(-1).tolist() for name, t in totals.items()}


def run_probe(args: argparse.Namespace) -> dict[str, Any]:
    """Every pool size not yet in OUT/probe.json: train, evaluate, record; returns the probe record."""
    from tqdm.auto import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    configs = {pool: pool_config(args, pool) for pool in args.pools}  # every config checked up front
    first = configs[args.pools[0]]
    validate_env(first)
    heldout = set(range(*map(int, args.heldout.split(":"))))
    largest = max(args.pools)
    if heldout & set(range(args.train_base, args.train_base + largest)):
        raise SystemExit(f"--heldout {args.heldout} overlaps the training pool of {largest} worlds")
    header = {
        "env_id": first.env_id,
        "config": str(args.config),
        "overrides": list(args.overrides),
        "num_seeds": args.seeds,
        "heldout_worlds": args.heldout,
        "train_base": args.train_base,
        "max_train_eval": args.max_train_eval,
        "num_steps": args.steps,
        "eval_seed": first.eval_seed,
        "algo": first.algo,
        "task": first.task,
        "level": first.level,
        "num_agents": first.num_agents,
        "total_env_steps": first.total_env_steps,
    }
    record = resume_record(out / "probe.json", header)
    _compilation_cache()
    todo = [p for p in args.pools if str(p) not in record["cells"]]
    bar = tqdm(
        total=len(args.pools), initial=len(args.pools) - len(todo), desc="pools", disable=args.no_progress
    )
    for pool in todo:
        bar.set_postfix(pool=pool, refresh=True)
        run_dir = out / f"pool_{pool}"
        start = time.perf_counter()
        summary = train_pool(configs[pool], run_dir, progress=not args.no_progress)
        if not summary.get("finished"):
            raise SystemExit(f"{run_dir}: training stopped before the end ({summary})")
        train_s = time.perf_counter() - start
        start = time.perf_counter()
        train_worlds = world_range(args.train_base, min(pool, args.max_train_eval))
        sides = {}
        for name, worlds in (("train", train_worlds), ("heldout", args.heldout)):
            if worlds not in record["baselines"]:  # the baselines' returns depend on the worlds only
                record["baselines"][worlds] = baseline_returns(run_dir, worlds, args.steps)
            base = record["baselines"][worlds]
            returns = greedy_returns(run_dir, worlds, args.steps)
            sides[name] = side(returns, base.get("scripted", []), base["random"])
        record["cells"][str(pool)] = {
            "pool_size": pool,
            "run_dir": str(run_dir),
            "train_worlds": world_range(args.train_base, pool),
            "train_eval_worlds": train_worlds,
            "updates_done": summary["updates_done"],
            "env_steps_per_seed": summary["updates_done"] * configs[pool].steps_per_update,
            "train": sides["train"],
            "heldout": sides["heldout"],
            "gap": gap(sides["train"], sides["heldout"]),
            "train_s": train_s,
            "eval_s": time.perf_counter() - start,
            "load_average_1min": os.getloadavg()[0],
        }
        write_json(out / "probe.json", record)
        bar.update(1)
    bar.close()
    (out / "probe.md").write_text(markdown(record))
    plot(out / "probe.png", record)
    return record


def resume_record(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    """The probe record to continue: the file's, if it was written with the same settings; else new."""
    if not path.is_file():
        return {**header, "statistic": STATISTIC, "baselines": {}, "cells": {}}
    record = json.loads(path.read_text())
    differ = [k for k in (*HEADER_KEYS, "num_steps") if record.get(k) != header.get(k)]
    if differ:
        raise SystemExit(
            f"{path} was written with other settings ({', '.join(differ)}: "
            f"{[record.get(k) for k in differ]} vs {[header.get(k) for k in differ]}); use another --out"
        )
    return record


def write_json(path: Path, record: dict[str, Any]) -> None:
    """Write atomically (a kill mid-write keeps the previous file)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)


STATISTIC = (
    "mean and Student-t 95% CI over training seeds of per-seed values (each seed's mean over worlds; "
    "fraction of scripted = that mean / the scripted mean on the same worlds; gap = train - held-out "
    "per seed)"
)


# ------------------------------------------------------------------------------------ report
def _ci(stats: dict[str, Any] | None, digits: int) -> str:
    """`mean ± ci` or `-`."""
    return "-" if not stats else f"{stats['mean']:.{digits}f} ± {stats['ci95']:.{digits}f}"


def markdown(record: dict[str, Any]) -> str:
    """The probe table: one row per pool size."""
    cells = sorted(record["cells"].values(), key=lambda c: c["pool_size"])
    lines = [
        f"{record['env_id']}: memorisation probe ({record['algo']}, {record['num_seeds']} seeds, "
        f"{record['total_env_steps']:,} env steps per seed; held-out worlds {record['heldout_worlds']})",
        "",
        "| train pool | train worlds scored | return: train | return: held-out | gap | "
        "fraction of scripted: train | held-out | gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['pool_size']:,} | {c['train_eval_worlds']} | {_ci(c['train']['return'], 1)} | "
            f"{_ci(c['heldout']['return'], 1)} | {_ci(c['gap']['return'], 1)} | "
            f"{_ci(c['train']['fraction_of_scripted'], 3)} | "
            f"{_ci(c['heldout']['fraction_of_scripted'], 3)} | "
            f"{_ci(c['gap'].get('fraction_of_scripted'), 3)} |"
        )
    if cells:
        h = cells[0]["heldout"]
        scripted = "none" if h["scripted"] is None else f"{h['scripted']:.1f}"
        lines += [
            "",
            f"Held-out worlds: scripted {scripted}, random {h['random']:.1f}. ± : {record['statistic']}.",
        ]
    return "\n".join(lines) + "\n"


def plot(path: Path, record: dict[str, Any]) -> Path:
    """Return and fraction of scripted vs pool size (log x): train and held-out, 95% CI bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cells = sorted(record["cells"].values(), key=lambda c: c["pool_size"])
    pools = np.array([c["pool_size"] for c in cells], float)
    with_fraction = bool(cells) and all(c["heldout"]["fraction_of_scripted"] for c in cells)
    fig, axes = plt.subplots(
        1, 2 if with_fraction else 1, figsize=(10 if with_fraction else 5.5, 4), squeeze=False
    )
    panels = [("return", "greedy return (mean over agents and worlds)")]
    if with_fraction:
        panels.append(("fraction_of_scripted", "fraction of the scripted return"))
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for name, color in (("train", "tab:blue"), ("heldout", "tab:orange")):
            mean = np.array([c[name][key]["mean"] for c in cells])
            half = np.array([c[name][key]["ci95"] for c in cells])
            words = "training worlds" if name == "train" else f"held-out worlds {record['heldout_worlds']}"
            ax.plot(pools, mean, "o-", color=color, label=words)
            ax.fill_between(pools, mean - half, mean + half, color=color, alpha=0.25)
        if key == "return" and cells:
            h = cells[0]["heldout"]
            if h["scripted"] is not None:
                ax.axhline(h["scripted"], color="k", ls="--", lw=1, label="scripted (held-out)")
            ax.axhline(h["random"], color="grey", ls=":", lw=1, label="random (held-out)")
        if key == "fraction_of_scripted":
            ax.axhline(1.0, color="k", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("training worlds (pool size)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"{record['env_id']} memorisation probe: {record['num_seeds']} seeds, mean and 95% CI (t) over seeds",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------ command line
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The probe's options (checked: pools positive, --heldout `lo:hi`)."""
    p = argparse.ArgumentParser(
        description="Memorisation probe: train-pool sizes x seeds, greedy return on training vs "
        "held-out worlds."
    )
    p.add_argument(
        "--env", required=True, help="env id, or wfc / wrm / dbr / opc / aws, or wind_farm_control"
    )
    p.add_argument("--config", default=None, help="YAML config (default: configs/ippo_<env>.yaml)")
    p.add_argument("--out", required=True, help="output folder (runs, probe.json, probe.md, probe.png)")
    p.add_argument("--pools", default="1,10,100,1000", help="training-pool sizes (default 1,10,100,1000)")
    p.add_argument("--seeds", type=int, default=3, help="training seeds per pool, vmapped (default 3)")
    p.add_argument("--heldout", default="6000:6064", help="held-out world seeds lo:hi (default 6000:6064)")
    p.add_argument("--train-base", type=int, default=5000, help="first training world seed (default 5000)")
    p.add_argument(
        "--max-train-eval", type=int, default=64, help="training worlds scored per pool (default 64)"
    )
    p.add_argument("--steps", type=int, default=None, help="evaluation episode steps (default: the env's)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "overrides", nargs="*", metavar="key=value", help="config overrides, e.g. total_env_steps=1e5"
    )
    args = p.parse_intermixed_args(argv)
    args.env = env_id_of(args.env)
    args.config = Path(args.config) if args.config else default_config(args.env)
    try:
        args.pools = sorted({int(v) for v in args.pools.split(",")})
        lo, hi = map(int, args.heldout.split(":"))
    except ValueError:
        p.error(f"--pools {args.pools!r} / --heldout {args.heldout!r}: integers, e.g. 1,10,100 and 6000:6064")
    if min(args.pools) < 1 or args.seeds < 1 or args.max_train_eval < 1 or hi <= lo:
        p.error("pool sizes, --seeds and --max-train-eval must be >= 1, and --heldout lo:hi with hi > lo")
    if any(
        o.split("=")[0] in ("env_id", "train_worlds", "num_seeds", "name", "out_dir") for o in args.overrides
    ):
        p.error(
            "env_id, train_worlds, num_seeds, name and out_dir are set by the probe "
            "(--env, --pools, --seeds, --out)"
        )
    args.overrides = [*args.overrides, f"env_id={args.env}"]
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the probe and print its table."""
    record = run_probe(parse_args(argv))
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
