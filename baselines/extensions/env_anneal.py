"""A training-env curriculum: the `train_env_params` fields move linearly from their training values to
the env's own (`env_params`, what evaluation plays) over `train_env_params_anneal_updates` updates (0: they
stay, the plain `train_env_params`).

Why: a setting that makes a rare event common or early in training (Ocean Plastic Collection's hull
radius: vessels that touch at 10 m instead of 5 m, so the -100 comes sooner and more often) can be handed
back to the env's own before training ends, as the reward curriculum hands back the env's weights
(docs/experiments/2026-11-30-ocean-plastic-collection-training.md, session 24). The anneal reaches what
`step` reads; worlds pregenerated for training (`pregenerate_worlds`) keep the draws of the starting values.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.common import anneal_progress
from baselines.config import PPOConfig

PREFIX = "env_params_final."  # a fused member's arrays: one f32[] per annealed field


class EnvParamsAnneal:
    """`anneal(step_params, update, member)`: the EnvParams a training step plays at `update`."""

    def __init__(self, config: PPOConfig, env_params: Any):
        self.updates = config.train_env_params_anneal_updates
        self.names = tuple(config.train_env_params) if self.updates > 0 else ()
        self.final = {name: getattr(env_params, name) for name in self.names}

    def arrays(self) -> dict[str, Any]:
        """The env's own values a fused member carries (`member_data`), one f32[] per annealed field."""
        return {PREFIX + name: np.float32(value) for name, value in self.final.items()}

    def __call__(self, step_params: Any, update: jax.Array, member: dict | None = None) -> Any:
        """`step_params` (the training values) moved `min(update / N, 1)` of the way to the env's own."""
        if not self.names:
            return step_params
        progress = anneal_progress(update, self.updates)
        moved = {}
        for name in self.names:
            start = jnp.asarray(getattr(step_params, name))
            final = self.final[name] if member is None else member[PREFIX + name]
            value = start + progress * (jnp.asarray(final, jnp.float32) - start)
            moved[name] = (
                value.astype(start.dtype) if start.dtype.kind == "f" else jnp.round(value).astype(start.dtype)
            )
        return step_params.replace(**moved)
