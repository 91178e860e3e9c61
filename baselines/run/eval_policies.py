"""The policies an evaluation plays: the trained actor (greedy, stochastic, or both in one program; a
recurrent actor with its memory carried in the env state, `PolicyMemoryEnv`) and the baselines (scripted,
random) as one policy over an index, with the env params as constants or, where that scores the same bit
for bit (`BASELINES_EXACT_AS_DATA`), as data for every setting of a fused sweep (`SettingBaselines`).
`baselines.run.evaluation` runs them on test worlds."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from baselines.core.ppo import Train
from baselines.run.population import seeds_in_turn
from hivex_jax.core.wrapper import WrappedState, Wrapper
from hivex_jax.eval import rollout


# ------------------------------------------------------------------------ recurrent policies' memory
@struct.dataclass
class MemoryState(WrappedState):
    """The env's state plus a recurrent policy's memory (`PolicyMemory` of one env)."""

    hidden: jax.Array  # f32[A, H], the GRU state after the last step
    episode_start: jax.Array  # bool[], the current obs is an episode's first: the policy starts afresh


class PolicyMemoryEnv(Wrapper):
    """The env with a recurrent policy's memory in its state, so the evaluation rollouts (which call
    `policy(params, key, obs, state)` without a carry) run recurrent actors unchanged: the policy reads
    `state.hidden` and returns its new hidden state as `action["memory"]`, which `step` stores. A reset
    (every evaluation episode, each world of the HIVEX protocol) and a step that ends the episode give
    the initial state, as in training; actions without "memory" (the baselines' noop) keep it."""

    def __init__(self, env: Any, initial_memory: Any):
        super().__init__(env)
        self.initial_memory = initial_memory

    def reset(self, key: jax.Array, params: Any) -> tuple[dict, MemoryState]:
        obs, state = self.env.reset(key, params)
        hidden = self.initial_memory((self.env.num_agents,))
        return obs, MemoryState(state, hidden, jnp.ones((), bool))

    def step(self, key: jax.Array, state: MemoryState, action: dict, params: Any) -> tuple:
        action = dict(action)
        hidden = action.pop("memory", state.hidden)
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, params
        )
        return obs, MemoryState(env_state, hidden, info["done"]), reward, terminated, truncated, info


def policy_env(train: Train, env: Any = None) -> Any:
    """The env (default `train.env`) the trained policy is evaluated in: wrapped with the policy's memory
    (`PolicyMemoryEnv`) for a recurrent actor, as it is otherwise."""
    env = train.env if env is None else env
    return env if train.policy_step is None else PolicyMemoryEnv(env, train.initial_memory)


def _recurrent_step(train: Train, params: Any, obs: dict, state: MemoryState) -> tuple[Any, jax.Array]:
    """The recurrent actor's distribution and new hidden state on one env's `obs [A, ...]`."""
    episode_start = jnp.broadcast_to(state.episode_start, state.hidden.shape[:-1])
    hidden, dist = train.policy_step(params, obs, state.hidden, episode_start)
    return dist, hidden


def trained_policy(train: Train, greedy: bool) -> rollout.Policy:
    """The trained actor as an evaluation `Policy` (its params: the runner's `params`); a recurrent one
    runs in `policy_env(train)`."""
    if train.policy_step is None:
        return lambda params, key, obs, state: train.act(params, obs, key, greedy)

    def policy(params, key, obs, state):
        dist, hidden = _recurrent_step(train, params, obs, state)
        return {**(dist.mode() if greedy else dist.sample(key)), "memory": hidden}

    return policy


def greedy_or_stochastic(train: Train) -> rollout.Policy:
    """Policy over `(params, greedy: bool[])`: one compiled program scores both variants, the actor run
    once per step for both (its mode or a sample of it, picked per row)."""

    def policy(params_and_flag, key, obs, state):
        params, greedy = params_and_flag
        if train.policy_step is None:  # what `train.act` computes for either flag, the actor once
            _, dist = train.policy.step(params, obs, None, None)
            return jax.tree.map(lambda a, b: jnp.where(greedy, a, b), dist.mode(), dist.sample(key))
        dist, hidden = _recurrent_step(train, params, obs, state)
        mode, sample = dist.mode(), dist.sample(key)
        return {**jax.tree.map(lambda a, b: jnp.where(greedy, a, b), mode, sample), "memory": hidden}

    return policy


