"""Scripted, random and trained returns on each env's stress worlds beside its normal held-out pool.

    PJRT_NPROC=1 python scripts/stress_worlds_returns.py [--envs ID ...] [--worlds 16] [--out FILE.json]
        [--trained ENV_ID=RUN_DIR ...] [--no-baselines]

Normal pool: worlds 6000.. (the configs' held-out range); stress worlds: 9000.. (`STRESS_SEEDS`), each
stress world on its own. Full episodes (the env's max_steps), `hivex_jax.eval.rollout.Evaluator` with
the env's scripted controller and uniform random actions, key 0. Prints a markdown table of the mean
return per agent over worlds with a 95 % Student-t interval over worlds (docs/worlds.md).

`--trained ENV_ID=RUN_DIR` also scores a saved run's policy (greedy and stochastic, every training
seed) on the same rows, as `hivex evaluate RUN_DIR --worlds 6000:6016` and `hivex evaluate RUN_DIR
env_options.stress_worlds=NAME --worlds 9000:9016` do (`baselines.run.evaluation.evaluate_run`, the run's
`eval_seed`): per seed the mean over worlds, then the mean +- 95 % Student-t interval over seeds.
`--no-baselines` skips the scripted and random policies (only the trained ones).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.eval import rollout
from hivex_jax.worlds.stress import stress_names, with_stress_worlds


def _policies(env, params):
    scripted = rollout.scripted_policy(env, params)
    random = rollout.random_policy(env)

    def policy(index, key, obs, state):
        both = [scripted(None, key, obs, state), random(None, key, obs, state)]
        return jax.tree.map(lambda *xs: jnp.stack(xs)[index], *both)

    return policy


def _summary(returns: np.ndarray) -> dict[str, float]:
    mean = float(returns.mean())
    half = float(stats.t.ppf(0.975, returns.size - 1) * returns.std(ddof=1) / np.sqrt(returns.size))
    return {"mean": mean, "ci95": half}


def _conditions(env_id: str, num_worlds: int) -> dict[str, tuple[str | None, str]]:
    """`{row label: (stress world name or None, world seeds)}`: the normal pool, each stress world."""
    env, _ = hivex_jax.make(env_id)
    rows: dict[str, tuple[str | None, str]] = {"held-out (normal)": (None, f"6000:{6000 + num_worlds}")}
    for name in stress_names(env):
        rows[f"stress: {name}"] = (name, f"9000:{9000 + num_worlds}")
    return rows


def measure_trained(env_id: str, run_dir: str, num_worlds: int) -> dict[str, dict[str, Any]]:
    """`{condition: {"greedy"|"stochastic": summary over seeds, + per-seed means}}` of a saved run."""
    from baselines.run.evaluation import evaluate_run

    out = {}
    for label, (name, worlds) in _conditions(env_id, num_worlds).items():
        overrides = [] if name is None else [f"env_options.stress_worlds={name}"]
        results = evaluate_run(run_dir, worlds, baselines=False, env_overrides=overrides)
        if results["env_id"] != env_id:
            raise SystemExit(f"--trained {env_id}={run_dir}: that run is of {results['env_id']}")
        row = {"run_dir": run_dir, "num_seeds": results["num_seeds"], "updates_done": results["updates_done"]}
        for variant in ("greedy", "stochastic"):
            block = results["policies"][variant]
            per_seed = np.array([w["return_per_seed"] for w in block["per_world"]]).mean(0)  # [S]
            row[variant] = {**block["summary"], "seed_means": per_seed.tolist()}
        out[label] = row
    return out


def measure(env_id: str, num_worlds: int) -> dict[str, dict[str, dict[str, float]]]:
    """`{condition: {"scripted"|"random": {"mean", "ci95"}}}` for the normal pool and each stress world."""
    env, params = hivex_jax.make(env_id)
    conditions = {"held-out (normal)": (env, f"6000:{6000 + num_worlds}")}
    for name in stress_names(env):
        conditions[f"stress: {name}"] = (with_stress_worlds(env, [name]), f"9000:{9000 + num_worlds}")
    out = {}
    for label, (cond_env, worlds) in conditions.items():
        totals = rollout.Evaluator(cond_env, params, _policies(cond_env, params), worlds, 0, batched=True)(
            jnp.arange(2)
        )
        per_world = totals["return"].mean(-1)  # [policy, world]: mean over agents
        out[label] = {"scripted": _summary(per_world[0]), "random": _summary(per_world[1])}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=list(BUNDLED_ENV_IDS))
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--trained",
        nargs="*",
        default=[],
        metavar="ENV_ID=RUN_DIR",
        help="also score the saved run's policy on the same rows (greedy, stochastic; CI over seeds)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="skip scripted and random")
    args = parser.parse_args()
    runs = {}
    for item in args.trained:
        env_id, sep, run_dir = item.partition("=")
        if not sep or env_id not in BUNDLED_ENV_IDS:
            parser.error(f"--trained {item}: expected ENV_ID=RUN_DIR with ENV_ID one of {BUNDLED_ENV_IDS}")
        if not (Path(run_dir) / "config.yaml").is_file():
            parser.error(f"--trained {item}: {run_dir} is not a run folder (no config.yaml)")
        runs[env_id] = run_dir
    envs = list(runs) if args.no_baselines else [*args.envs, *(e for e in runs if e not in args.envs)]
    results: dict[str, Any] = {}
    trained: dict[str, Any] = {}
    for env_id in envs:
        start = time.time()
        if not args.no_baselines:
            results[env_id] = measure(env_id, args.worlds)
        if env_id in runs:
            trained[env_id] = measure_trained(env_id, runs[env_id], args.worlds)
        print(f"# {env_id}: {time.time() - start:.0f} s", flush=True)
        for label in _conditions(env_id, args.worlds):
            cells = []
            if env_id in trained:
                t = trained[env_id][label]
                cells += [f"{t[v]['mean']:.1f} +- {t[v]['ci95']:.1f}" for v in ("greedy", "stochastic")]
            if env_id in results:
                row = results[env_id][label]
                cells += [f"{row[p]['mean']:.1f} +- {row[p]['ci95']:.1f}" for p in ("scripted", "random")]
            print(f"| {env_id} | {label} | " + " | ".join(cells) + " |", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            out = {"worlds_per_condition": args.worlds, "results": results, "trained": trained}
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
