"""What the PPO core's networks and GAE read, each switch in one place: the critic's input (IPPO: the
agent's observation; MAPPO: the env's global state, `critic_inputs`), observation normalisation
(`obs_normalization`) and return scaling (`reward_scaling="return_std"`). Off, each is the identity
and adds nothing to the program or the runner state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from baselines.config import NetworkConfig
from baselines.core.kernels import ReturnScaling, merge_stats, normalize, running_stats_init
from baselines.core.training_env import TrainingEnv


# ---------------------------------------------------------------------------- the critic's input
def critic_inputs(
    global_state: jax.Array,
    num_agents: int,
    agent_id: bool = True,
    local_vector: jax.Array | None = None,
) -> dict:
    """`f32[..., S]` per env -> `{"vector": f32[..., A, S (+ D) (+ A)]}`: row `a` is the env's global
    state, then (if given) agent `a`'s own local `vector` obs `f32[..., A, D]` (the MAPPO paper's
    "agent-specific" state), then agent `a`'s one-hot id. Row `a` lines up with agent `a`'s obs, action
    and reward through the single `[T, N, A, ...]` reshape (JaxMARL's MAPPO once paired them in
    different orders)."""
    lead = global_state.shape[:-1]
    parts = [jnp.broadcast_to(global_state[..., None, :], lead + (num_agents, global_state.shape[-1]))]
    if local_vector is not None:
        parts.append(local_vector)
    if agent_id:
        parts.append(
            jnp.broadcast_to(jnp.eye(num_agents, dtype=jnp.float32), lead + (num_agents, num_agents))
        )
    return {"vector": jnp.concatenate([p.astype(jnp.float32) for p in parts], axis=-1)}


class CriticInput:
    """The critic's input for every agent of every env `[N, A, ...]`, chosen by the `network` part's
    `centralised_critic` (MAPPO) and its `critic_*` options."""

    def __init__(self, network: NetworkConfig, env: Any, env_params: Any, training_env: TrainingEnv):
        self.network, self.centralised = network, network.centralised_critic
        self.env, self.env_params, self.training_env = env, env_params, training_env

    def __call__(self, env_state: Any, obs: dict, env_params: Any = None) -> dict:
        """IPPO: the agents' own observations; MAPPO: `{"vector": f32[N, A, S (+ D) (+ A)]}` (with
        `critic_local_visual` also the agent's `visual`) of `env_params`, default the ones given at
        construction: a fused member passes its own."""
        if not self.centralised:
            return obs
        network = self.network
        env_params = self.env_params if env_params is None else env_params
        state = jax.vmap(self.training_env.global_state, (0, None))(env_state, env_params)
        local = obs["vector"] if network.critic_local_obs else None
        inputs = critic_inputs(state, self.env.num_agents, network.critic_agent_id, local)
        if network.critic_local_visual:  # the critic's own CNN reads the agent's image, as IPPO's does
            inputs["visual"] = obs["visual"]
        if network.critic_heads_local:  # the value heads' own encoder reads the agent's observation
            inputs["local"] = {k: obs[k] for k in ("vector", "visual") if k in obs}
        return inputs

    def stored(self, critic_obs: dict) -> dict | None:
        """What a transition keeps: MAPPO's input; `None` for IPPO, whose critic reads `obs`."""
        return critic_obs if self.centralised else None

    def of(self, traj: Any) -> dict:
        """The critic's input of stored transitions."""
        return traj.critic_obs if self.centralised else traj.obs


