"""`hivex evaluate RUN --protocol hivex`: a saved run scored the way HIVEX scored its policies.

The protocol itself (windows of agent steps, one world after another from seed 6000, stochastic
actions) lives in `hivex_jax.eval.hivex_protocol`; this module feeds it a run's trained policy (run i =
training seed i, at most `runs` seeds) and the scripted and random baselines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax

from baselines.run import eval_policies, evaluation
from hivex_jax.eval import rollout
from hivex_jax.eval.hivex_protocol import evaluate_hivex_protocol, hivex_test_run
from hivex_jax.eval.score import score_fields, score_lines


def hivex_runs(num_seeds: int, runs: int | None = None) -> int:
    """How many HIVEX test runs a run of `num_seeds` training seeds plays: `runs`, else min(3, seeds)."""
    return min(3, num_seeds) if runs is None else runs


def evaluate_run_hivex(
    run_dir: str | Path,
    agent_steps: int | None = None,
    runs: int | None = None,
    summary_freq: int | None = None,
    baselines: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """HIVEX-protocol results of a saved run: `{"protocol": "hivex", "policies": {name: {...}}}`.

    `runs` defaults to min(3, the run's seeds), as HIVEX tested 3 runs per cell. Run i differs from run 0
    by its parameters (training seed i) only: the protocol's step keys depend on the test seed and the
    decision. So the scripted controller and the random policy, which have no parameters, play one run
    each (more would repeat it exactly).
    """
    config, population, state = evaluation.load_run(run_dir)
    train = population.train
    env, env_params = train.env, train.env_params
    runs = hivex_runs(config.num_seeds, runs)
    if runs > config.num_seeds:
        raise ValueError(f"runs={runs} but the run has {config.num_seeds} training seed(s)")
    protocol = hivex_test_run(config.env_id, agent_steps=agent_steps, runs=runs, summary_freq=summary_freq)
    params = jax.tree.map(lambda x: x[:runs], state.params)
    policies: dict[str, Any] = {
        "stochastic": evaluate_hivex_protocol(
            eval_policies.policy_env(train),  # with a recurrent actor's memory in the state
            env_params,
            eval_policies.trained_policy(train, greedy=False),
            params,
            protocol,
            progress=progress,
            label="stochastic",
        )
    }
    if baselines:
        one = hivex_test_run(
            config.env_id, agent_steps=protocol.agent_steps, runs=1, summary_freq=protocol.summary_freq
        )
        scripted = rollout.scripted_policy(env, env_params)
        if scripted is not None:
            policies["scripted"] = evaluate_hivex_protocol(
                env, env_params, scripted, None, one, progress=progress, label="scripted"
            )
        policies["random"] = evaluate_hivex_protocol(
            env, env_params, rollout.random_policy(env), None, one, progress=progress, label="random"
        )
    out: dict[str, Any] = {
        "protocol": "hivex",
        "protocol_description": (
            "HIVEX (reference §1.4): per run, one world after another from the test seed, stochastic "
            "actions, the mean of per-window mean agent returns (summary_freq agent steps); "
            "cell = mean over runs"
        ),
        "test_run": policies["stochastic"]["test_run"],
        "policies": policies,
        "algo": config.algo,
        "env_id": config.env_id,
        "task": config.task,
        "level": config.level,
        "num_seeds": config.num_seeds,
        "updates_done": int(jax.device_get(state.update)[0]),
    }
    # the stochastic cell's normalised score (and fraction of scripted where the scripted cell is positive)
    out.update(score_fields({n: p["cell"] for n, p in policies.items()}, trained=("stochastic",)))
    return out


def format_hivex_results(results: dict[str, Any]) -> str:
    """A small table of the HIVEX-protocol cell value per policy and its per-run means."""
    test_run = results["test_run"]
    lines = [
        f"HIVEX protocol: {results['env_id']} task {results['task']}"
        + (f" level {results['level']}" if results["level"] is not None else "")
        + ", "
        f"{test_run['agent_steps']:,} agent steps per run, summary every {test_run['summary_freq']:,}, "
        f"worlds from {test_run['test_seed']}",
        f"{'policy':12s} {'cell':>10s} {'agent ep len':>13s} {'world ep len':>13s}  per-run means",
    ]
    if results.get("not_comparable"):
        lines.insert(0, results["not_comparable"])
    for name, res in results["policies"].items():
        per_run = ", ".join(f"{r['mean']:.1f}" for r in res["runs"])
        lines.append(
            f"{name:12s} {res['cell']:10.1f} {res['agent_episode_length']:13.1f} "
            f"{res['world_episode_length']:13.1f}  {per_run}"
        )
    lines.append(
        "  (agent ep len: each agent's decisions while active, HIVEX's Environment/Episode Length; "
        "world ep len: decisions until the world's episode ended)"
    )
    # from the cells, so eval_hivex.json files written before the score was saved read the same
    cells = {n: p["cell"] for n, p in results["policies"].items()}
    lines += score_lines(score_fields(cells, trained=("stochastic",)))
    return "\n".join(lines)
