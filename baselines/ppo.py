"""PPO for many agents, IPPO and MAPPO in one trainer that reads top to bottom (PureJaxRL style).

`make_train(config)` returns jittable `init(key)` and `update_chunk(runner)`; the chunk scans
`config.chunk_updates` PPO updates, each: a `num_steps` rollout of `num_envs` envs, GAE, then
`update_epochs` epochs of `num_minibatches` clipped-PPO steps. The two algorithms differ only in what
the critic reads (`critic_input`, chosen by `config.algo`): IPPO the agent's own observation; MAPPO the
env's `global_state` plus the agent's one-hot id. Seeds are a `vmap` axis (`baselines.population`).
Arrays are `[T, num_envs, num_agents, ...]` until `flatten_batch`; the kernels (GAE, PPO loss,
minibatches, optimiser) are in `baselines.common`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from baselines.common import (
    TrainingEnv,
    example_obs,
    finite_flags,
    flatten_batch,
    gae,
    make_env,
    make_optimizer,
    ppo_loss,
    rollout_metrics,
    shuffled_minibatches,
)
from baselines.config import PPOConfig
from baselines.networks import Actor, Critic


# ------------------------------------------------------------------------------------------ state
@struct.dataclass
class RunnerState:
    """Everything a resumed run needs (one seed; the host stacks seeds on a leading axis)."""

    params: Any  # {"actor": ..., "critic": ...}
    opt_state: Any  # optax state, including the learning-rate schedule's count
    env_state: Any  # [num_envs, ...] EpisodeStatistics(WorldPool(env)) states
    obs: Any  # [num_envs, A, ...] current observations
    rng: jax.Array  # u32[2]
    update: jax.Array  # i32[], updates done


@struct.dataclass
class Transition:
    """One step of a rollout, shaped `[num_envs, A, ...]` (a scan stacks a leading T)."""

    obs: Any  # actor input
    critic_obs: Any  # critic input; None for IPPO, whose critic reads `obs` (not stored twice)
    action: dict
    log_prob: jax.Array  # f32[N, A]
    value: jax.Array  # f32[N, A], V(s_t)
    next_value: jax.Array  # f32[N, A], V(s_{t+1}) before any reset: V(final obs) at an episode's end
    reward: jax.Array  # f32[N, A]
    terminated: jax.Array  # bool[N, A], no bootstrap
    episode_end: jax.Array  # bool[N, A], the episode ended here (terminated or truncated): cut GAE
    active: jax.Array  # bool[N, A], agent acted this step (loss mask)


@dataclass(frozen=True)
class Train:
    """What `make_train` returns. `init(key) -> RunnerState` and `update_chunk(RunnerState) ->
    (RunnerState, metrics [K, ...])` are pure and jittable (one seed; vmap them over seeds);
    `act(params, obs [A, ...], key, greedy) -> action` is the trained policy for evaluation;
    `rollout(RunnerState)` collects one update's trajectory (for tests and inspection)."""

    config: PPOConfig
    env: Any
    env_params: Any
    init: Callable[[jax.Array], RunnerState]
    update_chunk: Callable[[RunnerState], tuple[RunnerState, dict]]
    act: Callable[[Any, dict, jax.Array, bool], dict]
    rollout: Callable[[RunnerState], tuple[RunnerState, tuple[Transition, dict]]]


# ---------------------------------------------------------------------------- MAPPO's critic input
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