# ---------------------------------------------------------------------- observation normalisation
class ObsNormalization:
    """Running per-feature stats of `obs["vector"]` (MAPPO also of the critic's input) in
    `params["obs_norm"]`, so checkpoints and evaluation carry them. A rollout and the epochs that learn
    from it use the stats as they were at its start; its observations are merged in after the epochs.
    `on`: `obs_normalization`, `clip`: `obs_norm_clip`, `centralised`: MAPPO's critic (stats of its own)."""

    def __init__(self, on: bool, clip: float, centralised: bool):
        self.on, self.clip, self.centralised = on, clip, centralised

    def actor_view(self, params: dict, obs: dict) -> dict:
        """What the actor reads: `obs` with `vector` normalised when on."""
        if not self.on:
            return obs
        return {**obs, "vector": normalize(params["obs_norm"]["actor"], obs["vector"], self.clip)}

    def critic_view(self, params: dict, critic_obs: dict) -> dict:
        """What the critic reads: its input normalised (IPPO: the actor's stats; MAPPO: its own)."""
        if not self.on:
            return critic_obs
        stats = params["obs_norm"]["critic" if self.centralised else "actor"]
        view = {**critic_obs, "vector": normalize(stats, critic_obs["vector"], self.clip)}
        if "local" in critic_obs:  # MAPPO's local value heads read the obs as the actor does
            view["local"] = self.actor_view(params, critic_obs["local"])
        return view

    def merge(self, obs_norm: dict, obs: dict, critic_obs: dict | None) -> dict:
        """`obs_norm` with the observations `obs` `[..., A, ...]` (and MAPPO's critic inputs) merged."""
        merged = {"actor": merge_stats(obs_norm["actor"], obs["vector"])}
        if critic_obs is not None:  # MAPPO's (IPPO passes None)
            merged["critic"] = merge_stats(obs_norm["critic"], critic_obs["vector"])
        return merged

    def init(self, params: dict, obs: dict, critic_obs: dict) -> dict:
        """`params` with the stats of the reset observations (the first rollout acts on them
        normalised) when on."""
        if not self.on:
            return params
        empty = {"actor": running_stats_init(obs["vector"].shape[-1:])}
        if self.centralised:
            empty["critic"] = running_stats_init(critic_obs["vector"].shape[-1:])
        return {**params, "obs_norm": self.merge(empty, obs, critic_obs if self.centralised else None)}

    def after_rollout(
        self, params: dict, obs_norm: Any, traj: Any, last_obs: dict, last_critic: Callable[[], dict]
    ) -> dict:
        """`params` with every observation seen once merged: the rollout's after its first, then where
        it stopped (`last_obs`, `last_critic()`; its first was merged at init or by the update before)."""
        if not self.on:
            return params
        seen = {"vector": jnp.concatenate([traj.obs["vector"][1:], last_obs["vector"][None]])}
        seen_critic = None
        if self.centralised:
            seen_critic = jax.tree.map(
                lambda traj_x, x: jnp.concatenate([traj_x[1:], x[None]]), traj.critic_obs, last_critic()
            )
        return {**params, "obs_norm": self.merge(obs_norm, seen, seen_critic)}


# ------------------------------------------------------------------------------- return scaling
class ReturnScaler:
    """`reward_scaling="return_std"`: GAE reads the rewards divided by the running std of the discounted
    return `G_t = r_t + gamma G_{t-1}` (restarted after an episode's end), kept in
    `RunnerState.returns`; the reported returns stay the env's. `on`: `reward_scaling == "return_std"`."""

    def __init__(self, on: bool, gamma: float):
        self.on, self.gamma = on, gamma

    def init(self, num_envs: int, num_agents: int) -> ReturnScaling | None:
        """No stats yet and G = 0 (off: `None`, no leaves)."""
        if not self.on:
            return None
        return ReturnScaling(running_stats_init(), jnp.zeros((num_envs, num_agents), jnp.float32))

    def step(
        self, returns: ReturnScaling | None, reward: jax.Array, episode_end: jax.Array
    ) -> tuple[ReturnScaling | None, jax.Array | None]:
        """`(returns after this step, G_t to record)` (off: `(None, None)`)."""
        if not self.on:
            return returns, None
        assert returns is not None, "reward_scaling='return_std' needs the runner's returns (init)"
        discounted = returns.discounted_return * self.gamma + reward
        restarted = jnp.where(episode_end, 0.0, discounted)
        return dataclasses.replace(returns, discounted_return=restarted), discounted

    def scale(self, returns: ReturnScaling | None, traj: Any) -> tuple[ReturnScaling | None, jax.Array, Any]:
        """`(returns with the rollout's G merged, the rewards GAE reads, traj without G)`."""
        if not self.on:
            return returns, traj.reward, traj
        assert returns is not None, "reward_scaling='return_std' needs the runner's returns (init)"
        stats = merge_stats(returns.stats, traj.discounted_return, traj.active)
        rewards = traj.reward / jnp.sqrt(stats.var + 1e-8)
        return dataclasses.replace(returns, stats=stats), rewards, traj.replace(discounted_return=None)
