"""PPO for many agents, IPPO and MAPPO in one trainer that reads top to bottom (PureJaxRL style).

`make_train(config)` returns jittable `init(key)` and `update_chunk(runner)`; the chunk scans
`config.chunk_updates` PPO updates, each: a `num_steps` rollout of `num_envs` envs, GAE, then
`update_epochs` epochs of `num_minibatches` clipped-PPO steps. The two algorithms differ only in what
the critic reads (`critic_input`, chosen by `config.algo`): IPPO the agent's own observation; MAPPO the
env's `global_state` plus the agent's one-hot id. Seeds are a `vmap` axis (`baselines.population`).
Arrays are `[T, num_envs, num_agents, ...]` until `flatten_batch`; the kernels (GAE, PPO loss,
minibatches, optimiser, running statistics) are in `baselines.common`.

Two switches, both off by default (the program is then the one without them, bit for bit):
`obs_normalization` keeps running per-feature stats of `obs["vector"]` (MAPPO also of the critic's
input) in `params["obs_norm"]`, so checkpoints and `act` (evaluation) carry them; a rollout and the
epochs that learn from it use the stats as they were at its start, and the observations it saw are
merged in after the epochs. `reward_scaling="return_std"` divides the rewards GAE reads (not the
reported returns) by the running std of the discounted return, kept in `RunnerState.returns`.

`recurrent="gru"` (off by default) makes the actor a `RecurrentActor`: its GRU state per (env, agent)
lives in `RunnerState.memory`, and a step whose observation is an episode's first (after the initial
reset or an auto-reset: `info["done"]` on the step before) starts from the initial state. Each
transition records that flag, so the update replays the rollout from the GRU state it started with and
the same resets (`replay`); its minibatches are groups of whole env sequences, not shuffled steps. The
critic stays feed-forward (IPPO: the agent's observation; MAPPO: the global state).

`teacher_coef > 0` (off by default) adds a training-time imitation term: each transition records the env's
scripted action on the same observation and where it counts (every active decision, or with
`teacher_where="safety"` only where the env's `scripted_safety_mask` fires), and the loss gains
`coef * mean(-log pi(scripted action | obs))` over those decisions, `coef` moving linearly from
`teacher_coef` to 0 at update `teacher_anneal_updates`. The policy still picks every action it takes, so
PPO stays on-policy and the labels come from the states the policy itself visits (as in DAgger).
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
    ReturnScaling,
    TrainingEnv,
    env_minibatches,
    example_obs,
    finite_flags,
    flatten_batch,
    gae,
    make_env,
    make_optimizer,
    masked_mean,
    merge_stats,
    normalize,
    ppo_loss,
    rollout_metrics,
    running_stats_init,
    share_rewards,
    shuffled_minibatches,
)
from baselines.config import ConfigError, PPOConfig, check_env_fit
from baselines.networks import Actor, Critic, RecurrentActor, initial_hidden


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
class PolicyMemory:
    """The recurrent actor's state between steps (`recurrent` only)."""

    hidden: jax.Array  # f32[num_envs, A, H], the GRU state after the last step (before any reset)
    episode_start: jax.Array  # bool[num_envs], the current obs is an episode's first: start from h0


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
    discounted_return: jax.Array | None = None  # f32[N, A], reward_scaling="return_std" only
    episode_start: jax.Array | None = None  # bool[N, A], recurrent only: obs is an episode's first
    teacher_action: dict | None = None  # teacher only: the scripted controller's action on `obs`
    teacher_mask: jax.Array | None = None  # bool[N, A], teacher only: the imitation loss counts here


