"""Training-reward transforms: reward-term re-weighting with its anneal (`train_reward_weights`) and
reward sharing among an env's agents (`train_reward_sharing`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from baselines.config import ExtensionsConfig
from baselines.core.kernels import anneal_progress, share_rewards


class RewardReweighting:
    """The training reward as the env's raw reward terms under other weights: the given ones (unnamed
    terms keep the env's task weight), moving linearly to the env's weights at update
    `train_reward_weights_anneal_updates` (0: no anneal)."""

    def __init__(self, extensions: ExtensionsConfig, env: Any, env_params: Any):
        names, given = env.reward_term_names, extensions.train_reward_weights
        self.env_weights = jnp.asarray(env_params.task_weights[env_params.task], jnp.float32)
        named = jnp.asarray([n in given for n in names])
        values = jnp.asarray([float(given.get(n, 0.0)) for n in names], jnp.float32)
        self.start_weights = jnp.where(named, values, self.env_weights)
        self.anneal_updates = extensions.train_reward_weights_anneal_updates

    def arrays(self) -> dict[str, Any]:
        """What a fused member carries of this transform (`baselines.core.member.member_data`)."""
        return {
            "reward_start_weights": self.start_weights,
            "reward_env_weights": self.env_weights,
            "reward_anneal_updates": jnp.float32(self.anneal_updates),
        }

    def weights(self, update: jax.Array, member: dict | None = None) -> jax.Array:
        """f32[terms] at this update (a fused member's own weights and anneal from `member`)."""
        start, end, anneal = self.start_weights, self.env_weights, self.anneal_updates
        if member is not None:
            start, end = member["reward_start_weights"], member["reward_env_weights"]
        if self.anneal_updates <= 0:  # on or off is the same for every member (a data key's switch)
            return start
        if member is not None:
            anneal = member["reward_anneal_updates"]
        return start + (end - start) * anneal_progress(update, anneal)

    def __call__(
        self, info: dict, reward: jax.Array, active: jax.Array, update: jax.Array, member: dict | None = None
    ) -> jax.Array:
        """The re-weighted sum of `info["raw_reward_terms"]` f32[N, A, terms]."""
        return jnp.sum(info["raw_reward_terms"] * self.weights(update, member), axis=-1)


class RewardSharing:
    """Each agent also earns a share of its env's mean reward over the active agents (a team reward)."""

    def __init__(self, share: float):
        self.share = share

    def arrays(self) -> dict[str, Any]:
        """What a fused member carries of this transform (`baselines.core.member.member_data`)."""
        return {"reward_sharing": jnp.float32(self.share)}

    def __call__(
        self, info: dict, reward: jax.Array, active: jax.Array, update: jax.Array, member: dict | None = None
    ) -> jax.Array:
        """`(1 - share) r_i + share * mean_active(r)`, 0 for inactive agents (`common.share_rewards`)."""
        share = self.share if member is None else member["reward_sharing"]
        return share_rewards(reward, active, share)
