"""The PPO update's pieces outside `make_train` (`baselines.core.ppo`): what the optimiser updates, one
minibatch step, the epochs over a rollout's batch, and the clipped loss (with the auxiliary losses' terms)
that step differentiates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax

from baselines.config import PPOScalars
from baselines.core import member as members
from baselines.core.kernels import ppo_loss
from baselines.core.networks import FirstConvPair
from baselines.core.policy import action_readout


def trainable(params: dict) -> dict:
    """The parameters the optimiser updates (not the running stats)."""
    return {"actor": params["actor"], "critic": params["critic"]}


def minibatch_update(loss: Callable[[dict, tuple], tuple[jax.Array, dict]], optimizer: Any) -> Callable:
    """One optimiser step on `loss(params, minibatch) -> (loss, metrics)`: the scan body
    `((params, opt_state), minibatch) -> ((params, opt_state), metrics)`."""

    def step(carry: tuple, minibatch: tuple) -> tuple[tuple, dict]:
        params, opt_state = carry
        grads, metrics = jax.grad(loss, has_aux=True)(params, minibatch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), metrics

    return step


def ppo_epochs(
    step: Callable,
    policy: Any,
    update_epochs: int,
    num_minibatches: int,
    params: dict,
    opt_state: Any,
    key: jax.Array,
    batch: tuple,
) -> tuple[tuple[dict, Any], dict]:
    """`update_epochs` epochs of `num_minibatches` `step`s over `batch` (`policy.batch` of a rollout),
    reshuffled each epoch: `((params, opt_state), metrics [E, M])`."""

    def epoch(carry: tuple, _: Any) -> tuple[tuple, dict]:
        params, opt_state, key = carry
        key, k_shuffle = jax.random.split(key)
        minibatches = policy.minibatches(k_shuffle, batch, num_minibatches)
        (params, opt_state), metrics = jax.lax.scan(step, (params, opt_state), minibatches)
        return (params, opt_state, key), metrics

    (params, opt_state, _), metrics = jax.lax.scan(epoch, (params, opt_state, key), None, update_epochs)
    return (params, opt_state), metrics


def make_loss(
    policy: Any,
    critic: Any,
    normalization: Any,
    critic_input: Any,
    auxiliary_losses: tuple | list,
    data: Callable,
    scalars: PPOScalars,
    normalize_advantages: bool,
) -> Callable[..., tuple[jax.Array, dict]]:
    """`loss_fn(params, obs_norm, minibatch, coefficients, member=None) -> (loss, metrics)` of `make_train`'s
    pieces (`data(member, key)`: a fused member's data key, or the config's)."""
    # the actor's and the critic's first convolution of the image both read, as one
    first_convs = FirstConvPair(critic.module.visual_encoder)

    def readout(dist: Any, action: dict, extras: dict) -> tuple:
        """Per (replayed) step: log_prob, the entropy parts, then each auxiliary loss's readout."""
        return (
            *action_readout(dist, action, extras),
            *(aux.readout(dist, extras) for aux in auxiliary_losses),
        )

    def loss_fn(
        params: dict, obs_norm: Any, minibatch: tuple, coefficients: tuple, member: dict | None = None
    ) -> tuple[jax.Array, dict]:
        """PPO's clipped loss on a minibatch (the policy's layout: flat steps or whole sequences), plus
        each auxiliary loss's term weighted by its `coefficients` entry."""
        views = {} if obs_norm is None else {"obs_norm": obs_norm}  # the stats the rollout acted with
        traj = policy.trajectory(minibatch)
        actor_obs, critic_obs = first_convs(params, traj.obs, critic_input.of(traj))
        minibatch = policy.with_trajectory(minibatch, traj.replace(obs=actor_obs))
        if critic.shared_encoder and not policy.recurrent:  # one pass of the shared torso, forward and back
            replayed = policy.replay_with_features({**views, **params}, minibatch, readout)
            (traj, advantages, targets), out, features = replayed
            value = critic.on_features(params, features)
        else:
            (traj, advantages, targets), out = policy.replay({**views, **params}, minibatch, readout)
            value = critic.apply(params, normalization.critic_view(views, critic_obs))
        log_prob, entropy_continuous, entropy_discrete, *aux_out = out
        loss, metrics = ppo_loss(
            log_prob,
            traj.log_prob,
            advantages,
            entropy_continuous + entropy_discrete,
            value,
            traj.value,
            targets,
            traj.active,
            data(member, "clip_eps"),
            data(member, "clip_value_eps"),
            data(member, "vf_coef"),
            data(member, "ent_coef"),
            normalize_advantages,
            members.entropy_bonus(scalars, entropy_continuous, entropy_discrete, member),
            value_clipping=scalars.clip_value_eps > 0,
        )
        for aux, coefficient, aux_readout in zip(auxiliary_losses, coefficients, aux_out, strict=True):
            term, aux_metrics = aux.loss(coefficient, aux_readout, traj)
            loss = loss + term
            metrics = {**metrics, "loss": loss, **aux_metrics}
        return loss, metrics

    return loss_fn
