"""The trainer's actors behind one interface: a feed-forward `Actor` (no memory) and a `RecurrentActor`
(a GRU state per agent), so `baselines.core.ppo` acts, collects and replays without asking which it has.

Both expose `init(key, example_obs, num_agents)`, `initial_memory(lead_shape)`, `step(params, obs,
memory, episode_start) -> (memory, HybridDistribution)`, the rollout's `act` / `next_memory`, and the
update's `batch` / `minibatches` / `replay`. The feed-forward memory is `None` (no leaves, so runner
states and checkpoints keep their structure); its update learns from shuffled single steps, the
recurrent one from whole env sequences replayed from the GRU state each started with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from baselines.config import ConfigError, NetworkConfig
from baselines.core.kernels import env_minibatches, flatten_batch, shuffled_minibatches
from baselines.core.networks import (
    Actor,
    HybridDistribution,
    RecurrentActor,
    encoder_features,
    head_distribution,
    initial_hidden,
)

#: `readout(dist, action, extras) -> tuple` of per-step arrays: what the loss needs from the policy
Readout = Callable[[HybridDistribution, dict, dict], tuple]
#: `view(params, obs) -> obs`: what the actor reads (observation normalisation)
View = Callable[[dict, dict], dict]


def actor_on_features(actor: Actor, actor_params: Mapping[str, Any], x: jax.Array) -> HybridDistribution:
    """`Actor`'s head alone on its encoder's output `f32[..., F]` (the feed-forward actor is the two)."""
    params = actor_params["params"]
    head = nn.Dense(params["policy_head"]["bias"].shape[-1]).apply({"params": params["policy_head"]}, x)
    log_std = params["log_std"] if actor.continuous_dims else jnp.zeros((0,), jnp.float32)
    return head_distribution(head, log_std, actor.continuous_dims, actor.discrete_branches)  # pyright: ignore


@struct.dataclass
class PolicyMemory:
    """The recurrent actor's state between rollout steps (in `RunnerState.memory`)."""

    hidden: jax.Array  # f32[num_envs, A, H], the GRU state after the last step (before any reset)
    episode_start: jax.Array  # bool[num_envs], the current obs is an episode's first: start from h0


def action_readout(dist: HybridDistribution, action: dict, extras: dict) -> tuple:
    """`(log_prob, entropy_continuous, entropy_discrete)` of the taken `action`."""
    return (dist.log_prob(action), *dist.entropy_parts())


