"""The evaluation-loop bench behind scripts/bench_eval_loop.py: a saved run's held-out evaluation programs
(the trained policy's, greedy and stochastic of every seed; the baselines', scripted and random), vmapped
and in turn, this tree's and, with `--old-rollout`, another tree's `hivex_jax/eval/rollout.py`, timed in
one process, rounds alternating, with whether their totals are equal."""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.run.eval_policies import (
    baseline_policies,
    greedy_and_stochastic_rows,
    greedy_or_stochastic,
    policy_env,
)
from baselines.run.evaluation import load_run
from hivex_jax.eval import rollout


def load_module(path: str) -> ModuleType:
    """Another tree's rollout module, loaded from its file."""
    spec = importlib.util.spec_from_file_location("old_rollout", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--old-rollout: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def programs(
    run: str, worlds: str, old: ModuleType | None, ways: list[bool]
) -> dict[str, tuple[str, Any, Any]]:
    """`{name: (kind, program, argument)}`: each evaluation program of `run` and what it is called with."""
    config, population, state = load_run(run)
    train = population.train
    key = jax.random.PRNGKey(config.eval_seed)
    rows = greedy_and_stochastic_rows(state.params, config.num_seeds)
    names, baselines = baseline_policies(train.env, train.env_params)
    index = jnp.arange(len(names))
    trained_env, trained = policy_env(train), greedy_or_stochastic(train)
    out = {}
    for tree, module in (("this tree", rollout), ("old tree", old)):
        if module is None:
            continue
        for in_turn in ways:
            way = "in turn" if in_turn else "vmapped"
            out[f"trained, {way}, {tree}"] = (
                "trained",
                module.Evaluator(
                    trained_env, train.env_params, trained, worlds, key, None, True, in_turn=in_turn
                ),
                rows,
            )
            out[f"baselines, {way}, {tree}"] = (
                "baselines",
                module.Evaluator(
                    train.env, train.env_params, baselines, worlds, key, None, True, in_turn=in_turn
                ),
                index,
            )
    return out


def main(argv: list[str] | None = None) -> None:
    """Time the programs and compare their totals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a run folder (config.yaml and checkpoints)")
    parser.add_argument("--worlds", default="6000:6032", help="held-out worlds (default 6000:6032)")
    parser.add_argument("--old-rollout", default=None, help="another tree's hivex_jax/eval/rollout.py")
    parser.add_argument("--rounds", type=int, default=2, help="timed calls per program after the first")
    parser.add_argument("--only", default="", help="comma-separated kinds to time: trained, baselines")
    parser.add_argument("--ways", default="in_turn,vmapped", help="comma-separated: in_turn, vmapped")
    args = parser.parse_args(argv)
    if not (Path(args.run) / "config.yaml").is_file():
        raise SystemExit(f"--run: no config.yaml in {args.run}")
    ways = args.ways.split(",")
    if not ways or set(ways) - {"in_turn", "vmapped"}:
        raise SystemExit(f"--ways: {args.ways!r} is not a comma-separated list of in_turn, vmapped")
    old = load_module(args.old_rollout) if args.old_rollout else None
    table = programs(args.run, args.worlds, old, [way == "in_turn" for way in ways])
    if args.only:
        kinds = set(args.only.split(","))
        table = {k: v for k, v in table.items() if v[0] in kinds}
    totals_of: dict[str, Any] = {}
    for name, (kind, program, arg) in table.items():
        t0 = time.perf_counter()
        totals = totals_of[name] = program(arg)
        wall = time.perf_counter() - t0
        reference = (
            name.replace("old tree", "this tree") if "old tree" in name else f"{kind}, in turn, this tree"
        )
        if reference == name or reference not in totals_of:
            same = "reference"
        else:
            diff = float(np.max(np.abs(totals["return"] - totals_of[reference]["return"])))
            equal = jax.tree.all(jax.tree.map(np.array_equal, totals, totals_of[reference]))
            same = f"vs {reference}: " + (
                "equal bit for bit" if equal else f"max |return difference| {diff:.3g}"
            )
        longest = int(np.max(totals["length"]))
        means = ", ".join(f"{m:.4f}" for m in np.asarray(totals["return"]).mean(axis=(1, 2)))
        print(
            f"{name}: first call {wall:.1f} s (longest episode {longest} steps; row means {means}; {same})",
            flush=True,
        )
    for r in range(args.rounds):
        for name, (_, program, arg) in table.items():
            t0 = time.perf_counter()
            jax.block_until_ready(program(arg))
            print(f"round {r + 1}, {name}: {time.perf_counter() - t0:.2f} s", flush=True)