# -------------------------------------------------------------------------------------- the trainer
def make_train(config: PPOConfig, env: Any = None, env_params: Any = None) -> Train:
    """Build `init` / `update_chunk` / `act` of `config.algo` (ippo or mappo) for `config` (env made
    from the config if not given)."""
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
    centralised = config.algo == "mappo"

    # ------------------------------------------------------------------- what the critic reads
    def critic_input(env_state: Any, obs: dict) -> dict:
        """The critic's input for every agent of every env `[N, A, ...]`: IPPO the agents' own
        observations; MAPPO `{"vector": f32[N, A, S (+ D) (+ A)]}` (`critic_inputs`)."""
        if not centralised:
            return obs
        state = jax.vmap(training_env.global_state, (0, None))(env_state, env_params)
        local = obs["vector"] if config.critic_local_obs else None
        return critic_inputs(state, env.num_agents, config.critic_agent_id, local)

    # ------------------------------------------------------------------------------------ init
    def init(key: jax.Array) -> RunnerState:
        """One seed's runner state. Call it outside `vmap` (orthogonal init uses QR; see population)."""
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs, env_state = jax.vmap(training_env.reset, (0, None))(
            jax.random.split(k_env, num_envs), env_params
        )
        critic_example = jax.tree.map(lambda x: x[0], critic_input(env_state, obs))  # shapes only
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
        critic_obs = critic_input(runner.env_state, runner.obs)
        value = critic.apply(runner.params["critic"], critic_obs)
        obs, env_state, reward, terminated, _, info, final_obs, final_state = jax.vmap(
            training_env.step, (0, 0, 0, None)
        )(jax.random.split(k_env, num_envs), runner.env_state, action, env_params)
        # V of where the step got before auto-reset (observation or global state): the truncation
        # bootstrap
        next_value = critic.apply(runner.params["critic"], critic_input(final_state, final_obs))
        transition = Transition(
            obs=runner.obs,
            critic_obs=critic_obs if centralised else None,
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

    # ------------------------------------------------------------------------------------ loss
    def loss_fn(params: dict, minibatch: tuple) -> tuple[jax.Array, dict]:
        traj, advantages, targets = minibatch
        dist = actor.apply(params["actor"], traj.obs)
        value = critic.apply(params["critic"], traj.critic_obs if centralised else traj.obs)
        return ppo_loss(
            dist.log_prob(traj.action),
            traj.log_prob,
            advantages,
            dist.entropy(),
            value,
            traj.value,
            targets,
            traj.active,
            config.clip_eps,
            config.clip_value_eps,
            config.vf_coef,
            config.ent_coef,
            config.normalize_advantages,
        )

    # ---------------------------------------------------- one update: rollout, GAE, PPO epochs
    def update_step(runner: RunnerState, _: Any) -> tuple[RunnerState, dict]:
        runner, (traj, episode) = rollout(runner)
        advantages, targets = gae(
            traj.reward,
            traj.value,
            traj.next_value,
            traj.terminated,
            traj.episode_end,
            traj.active,
            config.gamma,
            config.gae_lambda,
        )
        batch = flatten_batch((traj, advantages, targets))

        def epoch(carry: tuple, _: Any) -> tuple[tuple, dict]:
            params, opt_state, key = carry
            key, k_shuffle = jax.random.split(key)

            def minibatch_step(carry: tuple, minibatch: tuple) -> tuple[tuple, dict]:
                params, opt_state = carry
                grads, metrics = jax.grad(loss_fn, has_aux=True)(params, minibatch)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), metrics

            minibatches = shuffled_minibatches(k_shuffle, batch, config.num_minibatches)
            (params, opt_state), metrics = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
            return (params, opt_state, key), metrics

        rng, k_epochs = jax.random.split(runner.rng)
        (params, opt_state, _), loss_metrics = jax.lax.scan(
            epoch, (runner.params, runner.opt_state, k_epochs), None, config.update_epochs
        )
        metrics = {
            **rollout_metrics(traj, {"episode": episode}),
            **jax.tree.map(jnp.mean, loss_metrics),
            **finite_flags(loss_metrics["loss"], opt_state, params),
        }
        runner = runner.replace(params=params, opt_state=opt_state, rng=rng, update=runner.update + 1)
        return runner, metrics

    def update_chunk(runner: RunnerState) -> tuple[RunnerState, dict]:
        """`chunk_updates` updates in one scan; metrics shaped `[K]` per key."""
        return jax.lax.scan(update_step, runner, None, config.chunk_updates)

    # ----------------------------------------------------------------------------------- policy
    def act(params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict:
        """The trained policy on one env's observation `[A, ...]`."""
        dist = actor.apply(params["actor"], obs)
        return dist.mode() if greedy else dist.sample(key)

    return Train(config, env, env_params, init, update_chunk, act, rollout)