def greedy_and_stochastic_rows(params: Any, num_seeds: int) -> tuple[Any, jax.Array]:
    """`greedy_or_stochastic`'s rows for population params `[S, ...]`: every seed greedy, then every seed
    stochastic, `(params [2S, ...], greedy bool[2S])`."""
    both = jax.tree.map(lambda x: jnp.concatenate([x, x]), params)
    return both, jnp.arange(2 * num_seeds) < num_seeds


def rows_in_turn(env: Any, env_params: Any, devices: Any = None) -> bool:
    """Whether an evaluation plays its trained policy's rows (seeds, greedy and stochastic; the transfer
    matrix's rows) one after another rather than vmapped: where the population runs its seeds in turn
    (`seeds_in_turn`: one CPU device), on envs with camera images. A camera env's row step is heavy (a
    convolutional actor; in turn OPC 1.14x, AWS 1.07x, DBR 1.01x as fast), a vector env's light: there the
    loop's per-step cost, paid once per row, outweighs it (in turn WFC 0.66x, WRM 0.90x as fast)."""
    devices = jax.devices() if devices is None else devices
    return seeds_in_turn(devices) and "visual" in env.observation_space(env_params).spaces


def baseline_policies(env: Any, env_params: Any) -> tuple[list[str], rollout.Policy]:
    """Names and one policy over an index: the scripted controller (if the env has one) and random."""
    names, policies = [], []
    scripted = rollout.scripted_policy(env, env_params)
    if scripted is not None:
        names.append("scripted")
        policies.append(scripted)
    names.append("random")
    policies.append(rollout.random_policy(env))

    def policy(index, key, obs, state):
        # one branch per index (vmapped over indices, every branch and a select: the same actions)
        branches = [lambda k, o, s, p=p: p(None, k, o, s) for p in policies]
        return jax.lax.switch(index, branches, key, obs, state)

    return names, policy


#: envs whose baselines (scripted, random) score the same, bit for bit, with the env params as data in the
#: compiled program as with them as constants (every task and level, worlds 6000-6002, 2026-12-03; with the
#: evaluation loop of 2026-12-06, the first and last task and the last level, vmapped and in turn: docs/
#: sweeps.md), so a fused sweep over their settings plays every setting's baselines with one program. Not
#: Wind Farm Control, Drone-Based Reforestation: XLA folds their constant params with other rounding (a
#: return's 1e-7 on WFC; a changed episode on DBR), so there each setting keeps its own program
BASELINES_EXACT_AS_DATA = frozenset({"AerialWildfireSuppression-v0", "OceanPlasticCollection-v0"})
#: the same, only with the baselines played in turn (vmapped since 2026-12-06: the last bits of some returns)
BASELINES_EXACT_AS_DATA_IN_TURN = frozenset({"WildfireResourceManagement-v0"})


class SettingBaselines:
    """A baselines program with the env params as data (`rollout.Evaluator(..., params_axis=True)` over
    `baseline_factory`) bound to one setting's params: called as a constant-params program is."""

    def __init__(self, program: rollout.Evaluator, params_stack: Any):
        self.program, self.params_stack = program, params_stack  # stack of one setting

    def __call__(self, policy_index: jax.Array, worlds: Any = None) -> dict[str, Any]:
        """Totals `[P, W, ...]` of policies `policy_index [P]` on the program's worlds or `worlds`."""
        totals = self.program(policy_index, worlds, env_params=self.params_stack)  # [P, 1, W, ...]
        return jax.tree.map(lambda x: x[:, 0], totals)


def baseline_factory(env: Any) -> rollout.PolicyFactory:
    """`baseline_policies`' policy for env params given as data: `make_policy(env_params)`."""
    return lambda env_params: baseline_policies(env, env_params)[1]
