"""PPO for many agents, IPPO and MAPPO in one lean trainer that reads top to bottom (PureJaxRL style).

`make_train(config)` returns jittable `init(key)` and `update_chunk(runner)`; the chunk scans
`config.chunk_updates` PPO updates, each: a `num_steps` rollout of `num_envs` envs, GAE, then
`update_epochs` epochs of `num_minibatches` clipped-PPO steps. Seeds are a leading axis, vmapped or
run in turn (`baselines.run.population`). Arrays are `[T, num_envs, num_agents, ...]` until the policy
batches them; the kernels (GAE, PPO loss, minibatches, optimiser, running statistics) are in
`baselines.core.kernels`.

The core asks each concern for its part and does not branch on it:
- the actor (`baselines.core.policy`): feed-forward or `recurrent="gru"` behind one interface. A recurrent
  actor keeps its GRU state per (env, agent) in `RunnerState.memory`, starts from the initial state on an
  episode's first observation (each transition records that flag), and its update replays whole env
  sequences from the state each started with; the critic stays feed-forward.
- what the networks and GAE read (`baselines.core.inputs`): the critic's input (IPPO: the agent's own
  observation; MAPPO: the env's `global_state` plus the agent's one-hot id, by `config.algo`),
  `obs_normalization` (running stats in `params["obs_norm"]`, fixed through a rollout and its epochs)
  and `reward_scaling="return_std"` (rewards GAE reads divided by the running std of the discounted
  return, kept in `RunnerState.returns`).
- the value (`baselines.core.value_heads`): one, or with `value_heads` one per named reward term besides the
  rest, each with its own GAE; the policy reads the sum of the heads' advantages.
- the truncation bootstrap (`baselines.core.bootstrap`): V(s_{t+1}) is the next step's V(s_t), and where the
  time limit cut an episode the value of its final input, kept in a slot and read once after the rollout.
- training-only recipes (`baselines.core.extensions`): a training-reward transform after each env step
  (reward-term re-weighting with its anneal, reward sharing) and auxiliary losses (the teacher: extra
  fields recorded in `Transition.extras`, a term added to the loss with its own metrics).
Every switch off (the default) gives the program without it, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from baselines.config import (
    ExtensionsConfig,
    NetworkConfig,
    OptimizerConfig,
    PPOConfig,
    PPOScalars,
    ValueHeadsConfig,
    check_env_fit,
    curriculum_start_params,
    make_env,
    training_params,
)
from baselines.core import extensions
from baselines.core import member as members
from baselines.core.bootstrap import CutInputs, bootstrap_step, cut_slots, cut_values, with_next_values
from baselines.core.inputs import CriticInput, ObsNormalization, ReturnScaler
from baselines.core.inputs import critic_inputs as critic_inputs  # re-exported: MAPPO's critic input
from baselines.core.kernels import ReturnScaling, example_obs, finite_flags, make_optimizer, rollout_metrics
from baselines.core.networks import FirstConvPair, make_critic
from baselines.core.policy import PolicyMemory, make_policy
from baselines.core.ppo_update import make_loss, minibatch_update, ppo_epochs, trainable
from baselines.core.program_cache import ProgramKeys
from baselines.core.training_env import TrainingEnv
from baselines.core.value_heads import ValueHeads


# ------------------------------------------------------------------------------------------ state
@struct.dataclass
class RunnerState:
    """Everything a resumed run needs (one seed; the host stacks seeds on a leading axis)."""

    params: Any  # {"actor": ..., "critic": ...} (+ "obs_norm": {"actor"(, "critic"): RunningMeanStd})
    opt_state: Any  # optax state of params' actor and critic, including the schedule's count
    env_state: Any  # [num_envs, ...] EpisodeStatistics(WorldPool(env)) states
    obs: Any  # [num_envs, A, ...] current observations
    rng: jax.Array  # u32[2]
    update: jax.Array  # i32[], updates done
    returns: ReturnScaling | None = None  # reward_scaling="return_std" only (None: no leaves)
    memory: PolicyMemory | None = None  # recurrent only (None: no leaves)


@struct.dataclass
class Transition:
    """One step of a rollout, shaped `[num_envs, A, ...]` (a scan stacks a leading T)."""

    obs: Any  # actor input
    critic_obs: Any  # critic input; None for IPPO, whose critic reads `obs` (not stored twice)
    action: dict
    log_prob: jax.Array  # f32[N, A]
    value: jax.Array  # f32[N, A], V(s_t) (with value_heads: f32[N, A, 1 + K] here and below)
    next_value: jax.Array  # f32[N, A], V(s_{t+1}) before any reset: V(final obs) at an episode's end
    reward: jax.Array  # f32[N, A], the training reward (after the extensions' transforms), split by head
    terminated: jax.Array  # bool[N, A], no bootstrap
    episode_end: jax.Array  # bool[N, A], the episode ended here (terminated or truncated): cut GAE
    active: jax.Array  # bool[N, A], agent acted this step (loss mask)
    discounted_return: jax.Array | None = None  # f32[N, A], reward_scaling="return_std" only
    episode_start: jax.Array | None = None  # bool[N, A], recurrent only: obs is an episode's first
    extras: dict = struct.field(default_factory=dict)  # what auxiliary losses record (teacher_action...)
    # i32[N] while the rollout runs with cut slots (`baselines.core.bootstrap`): where this step's final
    # critic input was kept (-1: not cut; `next_value` is None until the rollout fills it)
    cut_slot: jax.Array | None = None


@dataclass(frozen=True)
class Train:
    """What `make_train` returns. `init(key) -> RunnerState` and `update_chunk(RunnerState) ->
    (RunnerState, metrics [K, ...])` are pure and jittable (one seed; map them over seeds);
    `act(params, obs [A, ...], key, greedy) -> action` is the trained policy for evaluation;
    `rollout(RunnerState)` collects one update's trajectory (for tests and inspection).

    Recurrent actors (`recurrent != "none"`) act through `policy_step(params, obs [..., A, ...], hidden
    [..., A, H], episode_start bool[..., A]) -> (hidden, HybridDistribution)` from
    `initial_memory(lead_shape) -> f32[*lead_shape, H]` (`act` refuses them); `replay(params, traj
    [T, n, A, ...], hidden0 [n, A, H]) -> (log_prob, entropy_continuous, entropy_discrete)` f32[T, n, A]
    is what the update recomputes from a rollout. `policy` is the actor's interface
    (`baselines.core.policy`)."""

    config: PPOConfig
    env: Any
    env_params: Any
    init: Callable[[jax.Array], RunnerState]
    update_chunk: Callable[..., tuple[RunnerState, dict]]
    act: Callable[[Any, dict, jax.Array, bool], dict]
    rollout: Callable[[RunnerState], tuple[RunnerState, tuple[Transition, dict]]]
    policy_step: Callable[..., tuple[jax.Array, Any]] | None = None
    initial_memory: Callable[[tuple[int, ...]], jax.Array] | None = None
    replay: Callable[[Any, Transition, jax.Array], tuple[jax.Array, ...]] | None = None
    policy: Any = None
    training_env: Any = None  # the env stack with its world pool (a fused sweep compares members' pools)
    train_params: Any = None  # the EnvParams training plays (`env_params` + `train_env_params`)
    # the update's stages apart (`hivex bench --train --profile` compiles and times each): `value(params,
    # critic_obs)`, `advantages(runner, traj) -> (runner, traj, advantages, targets)` (GAE) and
    # `learner(runner) -> minibatch step` (what `ppo_epochs` runs at that runner's update)
    value: Callable[[dict, dict], jax.Array] | None = None
    advantages: Callable[..., tuple] | None = None
    learner: Callable[..., Callable] | None = None
    # the config's cache keys (`baselines.core.program_cache`): the population, the training env and the
    # evaluations key their compiled programs with these instead of reading the config again
    keys: ProgramKeys | None = None
    # slots per env for the final inputs of episodes cut by their time limit (`baselines.core.bootstrap`);
    # None: the rollout computes V(final obs) at every step (short episodes)
    cut_slots: int | None = None


# -------------------------------------------------------------------------------------- the trainer
def make_train(
    config: PPOConfig,
    env: Any = None,
    env_params: Any = None,
    member_worlds: Any = None,
    keys: ProgramKeys | None = None,
    cut_params: Sequence[Any] = (),
    **pool: bool,
) -> Train:
    """Build `init` / `update_chunk` / `act` of `config.algo` (ippo or mappo) for `config` (env made from
    the config if not given; `member_worlds`, `pool_as_data=`: a fused member's pool: `TrainingEnv.of`;
    `keys`: the config's `ProgramKeys` when the caller has them; `cut_params`: a fused population's members'
    `EnvParams`, whose `max_steps` also bound the rollout's cut slots). The config is read here, once: each
    piece gets its part (`baselines.config.sections`) or its values."""
    if env is None:
        env, env_params = make_env(config)
    check_env_fit(config, env, env_params)  # a one-line ConfigError before anything compiles
    train_params = training_params(config, env_params)  # evaluation plays env_params
    start_params = curriculum_start_params(config)  # where a grown-in train_env_params curriculum starts
    keys = ProgramKeys.of(config) if keys is None else keys
    # the parts of the config its pieces read, then what this function reads itself
    network, extension = NetworkConfig.of(config), ExtensionsConfig.of(config)
    heads, scalars = ValueHeadsConfig.of(config), PPOScalars.of(config)
    optimizer_options = OptimizerConfig.of(config)
    num_envs, num_steps, chunk_updates = config.num_envs, config.num_steps, config.chunk_updates
    update_epochs, num_minibatches = config.update_epochs, config.num_minibatches
    normalize_advantages, gae_lambda = config.normalize_advantages, config.gae_lambda
    train_worlds, pregenerate = config.train_worlds, config.pregenerate_worlds
    normalization = ObsNormalization(
        config.obs_normalization, config.obs_norm_clip, network.centralised_critic
    )
    return_scaler = ReturnScaler(config.reward_scaling == "return_std", config.gamma)
    slots = cut_slots(num_steps, train_params, start_params, *cut_params)  # `baselines.core.bootstrap`

    training_env = TrainingEnv.of(env, train_params, train_worlds, pregenerate, keys, member_worlds, **pool)
    num_agents = env.num_agents
    critic_input = CriticInput(network, env, train_params, training_env)
    policy = make_policy(network, env, normalization.actor_view)
    value_heads = ValueHeads(heads, extension, env, train_params)
    critic = make_critic(network, value_heads.count)
    first_convs = FirstConvPair(network.visual_encoder)  # the actor's and critic's first conv of one image
    optimizer = make_optimizer(optimizer_options)
    training_reward = extensions.training_reward(extension, env, train_params)
    training_env_params = extensions.EnvParamsAnneal(extension, env_params, start_params)  # the curriculum
    auxiliary_losses = extensions.auxiliary_losses(extension, env)
    # (member, key): a fused member's data key, or the config's
    data = partial(members.value, scalars, train_params)

    def value_of(params: dict, critic_obs: dict) -> jax.Array:
        return critic.apply(params, normalization.critic_view(params, critic_obs))

    # ------------------------------------------------------------------------------------ init
    def init(key: jax.Array, member: dict | None = None) -> RunnerState:
        """One seed's runner state (of a fused `member`'s env setting and worlds, one row of its
        `member_data`). Call it outside `vmap` (orthogonal init uses QR; see population)."""
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        reset_params = data(member, "env_params")
        obs, env_state = jax.vmap(training_env.reset, (0, None))(
            jax.random.split(k_env, num_envs), training_env.params_for(reset_params, member)
        )
        critic_obs = critic_input(env_state, obs, reset_params)
        params = {
            "actor": policy.init(k_actor, example_obs(env, env_params), num_agents),
            "critic": critic.init(k_critic, jax.tree.map(lambda x: x[0], critic_obs)),  # shapes only
        }
        opt_state = optimizer.init(trainable(params))
        params = normalization.init(params, obs, critic_obs)  # the first rollout acts on normalised obs
        returns = return_scaler.init(num_envs, num_agents)
        memory = policy.runner_memory(num_envs, num_agents)
        return RunnerState(params, opt_state, env_state, obs, k_run, jnp.int32(0), returns, memory)

    # --------------------------------------------------------------------------------- rollout
    def env_step(carry: tuple, _: Any, member: dict | None = None) -> tuple[tuple, tuple[Transition, dict]]:
        runner, cuts = carry  # cuts: `CutInputs`, or None where every step computes V(final obs)
        step_params = training_env_params(data(member, "env_params"), runner.update, member)
        rng, k_action, k_env = jax.random.split(runner.rng, 3)
        params = runner.params
        critic_obs = critic_input(runner.env_state, runner.obs, step_params)
        actor_read, critic_read = first_convs(params, runner.obs, critic_obs)  # one conv of a shared image
        memory, dist, episode_start = policy.act(params, actor_read, runner.memory)  # batch [N, A]
        action = dist.sample(k_action)
        value = value_of(params, critic_read)
        params_or_worlds = training_env.params_for(step_params, member)  # a fused member's own worlds
        obs, env_state, reward, terminated, truncated, info, final_obs, final_state = jax.vmap(
            training_env.step, (0, 0, 0, None)
        )(jax.random.split(k_env, num_envs), runner.env_state, action, params_or_worlds)
        # the reward learnt from; info["episode"] (the "return" metrics) keeps the env's
        reward = training_reward(info, reward, info["active"], runner.update, member)
        # V of where the step got before auto-reset (observation or global state): the truncation bootstrap,
        # here or (with cut slots) after the rollout, from the inputs kept where the time limit cut
        final_input = critic_input(final_state, final_obs, step_params)
        cuts, next_value, cut_slot = bootstrap_step(cuts, final_input, truncated, partial(value_of, params))
        episode_end = jnp.broadcast_to(info["done"][:, None], terminated.shape)
        returns, discounted = return_scaler.step(runner.returns, reward, episode_end)
        transition = Transition(
            obs=runner.obs,
            critic_obs=critic_input.stored(critic_obs),
            action=action,
            log_prob=dist.log_prob(action),
            value=value,
            next_value=next_value,  # pyright: ignore[reportArgumentType] (None: the rollout fills it)
            cut_slot=cut_slot,
            reward=value_heads.split(info, reward, info["active"], runner.update, member),
            terminated=terminated,
            episode_end=episode_end,
            active=info["active"],
            discounted_return=discounted,
            episode_start=episode_start,
            extras={
                k: v for aux in auxiliary_losses for k, v in aux.record(runner.obs, info, step_params).items()
            },
        )
        episode = {k: info["episode"][k] for k in ("done", "return", "length")}
        memory = policy.next_memory(memory, info["done"])  # the obs just returned may start an episode
        runner = replace(runner, obs=obs, env_state=env_state, rng=rng, returns=returns, memory=memory)
        return (runner, cuts), (transition, episode)

    def rollout(
        runner: RunnerState, member: dict | None = None
    ) -> tuple[RunnerState, tuple[Transition, dict]]:
        """`num_steps` env steps: the trajectory `[T, N, A, ...]` and the finished-episode records."""
        step_params = training_env_params(data(member, "env_params"), runner.update, member)
        inputs_of = partial(critic_input, env_params=step_params)
        empty = None if slots is None else CutInputs.empty(inputs_of(runner.env_state, runner.obs), slots)
        scan = jax.lax.scan(partial(env_step, member=member), (runner, empty), None, num_steps)
        (runner, cuts), (traj, episode) = scan
        if cuts is not None:  # V(s_{t+1}): the next step's value, the last observation's, the slots'
            last_value = value_of(runner.params, inputs_of(runner.env_state, runner.obs))
            traj = with_next_values(traj, last_value, cut_values(partial(value_of, runner.params), cuts))
        return runner, (traj, episode)

    loss_fn = make_loss(
        policy, critic, normalization, critic_input, auxiliary_losses, data, scalars, normalize_advantages
    )

    # ---------------------------------------------------- one update: rollout, GAE, PPO epochs
    def advantages(runner: RunnerState, traj: Transition, member: dict | None = None) -> tuple:
        """`(runner, traj, advantages, targets)`: GAE per value head on the rewards GAE reads (the return
        scaling's stats merged into `runner`)."""
        returns, rewards, traj = return_scaler.scale(runner.returns, traj)
        gamma, gamma_lambda = data(member, "gamma"), data(member, "gamma_lambda")
        adv, targets = value_heads.gae(runner.update, rewards, traj, gamma, gae_lambda, gamma_lambda)
        return replace(runner, returns=returns), traj, adv, targets

    def learner(runner: RunnerState, member: dict | None = None) -> Callable:
        """The clipped-PPO minibatch step of `runner`'s update (the obs stats its rollout acted with)."""
        obs_norm = runner.params.get("obs_norm")  # fixed through the rollout and its epochs
        coefficients = tuple(aux.coefficient(runner.update) for aux in auxiliary_losses)
        optimizer_here = members.optimizer_for(optimizer_options, optimizer, member)
        return minibatch_update(lambda p, mb: loss_fn(p, obs_norm, mb, coefficients, member), optimizer_here)

    def update_step(runner: RunnerState, _: Any, member: dict | None = None) -> tuple[RunnerState, dict]:
        obs_norm, memory0 = runner.params.get("obs_norm"), runner.memory  # as the rollout starts
        step = learner(runner, member)
        runner, (traj, episode) = rollout(runner, member)
        runner, traj, adv, targets = advantages(runner, traj, member)
        batch = policy.batch((traj, adv, targets), memory0)
        rng, k_epochs = jax.random.split(runner.rng)
        (params, opt_state), loss_metrics = ppo_epochs(
            step,
            policy,
            update_epochs,
            num_minibatches,
            trainable(runner.params),
            runner.opt_state,
            k_epochs,
            batch,
        )
        params = normalization.after_rollout(
            params,
            obs_norm,
            traj,
            runner.obs,
            lambda: critic_input(runner.env_state, runner.obs, data(member, "env_params")),
        )
        metrics = {
            **rollout_metrics(traj, {"episode": episode}),
            **jax.tree.map(jnp.mean, loss_metrics),
            **finite_flags(loss_metrics["loss"], opt_state, params),
        }
        runner = replace(runner, params=params, opt_state=opt_state, rng=rng, update=runner.update + 1)
        return runner, metrics

    def update_chunk(
        runner: RunnerState, member: dict | None = None, updates: int | None = None
    ) -> tuple[RunnerState, dict]:
        """`chunk_updates` updates (or `updates`: a piece of a chunk) in one scan; metrics shaped `[K]` per
        key. `member` (`member_data` of `baselines.core.member`): the data keys as arrays (a fused population
        vmaps them with the state); None: the config's."""
        count = chunk_updates if updates is None else updates
        return jax.lax.scan(lambda r, x: update_step(r, x, member), runner, None, count)

    parts = {"policy": policy, "training_env": training_env, "train_params": train_params, "value": value_of}
    parts["cut_slots"] = slots
    parts.update(advantages=advantages, learner=learner, **policy.memory_api())
    act = policy.evaluation_act
    return Train(config, env, env_params, init, update_chunk, act, rollout, keys=keys, **parts)
