"""The PPO trainer's kernels (`baselines.core.ppo` reads them in order): the env and its training params,
GAE, the PPO loss, minibatch shuffling, the optimizer, the rollout metrics and the finite flags.

Array layout everywhere: `[T, num_envs, num_agents, ...]`; `flatten_batch` is the one reshape point.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from baselines.config import OptimizerConfig


def anneal_progress(update: jax.Array, end: Any, start: Any = 0) -> jax.Array:
    """f32[]: how far a linear anneal is at `update`: 0 until update `start`, 1 from update `end` on."""
    return jnp.clip((update.astype(jnp.float32) - start) / (end - start), 0.0, 1.0)


# -------------------------------------------------------------------------------------------- GAE
def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    episode_end: jax.Array,
    active: jax.Array,
    gamma: float,
    gae_lambda: float,
    gamma_lambda: Any = None,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets, all f32[T, ...].

    delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t), where V(s_{t+1}) is the value of
    the observation the step returned *before* any auto-reset, so a truncated episode bootstraps from
    its final observation and a terminated one does not. The recursion
    A_t = delta_t + gamma * lambda * A_{t+1} is cut where the episode (or the agent) ended, so nothing
    flows across an auto-reset. Steps where the agent was inactive get advantage 0. `gamma_lambda`, if
    given, is the product gamma * lambda (a fused member's f32 array, rounded once as the constant is).
    """
    discount = gamma * gae_lambda if gamma_lambda is None else gamma_lambda
    active = active.astype(jnp.float32)
    deltas = (rewards + gamma * (1.0 - terminated.astype(jnp.float32)) * next_values - values) * active
    cont = 1.0 - (terminated | episode_end).astype(jnp.float32)

    def backward(next_advantage, step):
        delta, keep, act = step
        advantage = act * (delta + discount * keep * next_advantage)
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, cont, active), reverse=True)
    return advantages, advantages + values


# ------------------------------------------------------------------------ running normalisation
@struct.dataclass
class RunningMeanStd:
    """Per-feature mean and population variance of every sample merged so far, and their count."""

    mean: jax.Array  # f32[*feature_shape]
    var: jax.Array  # f32[*feature_shape]
    count: jax.Array  # f32[], samples (or total weight) merged


def running_stats_init(feature_shape: tuple[int, ...] = ()) -> RunningMeanStd:
    """Stats of nothing yet: mean 0, var 1 (normalising is the identity), count 0."""
    return RunningMeanStd(
        jnp.zeros(feature_shape, jnp.float32), jnp.ones(feature_shape, jnp.float32), jnp.float32(0.0)
    )


def merge_stats(stats: RunningMeanStd, x: jax.Array, weights: jax.Array | None = None) -> RunningMeanStd:
    """Merge a batch `x: f32[..., *feature_shape]` (samples weighted by `weights: f32[...]`, e.g. an
    active mask; default all 1) into `stats` with Chan et al.'s parallel update: the result is the mean
    and variance of everything merged so far, exactly (up to float rounding), whatever the batching."""
    x = x.astype(jnp.float32).reshape((-1,) + stats.mean.shape)
    w = jnp.ones(x.shape[0], jnp.float32) if weights is None else weights.astype(jnp.float32).reshape(-1)
    w = w.reshape((-1,) + (1,) * len(stats.mean.shape))
    n_batch = jnp.sum(w)
    safe_n_batch = jnp.maximum(n_batch, 1.0)
    mean_batch = jnp.sum(w * x, axis=0) / safe_n_batch
    var_batch = jnp.sum(w * jnp.square(x - mean_batch), axis=0) / safe_n_batch
    total = stats.count + n_batch
    batch_fraction = n_batch / jnp.maximum(total, 1.0)
    delta = mean_batch - stats.mean
    mean = stats.mean + delta * batch_fraction
    # sum of squared deviations of both parts, plus the shift between their means
    m2 = stats.var * stats.count + var_batch * n_batch + jnp.square(delta) * stats.count * batch_fraction
    var = jnp.where(total > 0, m2 / jnp.maximum(total, 1.0), stats.var)  # nothing merged: keep var
    return RunningMeanStd(mean, var, total)


def normalize(stats: RunningMeanStd, x: jax.Array, clip: float) -> jax.Array:
    """`(x - mean) / sqrt(var + 1e-8)` clipped to [-clip, clip]; `x: f32[..., *feature_shape]`."""
    return jnp.clip((x - stats.mean) / jnp.sqrt(stats.var + 1e-8), -clip, clip)