class FeedForwardPolicy:
    """`Actor` over the current observation; its memory is `None`."""

    recurrent = False

    def __init__(self, actor: Actor, view: View):
        self.actor, self.view = actor, view

    def init(self, key: jax.Array, example: dict, num_agents: int) -> Any:
        """The actor's parameters."""
        return self.actor.init(key, example)

    def initial_memory(self, lead_shape: tuple[int, ...]) -> None:
        """No memory."""
        return None

    def runner_memory(self, num_envs: int, num_agents: int) -> None:
        """No memory in the runner state."""
        return None

    def step(self, params: dict, obs: dict, memory: None, episode_start: Any) -> tuple[None, Any]:
        """`(None, HybridDistribution)` on `obs [..., A, ...]`."""
        return None, self.actor.apply(params["actor"], self.view(params, obs))

    def act(self, params: dict, obs: dict, memory: None) -> tuple[None, Any, None]:
        """The rollout's step on `obs [N, A, ...]`: `(memory, dist, episode_start)` (none recorded)."""
        return (*self.step(params, obs, None, None), None)

    def next_memory(self, memory: None, done: jax.Array) -> None:
        """No memory to carry."""
        return None

    def batch(self, rollout_batch: tuple, memory0: None) -> tuple:
        """`(traj, advantages, targets)` `[T, N, A, ...]` -> flat steps `[T * N * A, ...]`."""
        return flatten_batch(rollout_batch)

    def minibatches(self, key: jax.Array, batch: tuple, num_minibatches: int) -> tuple:
        """Shuffled steps `[M, B, ...]`."""
        return shuffled_minibatches(key, batch, num_minibatches)

    def trajectory(self, minibatch: tuple) -> Any:
        """The minibatch's transitions `[B, ...]`."""
        return minibatch[0]

    def with_trajectory(self, minibatch: tuple, traj: Any) -> tuple:
        """`minibatch` with `traj` as its transitions."""
        return (traj, *minibatch[1:])

    def replay(self, params: dict, minibatch: tuple, readout: Readout) -> tuple[tuple, tuple]:
        """`((traj, advantages, targets), readout of the actor on every step)`."""
        traj = minibatch[0]
        _, dist = self.step(params, traj.obs, None, None)
        return minibatch, readout(dist, traj.action, traj.extras)

    def replay_with_features(self, params: dict, minibatch: tuple, readout: Readout) -> tuple:
        """`replay`'s `(minibatch, readout)` and the encoder's output `f32[B, F]` it was computed from (a
        critic on the same encoder, `shared_encoder`, reads it: one pass of the torso forward and back)."""
        traj = minibatch[0]
        actor_params = params["actor"]
        features = encoder_features(self.actor, actor_params, self.view(params, traj.obs))
        dist = actor_on_features(self.actor, actor_params, features)
        return minibatch, readout(dist, traj.action, traj.extras), features

    def memory_api(self) -> dict[str, Callable]:
        """No memory to expose."""
        return {}

    def evaluation_act(self, params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict:
        """The trained policy on one env's observation `[A, ...]`."""
        _, dist = self.step(params, obs, None, None)
        return dist.mode() if greedy else dist.sample(key)


class RecurrentPolicy:
    """`RecurrentActor`: a GRU state per (env, agent), started afresh on every episode's first step."""

    recurrent = True

    def __init__(self, actor: RecurrentActor, view: View, gru_size: int):
        self.actor, self.view, self.gru_size = actor, view, gru_size

    def init(self, key: jax.Array, example: dict, num_agents: int) -> Any:
        """The actor's parameters."""
        return self.actor.init(key, example, self.initial_memory((num_agents,)))

    def initial_memory(self, lead_shape: tuple[int, ...]) -> jax.Array:
        """The GRU state an episode starts from, `f32[*lead_shape, gru_size]`."""
        return initial_hidden(lead_shape, self.gru_size)

    def runner_memory(self, num_envs: int, num_agents: int) -> PolicyMemory:
        """Every env starts an episode: the first step starts from the initial state."""
        return PolicyMemory(self.initial_memory((num_envs, num_agents)), jnp.ones(num_envs, bool))

    def step(
        self,
        params: dict,
        obs: dict | None,
        hidden: jax.Array,
        episode_start: jax.Array,
        features: jax.Array | None = None,
    ) -> tuple[jax.Array, Any]:
        """One step on `obs [..., A, ...]` (viewed through `view`; or on its encoder's `features`): the GRU
        starts from the initial state where `episode_start [..., A]`, else from `hidden [..., A, H]`.
        `(new hidden, dist)`."""
        hidden = jnp.where(episode_start[..., None], self.initial_memory(hidden.shape[:-1]), hidden)
        viewed = None if obs is None else self.view(params, obs)  # a replay passes the features alone
        return self.actor.apply(params["actor"], viewed, hidden, features)

    def act(self, params: dict, obs: dict, memory: PolicyMemory) -> tuple[jax.Array, Any, jax.Array]:
        """The rollout's step on `obs [N, A, ...]`: `(hidden, dist, episode_start bool[N, A])`."""
        episode_start = jnp.broadcast_to(memory.episode_start[:, None], memory.hidden.shape[:-1])
        hidden, dist = self.step(params, obs, memory.hidden, episode_start)
        return hidden, dist, episode_start

    def next_memory(self, hidden: jax.Array, done: jax.Array) -> PolicyMemory:
        """The obs the env step returned is an episode's first where that step ended one."""
        return PolicyMemory(hidden, done)

    def batch(self, rollout_batch: tuple, memory0: PolicyMemory) -> tuple:
        """Whole sequences `[T, N, A, ...]` and the GRU state each env started the rollout from."""
        return rollout_batch, memory0.hidden

    def minibatches(self, key: jax.Array, batch: tuple, num_minibatches: int) -> tuple:
        """Groups of whole env sequences (shuffled envs, steps in order)."""
        return env_minibatches(key, batch, num_minibatches)

    def trajectory(self, minibatch: tuple) -> Any:
        """The minibatch's transitions `[T, n, A, ...]`."""
        return minibatch[0][0]

    def with_trajectory(self, minibatch: tuple, traj: Any) -> tuple:
        """`minibatch` with `traj` as its transitions."""
        rollout_batch, hidden0 = minibatch
        return (traj, *rollout_batch[1:]), hidden0

    def replay(self, params: dict, minibatch: tuple, readout: Readout) -> tuple[tuple, tuple]:
        """`((traj, advantages, targets), readout of every step)`, replayed from the stored first state."""
        rollout_batch, hidden0 = minibatch
        return rollout_batch, self.replay_steps(params, rollout_batch[0], hidden0, readout)

    def replay_steps(
        self, params: dict, traj: Any, hidden0: jax.Array, readout: Readout = action_readout
    ) -> tuple:
        """Re-run the actor over a rollout `[T, n, A, ...]` from `hidden0 [n, A, H]` with the rollout's
        resets: `readout` per step, stacked `[T, n, A]` (default: log_prob, the entropy parts; at the
        rollout's params, log_prob equals `traj.log_prob`)."""

        def step(hidden: jax.Array, inputs: tuple) -> tuple[jax.Array, tuple]:
            features, action, episode_start, extras = inputs
            hidden, dist = self.step(params, None, hidden, episode_start, features)
            return hidden, readout(dist, action, extras)

        # the encoder does not read the memory: every step's at once, one large batch instead of T small
        # ones inside the loop (which runs only the GRU and the head)
        features = encoder_features(self.actor, params["actor"], self.view(params, traj.obs))
        inputs = (features, traj.action, traj.episode_start, traj.extras)
        return jax.lax.scan(step, hidden0, inputs)[1]

    def memory_api(self) -> dict[str, Callable]:
        """`Train`'s `policy_step`, `initial_memory` and `replay`, for callers that carry the GRU state."""
        return {"policy_step": self.step, "initial_memory": self.initial_memory, "replay": self.replay_steps}

    def evaluation_act(self, params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict:
        """Refused: a recurrent policy acts with its memory (`baselines.run.eval_policies.policy_env`)."""
        raise ConfigError(  # one line from any command that does not carry the memory
            "recurrent runs act with their GRU memory (baselines.run.eval_policies.trained_policy in "
            "policy_env); this command does not carry it yet: use hivex evaluate or hivex transfer"
        )


class Policy(Protocol):
    """The actor's interface `baselines.core.ppo` calls; `memory` is the policy's own (feed-forward: `None`,
    recurrent: the GRU state, `PolicyMemory` in the runner), so the core passes it on unread."""

    recurrent: bool

    def init(self, key: jax.Array, example: dict, num_agents: int) -> Any: ...
    def initial_memory(self, lead_shape: tuple[int, ...]) -> Any: ...
    def runner_memory(self, num_envs: int, num_agents: int) -> Any: ...
    def step(self, params: dict, obs: dict, memory: Any, episode_start: Any, /) -> tuple[Any, Any]: ...
    def act(self, params: dict, obs: dict, memory: Any) -> tuple[Any, Any, Any]: ...
    def next_memory(self, memory: Any, done: jax.Array, /) -> Any: ...
    def batch(self, rollout_batch: tuple, memory0: Any) -> tuple: ...
    def minibatches(self, key: jax.Array, batch: tuple, num_minibatches: int) -> tuple: ...
    def trajectory(self, minibatch: tuple) -> Any: ...
    def with_trajectory(self, minibatch: tuple, traj: Any) -> tuple: ...
    def replay(self, params: dict, minibatch: tuple, readout: Readout) -> tuple[tuple, tuple]: ...
    def memory_api(self) -> dict[str, Callable]: ...
    def evaluation_act(self, params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict: ...


def make_policy(network: NetworkConfig, env: Any, view: View) -> Policy:
    """The actor the config's `network` part asks for (`recurrent`), for `env`'s action space."""
    options = (
        env.continuous_dims,
        tuple(env.discrete_branches),
        network.hidden_sizes,
        network.cnn_channels,
        network.activation,
        network.init_log_std,
    )
    encoder = network.visual_encoder
    if network.recurrent == "none":
        return FeedForwardPolicy(Actor(*options, visual_encoder=encoder), view)
    actor = RecurrentActor(*options, network.gru_size, visual_encoder=encoder)
    return RecurrentPolicy(actor, view, network.gru_size)
