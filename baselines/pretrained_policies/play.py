"""A pretrained policy played: as a rollout policy (`rollout_policy`, what `hivex render --pretrained` and the
card's check play), the card's check (`first_outputs`: the actor on a few worlds' first observations;
`check_returns`: greedy returns in short episodes on them), the held-out
evaluation `hivex evaluate --pretrained` prints (`evaluate`: the same code as a run folder's, with one seed)
and a row of a `hivex transfer` matrix (`loaded_run`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from baselines.pretrained_policies.store import Pretrained
from baselines.run.eval_policies import MemoryState, PolicyMemoryEnv
from baselines.run.evaluation import evaluate_params
from baselines.run.population import get_population
from baselines.run.transfer_matrix import LoadedRun
from hivex_jax import world_key
from hivex_jax.eval import rollout

#: the card's check: the actor's outputs on these worlds' first observations, and greedy returns on them in
#: episodes cut at CHECK_STEPS decisions
CHECK_WORLDS = (6000, 6001)
CHECK_STEPS = 100
#: the outputs' tolerance (numpy `allclose`): one forward pass, other XLA compile flags or CPUs round it
#: otherwise by ~1e-6
OUTPUTS_RTOL, OUTPUTS_ATOL = 1e-4, 1e-4
#: the returns' tolerance: a rounding can move one discrete event of a 100-step episode (a tree planted, a
#: fire cell put out) and the rest of the episode with it; measured on one CPU between the build's compile
#: flags and the default test selection's: mappo_dbr world 6001 65.47 vs 70.54 (7.7 %), ippo_aws world 6000
#: 278.97 vs 274.97 after a change of the convolutions' rounding (1.4 %). The outputs check is the exact one
CHECK_RTOL, CHECK_ATOL = 0.1, 6.0


def population_params(policy: Pretrained) -> Any:
    """The policy's parameters as a population of one seed, `[1, ...]`, as the trainer's evaluation takes."""
    return jax.tree.map(lambda x: x[None], policy.params)


def rollout_policy(policy: Pretrained) -> tuple[Any, rollout.Policy]:
    """`(env, rollout policy)`: the policy as `hivex_jax.eval.rollout` plays one, `(params, key, obs, state)
    -> action`, on `env` (the card's env; for a recurrent policy wrapped in `PolicyMemoryEnv`, which
    keeps the memory in the state and starts each episode from the initial one)."""
    if not policy.recurrent:
        return policy.env, lambda params, key, obs, state: policy.act(params, obs, key)
    env = PolicyMemoryEnv(policy.env, policy.policy.initial_memory)

    def play(params: Any, key: jax.Array, obs: dict, state: MemoryState) -> dict:
        episode_start = jnp.broadcast_to(state.episode_start, state.hidden.shape[:-1])
        hidden, dist = policy.policy.step(params, obs, state.hidden, episode_start)
        action = dist.mode() if policy.greedy else dist.sample(key)
        return {**action, "memory": hidden}

    return env, play


def check_returns(policy: Pretrained, worlds: Sequence[int], num_steps: int) -> list[float]:
    """The greedy return (mean over agents) on each of `worlds` in episodes cut at `num_steps` decisions,
    with the card's evaluation key: the figures a card's `check` stores and its test reproduces."""
    env, play = rollout_policy(policy.with_greedy(True))
    key = jax.random.PRNGKey(policy.config.eval_seed)
    totals = rollout.evaluate(env, policy.env_params, play, list(worlds), policy.params, key, num_steps)
    return [float(x) for x in totals["return"].mean(-1)]


def first_outputs(policy: Pretrained, worlds: Sequence[int]) -> list[list[float]]:
    """Per world of `worlds`, the actor's distribution on the world's first observation (from the initial
    memory for a recurrent policy): each discrete branch's logits, then the continuous means, per agent and
    flattened, `[A * (sum of branch sizes + C)]`. One forward pass, free of the env's discrete events: the
    card's check of the weights and the network to float rounding."""
    env, params = policy.env, policy.env_params

    @jax.jit
    def outputs(key: jax.Array) -> jax.Array:
        obs, _ = env.reset(key, params)
        memory = policy.initial_memory()
        start = None if memory is None else jnp.ones(memory.shape[:-1], bool)
        dist = policy.policy.step(policy.params, obs, memory, start)[1]
        parts = [*dist.logits, dist.mean]
        return jnp.concatenate([p.reshape(p.shape[0], -1) for p in parts], axis=-1).reshape(-1)

    return [[float(x) for x in outputs(world_key(w))] for w in worlds]


def card_check(policy: Pretrained) -> dict[str, Any]:
    """The figures a card's test reproduces: the actor's outputs on the check worlds' first observations
    (`play.first_outputs`) and the greedy returns of CHECK_STEPS-decision episodes on them, with their
    tolerances."""
    return {
        "worlds": list(CHECK_WORLDS),
        "first_outputs": first_outputs(policy, CHECK_WORLDS),
        "outputs_rtol": OUTPUTS_RTOL,
        "outputs_atol": OUTPUTS_ATOL,
        "num_steps": CHECK_STEPS,
        "greedy_returns": check_returns(policy, CHECK_WORLDS, CHECK_STEPS),
        "rtol": CHECK_RTOL,
        "atol": CHECK_ATOL,
    }


def evaluate(
    policy: Pretrained,
    worlds: str | None = None,
    baselines: bool = True,
    num_steps: int | None = None,
    env_overrides: Sequence[str] = (),
    world_files: str | None = None,
) -> dict[str, Any]:
    """`baselines.run.evaluation.evaluate_run`'s results for the policy (its one seed, greedy and stochastic,
    beside scripted and random; default worlds: its config's test worlds), naming the policy."""
    population = get_population(policy.config)
    results = evaluate_params(
        policy.config,
        population,
        population_params(policy),
        int(policy.card["updates_done"]),
        worlds,
        baselines,
        num_steps,
        env_overrides,
        world_files,
    )
    results["pretrained"] = policy.name
    return results


def loaded_run(policy: Pretrained, label: str) -> LoadedRun:
    """The policy as a run of one seed for a transfer matrix (`baselines.run.transfer_matrix`)."""
    train = get_population(policy.config).train
    updates = int(policy.card["updates_done"])
    return LoadedRun(
        label, f"pretrained:{policy.name}", policy.config, train, population_params(policy), updates
    )