@dataclass(frozen=True)
class Train:
    """What `make_train` returns. `init(key) -> RunnerState` and `update_chunk(RunnerState) ->
    (RunnerState, metrics [K, ...])` are pure and jittable (one seed; vmap them over seeds);
    `act(params, obs [A, ...], key, greedy) -> action` is the trained policy for evaluation;
    `rollout(RunnerState)` collects one update's trajectory (for tests and inspection).

    Recurrent actors (`recurrent != "none"`) act through `policy_step(params, obs [..., A, ...], hidden
    [..., A, H], episode_start bool[..., A]) -> (hidden, HybridDistribution)` from
    `initial_memory(lead_shape) -> f32[*lead_shape, H]` (`act` refuses them); `replay(params, traj
    [T, n, A, ...], hidden0 [n, A, H]) -> (log_prob, entropy_continuous, entropy_discrete)` f32[T, n, A]
    is what the update recomputes from a rollout."""

    config: PPOConfig
    env: Any
    env_params: Any
    init: Callable[[jax.Array], RunnerState]
    update_chunk: Callable[[RunnerState], tuple[RunnerState, dict]]
    act: Callable[[Any, dict, jax.Array, bool], dict]
    rollout: Callable[[RunnerState], tuple[RunnerState, tuple[Transition, dict]]]
    policy_step: Callable[..., tuple[jax.Array, Any]] | None = None
    initial_memory: Callable[[tuple[int, ...]], jax.Array] | None = None
    replay: Callable[[Any, Transition, jax.Array], tuple[jax.Array, ...]] | None = None


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
    check_env_fit(config, env, env_params)  # a one-line ConfigError before anything compiles
    training_env = TrainingEnv(env, config.train_worlds, env_params, config.pregenerate_worlds)
    num_envs = config.num_envs
    actor_options = (
        env.continuous_dims,
        tuple(env.discrete_branches),
        config.hidden_sizes,
        config.cnn_channels,
        config.activation,
        config.init_log_std,
    )
    recurrent = config.recurrent != "none"
    actor = RecurrentActor(*actor_options, config.gru_size) if recurrent else Actor(*actor_options)
    critic = Critic(config.hidden_sizes, config.cnn_channels, config.activation)
    optimizer = make_optimizer(config)
    centralised = config.algo == "mappo"
    scale_rewards = config.reward_scaling == "return_std"
    per_branch_entropy = config.ent_coef_continuous is not None or config.ent_coef_discrete is not None
    ent_coef_continuous = (
        config.ent_coef if config.ent_coef_continuous is None else config.ent_coef_continuous
    )
    ent_coef_discrete = config.ent_coef if config.ent_coef_discrete is None else config.ent_coef_discrete
    teach = config.teacher_coef > 0
    if teach:  # the scripted action and where it counts, per env [N, A]: computed in the rollout
        teacher_policy = jax.vmap(env.scripted_policy, (0, None))
        if config.teacher_where == "safety":
            safety_mask = jax.vmap(env.scripted_safety_mask, (0, None))

    def teacher_weight(update: jax.Array) -> jax.Array:
        """f32[]: the imitation loss's coefficient at this update (linear to 0 over the anneal)."""
        if config.teacher_anneal_updates <= 0:
            return jnp.float32(config.teacher_coef)
        frac = jnp.minimum(update.astype(jnp.float32) / config.teacher_anneal_updates, 1.0)
        return jnp.float32(config.teacher_coef) * (1.0 - frac)

    reweight = bool(config.train_reward_weights)
    if reweight:  # training-only reward weights [T]: the given ones, the env's task weight elsewhere
        env_weights = jnp.asarray(env_params.task_weights[env_params.task], jnp.float32)
        given = jnp.asarray(
            [float(config.train_reward_weights.get(n, 0.0)) for n in env.reward_term_names], jnp.float32
        )
        named = jnp.asarray([n in config.train_reward_weights for n in env.reward_term_names])
        start_weights = jnp.where(named, given, env_weights)

    def train_reward_weights(update: jax.Array) -> jax.Array:
        """f32[T] at this update: the start weights, moving linearly to the env's over the anneal."""
        if config.train_reward_weights_anneal_updates <= 0:
            return start_weights
        frac = jnp.minimum(update.astype(jnp.float32) / config.train_reward_weights_anneal_updates, 1.0)
        return start_weights + (env_weights - start_weights) * frac

    # ------------------------------------------------------------- observation normalisation
    def trainable(params: dict) -> dict:
        """The parameters the optimiser updates (not the running stats)."""
        return {"actor": params["actor"], "critic": params["critic"]}

    def actor_view(params: dict, obs: dict) -> dict:
        """What the actor reads: `obs` with `vector` normalised when `obs_normalization`."""
        if not config.obs_normalization:
            return obs
        vector = normalize(params["obs_norm"]["actor"], obs["vector"], config.obs_norm_clip)
        return {**obs, "vector": vector}

    def critic_view(params: dict, critic_obs: dict) -> dict:
        """What the critic reads: its input normalised (IPPO: the actor's stats; MAPPO: its own)."""
        if not config.obs_normalization:
            return critic_obs
        stats = params["obs_norm"]["critic" if centralised else "actor"]
        return {**critic_obs, "vector": normalize(stats, critic_obs["vector"], config.obs_norm_clip)}

    def merge_obs_stats(obs_norm: dict, obs: dict, critic_obs: dict | None) -> dict:
        """`obs_norm` with the observations `obs` `[..., A, ...]` (and MAPPO's critic inputs) merged."""
        merged = {"actor": merge_stats(obs_norm["actor"], obs["vector"])}
        if centralised:
            merged["critic"] = merge_stats(obs_norm["critic"], critic_obs["vector"])
        return merged

    # ------------------------------------------------------------------- what the critic reads
    def critic_input(env_state: Any, obs: dict) -> dict:
        """The critic's input for every agent of every env `[N, A, ...]`: IPPO the agents' own
        observations; MAPPO `{"vector": f32[N, A, S (+ D) (+ A)]}` (`critic_inputs`)."""
        if not centralised:
            return obs
        state = jax.vmap(training_env.global_state, (0, None))(env_state, env_params)
        local = obs["vector"] if config.critic_local_obs else None
        return critic_inputs(state, env.num_agents, config.critic_agent_id, local)

    # ------------------------------------------------------------------------ the recurrent actor
    def initial_memory(lead_shape: tuple[int, ...]) -> jax.Array:
        """The GRU state an episode starts from, `f32[*lead_shape, gru_size]`."""
        return initial_hidden(lead_shape, config.gru_size)

    def policy_step(
        params: dict, obs: dict, hidden: jax.Array, episode_start: jax.Array
    ) -> tuple[jax.Array, Any]:
        """One recurrent step on `obs [..., A, ...]` (normalised here when `obs_normalization`): the GRU
        starts from the initial state where `episode_start [..., A]` (an episode's first observation),
        else from `hidden [..., A, H]`. Returns `(new hidden, HybridDistribution)`."""
        hidden = jnp.where(episode_start[..., None], initial_memory(hidden.shape[:-1]), hidden)
        return actor.apply(params["actor"], actor_view(params, obs), hidden)

    def replay(params: dict, traj: Transition, hidden0: jax.Array) -> tuple[jax.Array, ...]:
        """Re-run the actor over a rollout `[T, n, A, ...]` from its first GRU state `hidden0 [n, A, H]`
        with the rollout's resets: `(log_prob, entropy_continuous, entropy_discrete)` f32[T, n, A] of
        its actions (at the rollout's params, log_prob equals `traj.log_prob`), then, if the rollout
        recorded a teacher, the log-probability of the teacher's actions."""

        def step(hidden: jax.Array, inputs: tuple) -> tuple[jax.Array, tuple[jax.Array, ...]]:
            obs, action, episode_start, teacher_action = inputs
            hidden, dist = policy_step(params, obs, hidden, episode_start)
            out = (dist.log_prob(action), *dist.entropy_parts())
            if teacher_action is not None:
                out += (dist.log_prob(teacher_action),)
            return hidden, out

        inputs = (traj.obs, traj.action, traj.episode_start, traj.teacher_action)
        _, out = jax.lax.scan(step, hidden0, inputs)
        return out

    # ------------------------------------------------------------------------------------ init
    def init(key: jax.Array) -> RunnerState:
        """One seed's runner state. Call it outside `vmap` (orthogonal init uses QR; see population)."""
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs, env_state = jax.vmap(training_env.reset, (0, None))(
            jax.random.split(k_env, num_envs), env_params
        )
        critic_example = jax.tree.map(lambda x: x[0], critic_input(env_state, obs))  # shapes only
        actor_inputs = (example_obs(env, env_params),)
        if recurrent:
            actor_inputs += (initial_memory((env.num_agents,)),)
        params = {
            "actor": actor.init(k_actor, *actor_inputs),
            "critic": critic.init(k_critic, critic_example),
        }
        opt_state = optimizer.init(trainable(params))
        if config.obs_normalization:  # the first rollout already acts on normalised reset obs
            empty = {"actor": running_stats_init(obs["vector"].shape[-1:])}
            if centralised:
                empty["critic"] = running_stats_init(critic_example["vector"].shape[-1:])
            critic_obs = critic_input(env_state, obs) if centralised else None
            params["obs_norm"] = merge_obs_stats(empty, obs, critic_obs)
        returns = None
        if scale_rewards:
            returns = ReturnScaling(running_stats_init(), jnp.zeros((num_envs, env.num_agents), jnp.float32))
        memory = None
        if recurrent:  # every env starts an episode: the first step starts from the initial state
            memory = PolicyMemory(initial_memory((num_envs, env.num_agents)), jnp.ones(num_envs, bool))
        return RunnerState(params, opt_state, env_state, obs, k_run, jnp.int32(0), returns, memory)

    # --------------------------------------------------------------------------------- rollout
    def env_step(runner: RunnerState, _: Any) -> tuple[RunnerState, tuple[Transition, dict]]:
        rng, k_action, k_env = jax.random.split(runner.rng, 3)
        params = runner.params
        if recurrent:
            episode_start = jnp.broadcast_to(runner.memory.episode_start[:, None], (num_envs, env.num_agents))
            hidden, dist = policy_step(params, runner.obs, runner.memory.hidden, episode_start)
        else:
            dist = actor.apply(params["actor"], actor_view(params, runner.obs))  # batch [N, A]
        action = dist.sample(k_action)
        critic_obs = critic_input(runner.env_state, runner.obs)
        value = critic.apply(params["critic"], critic_view(params, critic_obs))
        obs, env_state, reward, terminated, _, info, final_obs, final_state = jax.vmap(
            training_env.step, (0, 0, 0, None)
        )(jax.random.split(k_env, num_envs), runner.env_state, action, env_params)
        if reweight:  # the training reward; info["episode"] (the "return" metrics) keeps the env's
            reward = jnp.sum(info["raw_reward_terms"] * train_reward_weights(runner.update), axis=-1)
        if config.train_reward_sharing > 0.0:  # each agent also earns its env's mean (a team reward)
            reward = share_rewards(reward, info["active"], config.train_reward_sharing)
        # V of where the step got before auto-reset (observation or global state): the truncation
        # bootstrap
        next_value = critic.apply(params["critic"], critic_view(params, critic_input(final_state, final_obs)))
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
        if teach:  # the scripted action on the same (raw) observation, and where imitating it counts
            if config.teacher_where == "safety":
                counts = safety_mask(runner.obs, env_params)
            else:
                counts = jnp.ones_like(info["active"])
            transition = transition.replace(
                teacher_action=teacher_policy(runner.obs, env_params), teacher_mask=counts
            )
        episode = {k: info["episode"][k] for k in ("done", "return", "length")}
        runner = runner.replace(obs=obs, env_state=env_state, rng=rng)
        if recurrent:  # the obs just returned is an episode's first where this step ended one
            transition = transition.replace(episode_start=episode_start)
            runner = runner.replace(memory=PolicyMemory(hidden, info["done"]))
        if scale_rewards:  # G_t = r_t + gamma * G_{t-1}, restarted after the episode's end
            discounted = runner.returns.discounted_return * config.gamma + reward
            transition = transition.replace(discounted_return=discounted)
            restarted = jnp.where(transition.episode_end, 0.0, discounted)
            runner = runner.replace(returns=runner.returns.replace(discounted_return=restarted))
        return runner, (transition, episode)

    def rollout(runner: RunnerState) -> tuple[RunnerState, tuple[Transition, dict]]:
        """`num_steps` env steps: the trajectory `[T, N, A, ...]` and the finished-episode records."""
        return jax.lax.scan(env_step, runner, None, config.num_steps)

    # ------------------------------------------------------------------------------------ loss
    def loss_fn(
        params: dict, obs_norm: Any, minibatch: tuple, teacher_coef: jax.Array | None = None
    ) -> tuple[jax.Array, dict]:
        """Feed-forward: a flat minibatch `[B, ...]`; recurrent: `((traj, advantages, targets) [T, n, A,
        ...], hidden0 [n, A, H])`, whole env sequences replayed from their first GRU state.
        `teacher_coef` f32[]: the imitation term's weight (teacher only)."""
        views = {} if obs_norm is None else {"obs_norm": obs_norm}  # the stats the rollout acted with
        if recurrent:
            (traj, advantages, targets), hidden0 = minibatch
            log_prob, entropy_continuous, entropy_discrete, *teacher_log_prob = replay(
                {**views, **params}, traj, hidden0
            )
            entropy = entropy_continuous + entropy_discrete
        else:
            traj, advantages, targets = minibatch
            dist = actor.apply(params["actor"], actor_view(views, traj.obs))
            log_prob, entropy = dist.log_prob(traj.action), dist.entropy()
            if per_branch_entropy:
                entropy_continuous, entropy_discrete = dist.entropy_parts()
            if teach:
                teacher_log_prob = [dist.log_prob(traj.teacher_action)]
        entropy_bonus = None
        if per_branch_entropy:
            entropy_bonus = ent_coef_continuous * entropy_continuous + ent_coef_discrete * entropy_discrete
        critic_obs = traj.critic_obs if centralised else traj.obs
        value = critic.apply(params["critic"], critic_view(views, critic_obs))
        loss, metrics = ppo_loss(
            log_prob,
            traj.log_prob,
            advantages,
            entropy,
            value,
            traj.value,
            targets,
            traj.active,
            config.clip_eps,
            config.clip_value_eps,
            config.vf_coef,
            config.ent_coef,
            config.normalize_advantages,
            entropy_bonus,
        )
        if not teach:
            return loss, metrics
        counted = traj.teacher_mask & traj.active
        imitation = -masked_mean(teacher_log_prob[0], counted)
        loss = loss + teacher_coef * imitation
        metrics = {
            **metrics,
            "loss": loss,
            "teacher_loss": imitation,  # mean -log pi(scripted action) where the teacher counts
            "teacher_fraction": masked_mean(traj.teacher_mask.astype(jnp.float32), traj.active),
        }
        return loss, metrics

    # ---------------------------------------------------- one update: rollout, GAE, PPO epochs
    def update_step(runner: RunnerState, _: Any) -> tuple[RunnerState, dict]:
        obs_norm = runner.params.get("obs_norm")  # fixed through the rollout and its epochs
        teacher_coef = teacher_weight(runner.update) if teach else None
        memory0 = runner.memory  # the GRU state the rollout starts from (recurrent)
        runner, (traj, episode) = rollout(runner)
        rewards = traj.reward
        if scale_rewards:
            return_stats = merge_stats(runner.returns.stats, traj.discounted_return, traj.active)
            rewards = rewards / jnp.sqrt(return_stats.var + 1e-8)
            runner = runner.replace(returns=runner.returns.replace(stats=return_stats))
            traj = traj.replace(discounted_return=None)  # not needed in the minibatches
        advantages, targets = gae(
            rewards,
            traj.value,
            traj.next_value,
            traj.terminated,
            traj.episode_end,
            traj.active,
            config.gamma,
            config.gae_lambda,
        )
        if recurrent:  # whole sequences [T, N, A, ...] and the GRU state each env started from
            batch = ((traj, advantages, targets), memory0.hidden)
        else:
            batch = flatten_batch((traj, advantages, targets))

        def epoch(carry: tuple, _: Any) -> tuple[tuple, dict]:
            params, opt_state, key = carry
            key, k_shuffle = jax.random.split(key)

            def minibatch_step(carry: tuple, minibatch: tuple) -> tuple[tuple, dict]:
                params, opt_state = carry
                grads, metrics = jax.grad(loss_fn, has_aux=True)(params, obs_norm, minibatch, teacher_coef)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), metrics

            if recurrent:
                minibatches = env_minibatches(k_shuffle, batch, config.num_minibatches)
            else:
                minibatches = shuffled_minibatches(k_shuffle, batch, config.num_minibatches)
            (params, opt_state), metrics = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
            return (params, opt_state, key), metrics

        rng, k_epochs = jax.random.split(runner.rng)
        (params, opt_state, _), loss_metrics = jax.lax.scan(
            epoch, (trainable(runner.params), runner.opt_state, k_epochs), None, config.update_epochs
        )
        if config.obs_normalization:  # every observation seen once: the rollout's after its first,
            # then where it stopped (its first was merged at init or by the previous update)
            seen = {"vector": jnp.concatenate([traj.obs["vector"][1:], runner.obs["vector"][None]])}
            seen_critic = None
            if centralised:
                last = critic_input(runner.env_state, runner.obs)
                seen_critic = jax.tree.map(
                    lambda traj_x, x: jnp.concatenate([traj_x[1:], x[None]]), traj.critic_obs, last
                )
            params = {**params, "obs_norm": merge_obs_stats(obs_norm, seen, seen_critic)}
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
        if recurrent:
            raise ConfigError(  # one line from any command that does not carry the memory (hivex transfer)
                "recurrent runs act with their GRU memory (baselines.evaluation.trained_policy in "
                "policy_env); this command does not carry it yet: use hivex evaluate or hivex transfer"
            )
        dist = actor.apply(params["actor"], actor_view(params, obs))
        return dist.mode() if greedy else dist.sample(key)

    if not recurrent:
        return Train(config, env, env_params, init, update_chunk, act, rollout)
    return Train(
        config, env, env_params, init, update_chunk, act, rollout, policy_step, initial_memory, replay
    )
