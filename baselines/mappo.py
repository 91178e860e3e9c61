"""MAPPO: IPPO's shared actor on local observations; a shared critic on the centralised state
`env.global_state(state)` plus a one-hot agent id (so one critic can value each agent).

PureJaxRL style. `make_train(config)` returns jittable `init(key)` and `update_chunk(runner)`; the
chunk scans `config.chunk_updates` PPO updates, each = a `num_steps` rollout of `num_envs` envs,
GAE, `update_epochs` epochs of `num_minibatches` minibatches. Seeds are a `vmap` axis (see
`baselines.runner`). Arrays are `[T, num_envs, num_agents, ...]` until `flatten_batch`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from baselines.common import (
    RunnerState,
    Train,
    TrainingEnv,
    Transition,
    example_obs,
    make_env,
    make_optimizer,
    make_update_chunk,
)
from baselines.config import PPOConfig
from baselines.networks import Actor, Critic


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


def make_train(config: PPOConfig, env: Any = None, env_params: Any = None) -> Train:
    """Build MAPPO's `init` / `update_chunk` / `act` for `config` (env made from the config if not given)."""
    if env is None:
        env, env_params = make_env(config)
    training_env = TrainingEnv(env, config.train_worlds, env_params, config.pregenerate_worlds)
    num_envs = config.num_envs
    actor = Actor(
        env.continuous_dims,
        tuple(env.discrete_branches),
        config.hidden_sizes,
        config.cnn_channels,
        config.activation,
        config.init_log_std,
    )
    critic = Critic(config.hidden_sizes, config.cnn_channels, config.activation)
    optimizer = make_optimizer(config)
    num_agents = env.num_agents
    with_agent_id = getattr(config, "critic_agent_id", True)
    with_local_obs = getattr(config, "critic_local_obs", False)

    def critic_obs_of(env_state: Any, obs: dict) -> dict:
        """Critic input of every agent of every env: `{"vector": f32[N, A, S (+ D) (+ A)]}`."""
        state = jax.vmap(training_env.global_state, (0, None))(env_state, env_params)
        local = obs["vector"] if with_local_obs else None
        return critic_inputs(state, num_agents, with_agent_id, local)

    # ------------------------------------------------------------------------------------- init
    def init(key: jax.Array) -> RunnerState:
        """One seed's runner state. Call it outside `vmap` (orthogonal init uses QR; see runner)."""
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs, env_state = jax.vmap(training_env.reset, (0, None))(
            jax.random.split(k_env, num_envs), env_params
        )
        critic_example = jax.tree.map(lambda x: x[0], critic_obs_of(env_state, obs))
        params = {
            "actor": actor.init(k_actor, example_obs(env, env_params)),
            "critic": critic.init(k_critic, critic_example),
        }
        return RunnerState(params, optimizer.init(params), env_state, obs, k_run, jnp.int32(0))

    # --------------------------------------------------------------------------------- rollout
    def env_step(runner: RunnerState, _: Any) -> tuple[RunnerState, tuple[Transition, dict]]:
        rng, k_action, k_env = jax.random.split(runner.rng, 3)
        dist = actor.apply(runner.params["actor"], runner.obs)  # batch [N, A]
        action = dist.sample(k_action)
        critic_obs = critic_obs_of(runner.env_state, runner.obs)
        value = critic.apply(runner.params["critic"], critic_obs)
        obs, env_state, reward, terminated, _, info, final_obs, final_state = jax.vmap(
            training_env.step, (0, 0, 0, None)
        )(jax.random.split(k_env, num_envs), runner.env_state, action, env_params)
        # V of the global state the step reached before auto-reset: the truncation bootstrap.
        next_value = critic.apply(runner.params["critic"], critic_obs_of(final_state, final_obs))
        transition = Transition(
            obs=runner.obs,
            critic_obs=critic_obs,
            action=action,
            log_prob=dist.log_prob(action),
            value=value,
            next_value=next_value,
            reward=reward,
            terminated=terminated,
            episode_end=jnp.broadcast_to(info["done"][:, None], terminated.shape),
            active=info["active"],
        )
        episode = {k: info["episode"][k] for k in ("done", "return", "length")}
        return runner.replace(obs=obs, env_state=env_state, rng=rng), (transition, episode)

    def rollout(runner: RunnerState) -> tuple[RunnerState, tuple[Transition, dict]]:
        """`num_steps` env steps: the trajectory `[T, N, A, ...]` and the finished-episode records."""
        return jax.lax.scan(env_step, runner, None, config.num_steps)

    # --------------------------------------------------------------------------------- update
    # rollout, GAE, epochs of minibatch PPO steps (baselines.common); the critic reads critic_obs
    update_chunk = make_update_chunk(config, actor, critic, optimizer, rollout, lambda traj: traj.critic_obs)

    # ----------------------------------------------------------------------------------- policy
    def act(params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict:
        """The trained policy on one env's observation `[A, ...]`."""
        dist = actor.apply(params["actor"], obs)
        return dist.mode() if greedy else dist.sample(key)

    return Train(config, env, env_params, init, update_chunk, act, rollout)