@struct.dataclass
class ReturnScaling:
    """`reward_scaling="return_std"`: rewards are divided by the running std of the discounted return
    `G_t = r_t + gamma * G_{t-1}` (reset after each episode end), as Gym's NormalizeReward does."""

    stats: RunningMeanStd  # f32[] stats of G over every active agent-step so far
    discounted_return: jax.Array  # f32[num_envs, A], G of the step before (0 after an episode end)


def share_rewards(reward: jax.Array, active: jax.Array, share: float) -> jax.Array:
    """f32[..., A]: `(1 - share) r_i + share * mean of r over the active agents` of each env (last axis),
    0 for inactive agents; share = 1 gives every agent the team's mean reward."""
    weight = active.astype(reward.dtype)
    team = jnp.sum(reward * weight, axis=-1, keepdims=True) / jnp.maximum(
        jnp.sum(weight, axis=-1, keepdims=True), 1.0
    )
    return ((1.0 - share) * reward + share * team) * weight


# --------------------------------------------------------------------------------------- PPO loss
def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `x` over entries where `mask` is set (0 if none)."""
    mask = mask.astype(x.dtype)
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def ppo_loss(
    log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantages: jax.Array,
    entropy: jax.Array,
    value: jax.Array,
    old_value: jax.Array,
    targets: jax.Array,
    mask: jax.Array,
    clip_eps: float,
    clip_value_eps: float,
    vf_coef: float,
    ent_coef: float,
    normalize_advantages: bool = True,
    entropy_bonus: jax.Array | None = None,
    value_clipping: bool | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Clipped PPO objective with value clipping and an entropy bonus; every input f32[B] (or any equal
    shapes; mask: which samples count; inactive agents contribute nothing; value, old_value and targets may
    have a trailing axis of value heads). `entropy_bonus`, if given,
    replaces `ent_coef * entropy` per sample (per-branch coefficients); the `entropy` metric stays the
    total. `value_clipping` (default: `clip_value_eps > 0`) is the static switch when `clip_value_eps` is
    an array (a fused member's). Returns `(loss, metrics)`."""
    if value_clipping is None:
        value_clipping = clip_value_eps > 0
    mask = mask.astype(jnp.float32)
    if normalize_advantages:
        mean = masked_mean(advantages, mask)
        std = jnp.sqrt(masked_mean((advantages - mean) ** 2, mask))
        advantages = (advantages - mean) / (std + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    surrogate = jnp.minimum(ratio * advantages, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages)
    policy_loss = -masked_mean(surrogate, mask)
    value_error = jnp.square(value - targets)
    if value_clipping:
        clipped = old_value + jnp.clip(value - old_value, -clip_value_eps, clip_value_eps)
        value_error = jnp.maximum(value_error, jnp.square(clipped - targets))
    if value_error.ndim > mask.ndim:  # value heads (`baselines.core.value_heads`): their errors add up
        value_error = jnp.sum(value_error, axis=-1)
    value_loss = 0.5 * masked_mean(value_error, mask)
    entropy_mean = masked_mean(entropy, mask)
    bonus = ent_coef * entropy_mean if entropy_bonus is None else masked_mean(entropy_bonus, mask)
    loss = policy_loss + vf_coef * value_loss - bonus
    metrics = {
        "loss": loss,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy_mean,
        "approx_kl": masked_mean(ratio - 1.0 - log_ratio, mask),
        "clip_fraction": masked_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), mask),
    }
    return loss, metrics


# ------------------------------------------------------------------------------------ minibatches
def flatten_batch(batch: Any) -> Any:
    """`[T, N, A, ...]` -> `[T*N*A, ...]`: the one reshape point (all fields flattened alike)."""
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1] * x.shape[2],) + x.shape[3:]), batch)


