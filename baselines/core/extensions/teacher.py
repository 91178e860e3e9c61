"""The training-time teacher (`teacher_coef > 0`): imitation of the env's scripted controller.

Each transition records the scripted action on the same (raw) observation and where it counts (every
decision, or with `teacher_where="safety"` only where the env's `scripted_safety_mask` fires); the loss
gains `coef * mean(-log pi(scripted action | obs))` over the active decisions where it counts, `coef`
moving linearly from `teacher_coef` to 0 at update `teacher_anneal_updates` (0: constant). The policy
still picks every action it takes, so PPO stays on-policy and the labels come from the states the
policy itself visits (as in DAgger). Evaluation never sees the teacher.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from baselines.config import ExtensionsConfig
from baselines.core.kernels import anneal_progress, masked_mean
from baselines.core.networks import HybridDistribution


class Teacher:
    """An `AuxiliaryLoss`: records `teacher_action` and `teacher_mask`; metrics `teacher_loss` (mean
    -log pi(scripted action) where it counts) and `teacher_fraction` (share of active decisions where it
    counts)."""

    metric_names = ("teacher_loss", "teacher_fraction")

    def __init__(self, extensions: ExtensionsConfig, env: Any):
        self.scripted = jax.vmap(env.scripted_policy, (0, None))  # per env: [N, A, ...]
        self.safety_only = extensions.teacher_where == "safety"
        self.safety_mask = jax.vmap(env.scripted_safety_mask, (0, None)) if self.safety_only else None
        self.coef, self.anneal_updates = extensions.teacher_coef, extensions.teacher_anneal_updates

    def record(self, obs: dict, info: dict, env_params: Any) -> dict:
        """The scripted action on `obs [N, A, ...]` and where imitating it counts, bool[N, A]."""
        if self.safety_mask is not None:  # teacher_where="safety"
            counts = self.safety_mask(obs, env_params)
        else:
            counts = jnp.ones_like(info["active"])
        return {"teacher_action": self.scripted(obs, env_params), "teacher_mask": counts}

    def coefficient(self, update: jax.Array) -> jax.Array:
        """f32[]: `teacher_coef`, linear to 0 over the anneal."""
        if self.anneal_updates <= 0:
            return jnp.float32(self.coef)
        return jnp.float32(self.coef) * (1.0 - anneal_progress(update, self.anneal_updates))

    def readout(self, dist: HybridDistribution, extras: dict) -> jax.Array:
        """log pi(scripted action)."""
        return dist.log_prob(extras["teacher_action"])

    def loss(self, coefficient: jax.Array, readout: jax.Array, traj: Any) -> tuple[jax.Array, dict]:
        """`coef * teacher_loss` and the two metrics."""
        mask = traj.extras["teacher_mask"]
        imitation = -masked_mean(readout, mask & traj.active)
        fraction = masked_mean(mask.astype(jnp.float32), traj.active)
        return coefficient * imitation, {"teacher_loss": imitation, "teacher_fraction": fraction}
