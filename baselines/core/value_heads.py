"""Value heads over named reward terms (`value_heads: {term: scale}`; off: `{}`, one value).

The critic gets one output per named term of the env's reward (`env.reward_term_names`) besides the one for
the rest of the training reward. Head k learns the return of `term_k / scale_k`; GAE runs per head and the
advantage the policy reads is `A_rest + sum_k scale_k * A_k`, the advantage of the whole reward. Why: a rare,
large term (Ocean Plastic Collection's -100 for a collision, once in thousands of decisions) is averaged away
by one value function that must also fit the income, so its advantage is noise; a head of its own with its
targets scaled to order 1 (where Adam's steps reach them) can see it coming
(docs/experiments/2026-11-30-ocean-plastic-collection-training.md, Session 20). Related: reward
decomposition (van Seijen et al. 2017, "Hybrid Reward Architecture"); per-head target scales are a fixed
stand-in for PopArt's adaptive ones.

A head's scale can move during training (`value_heads_final: {term: scale}`, linearly over the updates
`value_heads_anneal_updates: [start, end]`): the head then learns term / scale(update), each update's targets
in that update's units (the head follows its shrinking or growing targets as it follows any change in the
returns).

Transitions record the split reward unscaled (`f32[N, A, 1 + K]`, summing to the training reward), values
and targets are per head in the heads' scaled units.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from baselines.config import ExtensionsConfig, ValueHeadsConfig
from baselines.core.extensions.rewards import RewardReweighting
from baselines.core.kernels import anneal_progress, gae, share_rewards


class ValueHeads:
    """The split of the training reward, and GAE over it, for the config's `value_heads` (off: the plain
    ones); `extensions`: the training reward's transforms, which the split follows."""

    def __init__(self, heads: ValueHeadsConfig, extensions: ExtensionsConfig, env: Any, env_params: Any):
        self.names = tuple(heads.value_heads)
        self.count = 1 + len(self.names)  # outputs of the critic
        if not self.names:
            return
        all_names = list(env.reward_term_names)
        self.columns = jnp.asarray([all_names.index(n) for n in self.names], jnp.int32)
        # per output: 1 for the rest, then each named head's scale
        self.scales = jnp.asarray([1.0] + [float(heads.value_heads[n]) for n in self.names], jnp.float32)
        final = {**heads.value_heads, **heads.value_heads_final}
        self.final_scales = jnp.asarray([1.0] + [float(final[n]) for n in self.names], jnp.float32)
        self.anneal = tuple(heads.value_heads_anneal_updates) if heads.value_heads_final else ()
        # the terms as the training reward weighs them (a curriculum's weights; else the env's, in info)
        reweighted = extensions.train_reward_weights
        self.reweighting = RewardReweighting(extensions, env, env_params) if reweighted else None
        self.sharing = extensions.train_reward_sharing

    def split(
        self, info: dict, reward: jax.Array, active: jax.Array, update: jax.Array, member: dict | None = None
    ) -> jax.Array:
        """The training reward f32[N, A] -> `[rest, term_1, ..., term_K]` f32[N, A, 1 + K] (unscaled, summing
        to `reward`); off: `reward` itself."""
        if not self.names:
            return reward
        if self.reweighting is None:
            terms = info["reward_terms"][..., self.columns]
        else:
            weights = self.reweighting.weights(update, member)[self.columns]
            terms = info["raw_reward_terms"][..., self.columns] * weights
        if self.sharing > 0:  # sharing is linear: share each term as the whole reward was shared
            share = self.sharing if member is None else member["reward_sharing"]
            terms = jax.vmap(share_rewards, (-1, None, None), -1)(terms, active, share)
        return jnp.concatenate([(reward - jnp.sum(terms, axis=-1))[..., None], terms], axis=-1)

    def scales_at(self, update: jax.Array) -> jax.Array:
        """f32[1 + K]: each output's scale at `update` (constant without `value_heads_final`)."""
        if not self.anneal:
            return self.scales
        start, end = self.anneal
        return self.scales + anneal_progress(update, end, start) * (self.final_scales - self.scales)

    def gae(
        self, update: jax.Array, rewards: jax.Array, traj: Any, *rest: Any
    ) -> tuple[jax.Array, jax.Array]:
        """`common.gae` per head over `traj`'s values and episode flags (`rest`: gamma, lambda, ...):
        (advantages f32[T, N, A] of the whole reward, targets f32[T, N, A, 1 + K] in the heads' units at
        `update`); off: `common.gae` itself."""
        flags = (traj.terminated, traj.episode_end, traj.active)
        if not self.names:
            return gae(rewards, traj.value, traj.next_value, *flags, *rest)
        scales = self.scales_at(update)
        per_head = jax.vmap(gae, (-1, -1, -1) + (None,) * (3 + len(rest)), -1)
        advantages, targets = per_head(rewards / scales, traj.value, traj.next_value, *flags, *rest)
        return jnp.sum(advantages * scales, axis=-1), targets
