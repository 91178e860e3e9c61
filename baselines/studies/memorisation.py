"""Memorisation probe: train on pools of 1, 10, 100, 1000 worlds (seeds vmapped in one run per pool), then
score the greedy policy on held-out worlds and on its own training worlds; the gap between the two is
what the policy memorised rather than learned (`scripts/memorisation_probe.py` is its command line).

Per pool size N: one training run (the env's shipped IPPO config, or --config, plus key=value overrides)
with `train_worlds = BASE:BASE+N`, `num_seeds` seeds vmapped; then the greedy policy of every seed on the
held-out worlds (default 6000:6064) and on its first min(N, --max-train-eval) training worlds, and the
scripted and random policies on the same worlds (same evaluation key). Per seed: the mean return over
worlds, its fraction of the scripted return on the same worlds, and train minus held-out (paired by
seed); every figure is the mean and a Student-t 95% CI over seeds of those per-seed values
(`baselines.studies.memorisation_report`).

Writes OUT/probe.json (rewritten after each pool: resumable), OUT/probe.md and OUT/probe.png; the runs
are OUT/pool_<N>/. Each pool is a cell of a `baselines.studies.study`: run again with the same
arguments to skip
finished pools (a run stopped mid-training resumes from its last checkpoint); more --pools add cells.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from baselines.cli.common import enable_compilation_cache  # also sets how jax starts, before it starts
from baselines.config import load_config, validate_env
from baselines.run.evaluation import get_evaluation, load_run
from baselines.run.runner import run_training
from baselines.studies.memorisation_report import STATISTIC, gap, markdown, plot, side
from baselines.studies.study import ROOT, CellError, ResultsFile, StudyCell, run_cells
from hivex_jax.eval.hivex_cells import HIVEX_ENVS

SHORT_NAMES = {env.short: env_id for env_id, env in HIVEX_ENVS.items()}
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
    return ROOT / "configs" / f"ippo_{snake(env_id)}.yaml"


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


def train_pool(config: Any, run_dir: Path, progress: bool, resume: bool) -> dict[str, Any]:
    """Train (or finish, `resume`) the run of one pool size; returns its summary."""
    return run_training(config, run_dir, resume=resume, progress=progress, outputs=False, log=_quiet)


def _quiet(*_: Any) -> None:
    """The runner's log lines are not the probe's output (its progress bar is)."""


def _finished(run_dir: Path) -> bool:
    """Whether the pool's run folder holds a finished run (summary.json says so)."""
    summary = run_dir / "summary.json"
    return summary.is_file() and bool(json.loads(summary.read_text()).get("finished"))


def greedy_returns(run_dir: Path, worlds: str, num_steps: int | None) -> Any:
    """Greedy return per seed and world `[S, W]` (mean over agents) of a saved run on `worlds`."""
    import jax.numpy as jnp

    config, population, state = load_run(run_dir)
    evaluation = get_evaluation(population, worlds, num_steps)
    greedy = jnp.ones(config.num_seeds, bool)  # the greedy half of trained_totals only
    totals = evaluation.trained((state.params, greedy), evaluation.worlds)
    return totals["return"].mean(-1)


def baseline_returns(run_dir: Path, worlds: str, num_steps: int | None) -> dict[str, list[float]]:
    """Scripted (if the env has one) and random return per world (mean over agents) on `worlds`."""
    _, population, _ = load_run(run_dir)
    totals = get_evaluation(population, worlds, num_steps).baseline_totals()
    return {name: t["return"].mean(-1).tolist() for name, t in totals.items()}


def evaluate_pool(args: argparse.Namespace, pool: int, config: Any, results: ResultsFile) -> dict[str, Any]:
    """A trained pool's row: greedy, scripted and random returns on its training and held-out worlds."""
    run_dir = Path(args.out) / f"pool_{pool}"
    summary = json.loads((run_dir / "summary.json").read_text())
    train_worlds = world_range(args.train_base, min(pool, args.max_train_eval))
    baselines = results.record["baselines"]
    sides = {}
    for name, worlds in (("train", train_worlds), ("heldout", args.heldout)):
        if worlds not in baselines:  # the baselines' returns depend on the worlds only
            baselines[worlds] = baseline_returns(run_dir, worlds, args.steps)
        base = baselines[worlds]
        returns = greedy_returns(run_dir, worlds, args.steps)
        sides[name] = side(returns, base.get("scripted", []), base["random"])
    return {
        "pool_size": pool,
        "run_dir": str(run_dir),
        "train_worlds": world_range(args.train_base, pool),
        "train_eval_worlds": train_worlds,
        "updates_done": summary["updates_done"],
        "env_steps_per_seed": summary["updates_done"] * config.steps_per_update,
        "train": sides["train"],
        "heldout": sides["heldout"],
        "gap": gap(sides["train"], sides["heldout"]),
        "load_average_1min": os.getloadavg()[0],
    }


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
    try:
        results = ResultsFile(
            out / "probe.json",
            {**header, "statistic": STATISTIC, "baselines": {}},
            compare=(*HEADER_KEYS, "num_steps"),
        )
    except CellError as exc:
        raise SystemExit(str(exc)) from exc
    enable_compilation_cache()
    todo = [p for p in args.pools if not results.has(str(p))]
    bar = tqdm(
        total=len(args.pools), initial=len(args.pools) - len(todo), desc="pools", disable=args.no_progress
    )
    cells = [
        StudyCell(
            key=str(pool),
            run_dir=out / f"pool_{pool}",
            # a recorded pool is done whatever its run folder holds now
            trained=lambda pool=pool: results.has(str(pool)) or _finished(out / f"pool_{pool}"),
            train=lambda resume, pool=pool: train_pool(
                configs[pool], out / f"pool_{pool}", not args.no_progress, resume
            ),
            evaluate=lambda pool=pool: evaluate_pool(args, pool, configs[pool], results),
        )
        for pool in todo
    ]
    try:
        run_cells(cells, results, report=lambda *_: bar.update(1))
    except CellError as exc:
        raise SystemExit(str(exc)) from exc
    bar.close()
    (out / "probe.md").write_text(markdown(results.record))
    plot(out / "probe.png", results.record)
    return results.record


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