def shuffled_minibatches(key: jax.Array, batch: Any, num_minibatches: int) -> Any:
    """Shuffle a flat batch `[B, ...]` (one permutation for every field) into `[M, B / M, ...]`."""
    size = jax.tree.leaves(batch)[0].shape[0]
    permutation = jax.random.permutation(key, size)
    return jax.tree.map(
        lambda x: jnp.take(x, permutation, axis=0).reshape(
            (num_minibatches, size // num_minibatches) + x.shape[1:]
        ),
        batch,
    )


def env_minibatches(key: jax.Array, batch: tuple[Any, Any], num_minibatches: int) -> tuple[Any, Any]:
    """Recurrent minibatches: whole env sequences. `batch = (sequences, initial)` with leaves `[T, N,
    ...]` and `[N, ...]`; the envs are shuffled (one permutation for both) and split into
    `([M, T, N / M, ...], [M, N / M, ...])`, so each minibatch replays its envs' steps in order."""
    sequences, initial = batch
    num_envs = jax.tree.leaves(initial)[0].shape[0]
    permutation = jax.random.permutation(key, num_envs)
    size = num_envs // num_minibatches

    def split_sequences(x: jax.Array) -> jax.Array:
        x = jnp.take(x, permutation, axis=1)
        return x.reshape((x.shape[0], num_minibatches, size) + x.shape[2:]).swapaxes(0, 1)

    def split_initial(x: jax.Array) -> jax.Array:
        return jnp.take(x, permutation, axis=0).reshape((num_minibatches, size) + x.shape[1:])

    return jax.tree.map(split_sequences, sequences), jax.tree.map(split_initial, initial)


# -------------------------------------------------------------------------------------- optimizer
def make_optimizer(
    options: OptimizerConfig, lr: Any = None, max_grad_norm: Any = None
) -> optax.GradientTransformation:
    """Adam with global-norm clipping for params `{"actor": ..., "critic": ...}`; the learning rate
    decays linearly to 0 over `options.schedule_steps` when `anneal_lr`.

    Actor and critic are clipped separately: with returns of order 1 / (1 - gamma), the critic's
    gradient norm dwarfs the actor's, and one shared clip would all but freeze the policy. `lr` and
    `max_grad_norm`, if given, replace the options' (a fused member's f32 arrays; the state's structure
    is the same).
    """
    lr_start = options.lr if lr is None else lr
    max_norm = options.max_grad_norm if max_grad_norm is None else max_grad_norm
    if options.anneal_lr:
        schedule: Any = optax.linear_schedule(lr_start, 0.0, options.schedule_steps)
    else:
        schedule = lr_start
    adam = optax.chain(optax.clip_by_global_norm(max_norm), optax.adam(schedule, eps=1e-5))

    def labels(params: dict) -> dict:
        return {name: jax.tree.map(lambda _, n=name: n, part) for name, part in params.items()}

    return optax.multi_transform({"actor": adam, "critic": adam}, labels)


# ----------------------------------------------------------------------------------------- helpers
def rollout_metrics(traj: Any, info: dict) -> dict[str, jax.Array]:
    """Per-update training metrics from a `[T, N, A]` trajectory (a `ppo.Transition`) and the
    stacked step infos.

    `episodes` / `episode_return_sum`: finished episodes and the sum of their returns (each the mean
    of the agents' returns), so the host can average over any window without losing seeds.
    """
    done = info["episode"]["done"]  # [T, N]
    episode_return = jnp.mean(info["episode"]["return"], axis=-1)  # [T, N]
    length = info["episode"]["length"].astype(jnp.float32)
    return {
        "step_reward": masked_mean(sum_heads(traj.reward, traj.active), traj.active),
        "episodes": jnp.sum(done).astype(jnp.float32),
        "episode_return_sum": jnp.sum(jnp.where(done, episode_return, 0.0)),
        "episode_length_sum": jnp.sum(jnp.where(done, length, 0.0)),
        "active_fraction": jnp.mean(traj.active.astype(jnp.float32)),
    }


def sum_heads(reward: jax.Array, active: jax.Array) -> jax.Array:
    """f32[...] shaped like `active`: a reward split over value heads
    (`baselines.core.value_heads`, a trailing axis) summed back; a plain reward as it is."""
    return reward if reward.ndim == active.ndim else jnp.sum(reward, axis=-1)


#: the quantities `finite_flags` checks, in the order a divergence reaches them (host messages use it)
FINITE_FLAGS = {"finite_loss": "loss", "finite_grads": "gradients", "finite_params": "parameters"}


def finite_flags(losses: jax.Array, opt_state: Any, params: Any) -> dict[str, jax.Array]:
    """bool[] flags of one update, computed inside the compiled chunk (the host reads `[num_seeds, K]`
    flags per chunk instead of scanning parameters): every minibatch loss f32[E, M] finite; the
    gradients: the optimizer state after the update finite (a NaN/inf gradient makes the clipped
    update and so Adam's moments NaN for good); every parameter finite.

    All three are read after the epochs' scan, so the scan body (the trained numbers) is untouched:
    the default `hivex train` gives the same metrics.csv and eval.json bit for bit as without them."""

    def all_finite(tree: Any) -> jax.Array:
        leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.inexact)]
        return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))

    return {
        "finite_loss": jnp.all(jnp.isfinite(losses)),
        "finite_grads": all_finite(opt_state),
        "finite_params": all_finite(params),
    }


def stack_trees(trees: list[Any]) -> Any:
    """Stack a list of identical pytrees on a new leading axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def example_obs(env: Any, params: Any) -> dict:
    """A zero observation with the env's shapes/dtypes (network init)."""
    space = env.observation_space(params)
    return {k: jnp.zeros(s.shape, s.dtype) for k, s in space.spaces.items()}
