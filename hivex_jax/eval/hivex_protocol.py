"""HIVEX's own evaluation protocol (reference §1.4, §3): how the published "test" cells were produced.

HIVEX tested each trained policy with `mlagents-learn` at learning rate 0: one Unity process per run,
seeded 6000, actions **sampled** (ML-Agents has no greedy flag), successive episodes continuing one random
stream, for a fixed budget of *agent steps* (decisions summed over agents). ML-Agents writes a summary
point every `summary_freq` agent steps: the mean per-agent return of the agent-episodes that ended in
that window (a window where none ended writes nothing). A cell's test number is the mean of all summary
points of a run, averaged over the 3 runs (test run i evaluates training run i).

Here, run i is training seed i's policy. Each run plays worlds `test_seed`, `test_seed + 1`, ... in turn
(episode k on world `test_seed + k`, the same sequence for every run, as HIVEX used seed 6000 for every
test run), with stochastic actions from one key stream. An agent step is a decision of an *active*
agent (`info["active"]`), as ML-Agents counts only agents that request decisions. Every agent's return is
recorded when the episode ends (all agents done or time up) in the window the episode's last decision
falls in, with two episode lengths: the world's (decisions until the episode ended, the same for every
agent) and the agent's own (its decisions while active in that episode), the one ML-Agents logs as
`Environment/Episode Length`: it logs per agent, and HIVEX restarts agents one at a time. Runs are
played one after another (`lax.map`), so the reset between episodes is a real branch, not a select that
would generate a world every step.

The per-env budgets are HIVEX's test `max_steps` and `summary_freq` (reference §2, hyper-parameter
tables); `agent_steps` may be lowered for a cheaper estimate (the output records what was used).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import hivex_protocol_step_keys, world_key
from hivex_jax.eval.hivex_cells import HIVEX_ENVS, HivexTestRun

Policy = Callable[[Any, jax.Array, dict, Any], dict]


#: reference §2 hyper-parameter tables (test run column) and §1.4 (3 test runs, seed 6000); the budgets
#: live with the rest of each env's HIVEX metadata in `hivex_cells`
HIVEX_TEST_RUNS: dict[str, HivexTestRun] = {env_id: env.test_run for env_id, env in HIVEX_ENVS.items()}


def hivex_test_run(
    env_id: str, agent_steps: int | None = None, runs: int | None = None, summary_freq: int | None = None
) -> HivexTestRun:
    """The HIVEX test-run budget of `env_id`, optionally changed (fewer agent steps or runs). An env HIVEX
    has no test run for needs both `agent_steps` and `summary_freq`."""
    if env_id in HIVEX_TEST_RUNS:
        run = HIVEX_TEST_RUNS[env_id]
    elif agent_steps is not None and summary_freq is not None:
        run = HivexTestRun(agent_steps=int(agent_steps), summary_freq=int(summary_freq))
    else:
        raise ValueError(
            f"HIVEX published test runs for {', '.join(HIVEX_TEST_RUNS)}; {env_id!r} needs both "
            "agent_steps and summary_freq"
        )
    summary_freq = run.summary_freq if summary_freq is None else int(summary_freq)
    agent_steps = run.agent_steps if agent_steps is None else int(agent_steps)
    if summary_freq < 1:
        raise ValueError(f"summary_freq must be >= 1; got {summary_freq}")
    if agent_steps < summary_freq:
        raise ValueError(
            f"agent_steps must be at least one summary window ({summary_freq} for {env_id}); "
            f"got {agent_steps}"
        )
    if runs is not None and runs < 1:
        raise ValueError(f"runs must be >= 1; got {runs}")
    return dataclasses.replace(
        run, agent_steps=agent_steps, summary_freq=summary_freq, runs=run.runs if runs is None else int(runs)
    )


def _make_chunk(env: Any, env_params: Any, policy: Policy, protocol: HivexTestRun, chunk: int):
    """`chunk(policy_params [R, ...], carry [R, ...]) -> carry`: `chunk` decisions of every run."""
    num_windows = -(-protocol.agent_steps // protocol.summary_freq)

    def init(_: Any) -> dict[str, Any]:
        obs, state = env.reset(world_key(protocol.test_seed), env_params)
        a = env.num_agents
        return {
            "obs": obs,
            "state": state,
            "episode": jnp.zeros((), jnp.int32),
            "decision": jnp.zeros((), jnp.int32),
            "agent_steps": jnp.zeros((), jnp.int32),
            "episode_return": jnp.zeros(a, jnp.float32),
            "episode_length": jnp.zeros((), jnp.int32),
            "window_return_sum": jnp.zeros(num_windows, jnp.float32),
            "agent_episode_length": jnp.zeros(a, jnp.int32),
            "window_length_sum": jnp.zeros(num_windows, jnp.float32),
            "window_agent_length_sum": jnp.zeros(num_windows, jnp.float32),
            "window_agent_episodes": jnp.zeros(num_windows, jnp.int32),
        }

    def one_run(args: tuple[Any, dict]) -> dict:
        policy_params, carry = args

        def body(c: dict, _: Any) -> tuple[dict, None]:
            k_act, k_env = hivex_protocol_step_keys(protocol.test_seed, c["decision"])
            action = policy(policy_params, k_act, c["obs"], c["state"])
            obs, state, reward, _, _, info = env.step(k_env, c["state"], action, env_params)
            counting = c["agent_steps"] < protocol.agent_steps  # decisions past the budget are not logged
            window = jnp.minimum(c["agent_steps"] // protocol.summary_freq, num_windows - 1)
            episode_return = c["episode_return"] + reward
            episode_length = c["episode_length"] + 1
            agent_episode_length = c["agent_episode_length"] + info["active"].astype(jnp.int32)
            ended = info["done"] & counting
            a = env.num_agents
            c = dict(c)
            c["window_return_sum"] = (
                c["window_return_sum"].at[window].add(jnp.where(ended, episode_return.sum(), 0.0))
            )
            c["window_length_sum"] = (
                c["window_length_sum"]
                .at[window]
                .add(jnp.where(ended, a * episode_length, 0).astype(jnp.float32))
            )
            c["window_agent_length_sum"] = (
                c["window_agent_length_sum"]
                .at[window]
                .add(jnp.where(ended, agent_episode_length.sum(), 0).astype(jnp.float32))
            )
            c["window_agent_episodes"] = c["window_agent_episodes"].at[window].add(jnp.where(ended, a, 0))
            c["agent_steps"] = c["agent_steps"] + jnp.where(counting, info["active"].sum(), 0).astype(
                jnp.int32
            )
            c["decision"] = c["decision"] + 1
            next_episode = c["episode"] + info["done"].astype(jnp.int32)
            # a real branch (no vmap around it): worlds are generated only when an episode ends
            obs, state = jax.lax.cond(
                info["done"],
                lambda: env.reset(world_key(protocol.test_seed + next_episode), env_params),
                lambda: (obs, state),
            )
            c.update(
                obs=obs,
                state=state,
                episode=next_episode,
                episode_return=jnp.where(info["done"], 0.0, episode_return),
                episode_length=jnp.where(info["done"], 0, episode_length),
                agent_episode_length=jnp.where(info["done"], 0, agent_episode_length),
            )
            return c, None

        carry, _ = jax.lax.scan(body, carry, None, length=chunk)
        return carry

    run_chunk = jax.jit(lambda params, carry: jax.lax.map(one_run, (params, carry)))
    init_all = jax.jit(lambda n: jax.vmap(init)(jnp.arange(n)), static_argnums=0)
    return init_all, run_chunk


def evaluate_hivex_protocol(
    env: Any,
    env_params: Any,
    policy: Policy,
    policy_params: Any,
    protocol: HivexTestRun,
    chunk: int = 4096,
    progress: bool = False,
    label: str = "",
) -> dict[str, Any]:
    """HIVEX test runs of `policy` (params with a leading run axis `[R, ...]`, R = `protocol.runs`; None
    for a parameter-free policy) -> per-run summary points and the cell value (mean over runs of each
    run's mean summary point), as plain Python numbers. `label` names the policy on the progress bar.

    Two episode lengths, both as means of per-window means like the returns: `world_episode_length` (how
    many decisions the world's episode lasted, credited to every agent) and `agent_episode_length` (each
    agent's decisions while it was active: HIVEX's `Environment/Episode Length`). `episode_length` is the
    world's, kept under its old name for results written before the per-agent count."""
    runs = protocol.runs
    init_all, run_chunk = _make_chunk(env, env_params, policy, protocol, chunk)
    carry = init_all(runs)
    params = policy_params if policy_params is not None else jnp.zeros((runs,), jnp.int32)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        who = f"{label}, " if label else ""
        desc = f"HIVEX protocol ({who}agent steps, slowest run)"
        bar = tqdm(total=protocol.agent_steps, desc=desc, unit="step")
    done_steps = 0
    while done_steps < protocol.agent_steps:
        carry = run_chunk(params, carry)
        before, done_steps = done_steps, int(np.min(jax.device_get(carry["agent_steps"])))
        if done_steps == before:  # cannot happen with a conforming env: an episode ends once all are out
            raise RuntimeError(f"the HIVEX protocol made no progress in {chunk} decisions (no agent active)")
        if bar is not None:
            bar.update(min(done_steps, protocol.agent_steps) - bar.n)
    if bar is not None:
        bar.close()
    sums = np.asarray(carry["window_return_sum"], np.float64)
    lengths = np.asarray(carry["window_length_sum"], np.float64)
    agent_lengths = np.asarray(carry["window_agent_length_sum"], np.float64)
    counts = np.asarray(carry["window_agent_episodes"], np.float64)
    per_run = []
    for r in range(runs):
        logged = counts[r] > 0  # ML-Agents writes no Cumulative Reward point for a window without episodes
        points = (sums[r][logged] / counts[r][logged]).tolist()
        length_points = (lengths[r][logged] / counts[r][logged]).tolist()
        agent_length_points = (agent_lengths[r][logged] / counts[r][logged]).tolist()
        per_run.append(
            {
                "summary_points": points,
                "episode_length_points": length_points,
                "mean": float(np.mean(points)) if points else float("nan"),
                "agent_episode_length_points": agent_length_points,
                "episode_length_mean": float(np.mean(length_points)) if points else float("nan"),
                "agent_episode_length_mean": (
                    float(np.mean(agent_length_points)) if points else float("nan")
                ),
                "episodes": int(np.asarray(carry["episode"])[r]),
                "agent_steps": int(min(np.asarray(carry["agent_steps"])[r], protocol.agent_steps)),
            }
        )
    means = [r["mean"] for r in per_run]
    return {
        "protocol": "hivex",
        "test_run": dataclasses.asdict(protocol),
        "cell": float(np.mean(means)),
        "episode_length": float(np.mean([r["episode_length_mean"] for r in per_run])),
        "world_episode_length": float(np.mean([r["episode_length_mean"] for r in per_run])),
        "agent_episode_length": float(np.mean([r["agent_episode_length_mean"] for r in per_run])),
        "runs": per_run,
    }
