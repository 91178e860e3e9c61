"""IPPO: one actor and one critic shared by every agent, each on the agent's local observation.

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


def make_train(config: PPOConfig, env: Any = None, env_params: Any = None) -> Train:
    """Build IPPO's `init` / `update_chunk` / `act` for `config` (env made from the config if not given)."""
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

    # ------------------------------------------------------------------------------------- init
    def init(key: jax.Array) -> RunnerState:
        """One seed's runner state. Call it outside `vmap` (orthogonal init uses QR; see runner)."""
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs_example = example_obs(env, env_params)
        params = {"actor": actor.init(k_actor, obs_example), "critic": critic.init(k_critic, obs_example)}
        obs, env_state = jax.vmap(training_env.reset, (0, None))(
            jax.random.split(k_env, num_envs), env_params
        )
        return RunnerState(params, optimizer.init(params), env_state, obs, k_run, jnp.int32(0))

    # --------------------------------------------------------------------------------- rollout
    def env_step(runner: RunnerState, _: Any) -> tuple[RunnerState, tuple[Transition, dict]]:
        rng, k_action, k_env = jax.random.split(runner.rng, 3)
        dist = actor.apply(runner.params["actor"], runner.obs)  # batch [N, A]
        action = dist.sample(k_action)
        value = critic.apply(runner.params["critic"], runner.obs)
        obs, env_state, reward, terminated, _, info, final_obs, _ = jax.vmap(
            training_env.step, (0, 0, 0, None)
        )(jax.random.split(k_env, num_envs), runner.env_state, action, env_params)
        # V of the observation the step returned before auto-reset: the truncation bootstrap.
        next_value = critic.apply(runner.params["critic"], final_obs)
        transition = Transition(
            obs=runner.obs,
            critic_obs=None,  # IPPO's critic reads `obs`
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
    # rollout, GAE, epochs of minibatch PPO steps (baselines.common); IPPO's critic reads local obs
    update_chunk = make_update_chunk(config, actor, critic, optimizer, rollout, lambda traj: traj.obs)

    # ----------------------------------------------------------------------------------- policy
    def act(params: dict, obs: dict, key: jax.Array, greedy: bool) -> dict:
        """The trained policy on one env's observation `[A, ...]`."""
        dist = actor.apply(params["actor"], obs)
        return dist.mode() if greedy else dist.sample(key)

    return Train(config, env, env_params, init, update_chunk, act, rollout)
