"""A training-env curriculum over `train_env_params_anneal_updates` updates (0: the plain
`train_env_params`, constant), in one of two directions:
  - handed back: the `train_env_params` fields move linearly from their training values to the env's own
    (`env_params`, what evaluation plays), so training ends on the env evaluation plays;
  - grown in: with `train_env_params_start`, those fields move linearly from their start values to
    `train_env_params`' values, which then stay.

Why: a setting that makes a rare event common or early in training (Ocean Plastic Collection's hull
radius: vessels that touch at 15 m instead of 5 m, so the -100 comes sooner and more often) can be handed
back to the env's own before training ends, as the reward curriculum hands back the env's weights; or
grown in after the policy has learnt the task's main skill on the env's own setting (the shipped OPC
config: collecting is learnt on the env's hull, then the margin; docs/experiments/
2026-11-30-ocean-plastic-collection-training.md, sessions 24-25). The anneal reaches what `step` reads;
worlds pregenerated for training (`pregenerate_worlds`) keep the draws of `train_env_params`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.config import ExtensionsConfig
from baselines.core.kernels import anneal_progress

#: a fused member's arrays, one f32[] per annealed field: the end it moves to (the env's own values) or,
#: with `train_env_params_start`, the start it moves from
FINAL_PREFIX, START_PREFIX = "env_params_final.", "env_params_start."


class EnvParamsAnneal:
    """`anneal(step_params, update, member)`: the EnvParams a training step plays at `update`, for the
    `extensions` part of a config, the env's own `env_params` and, grown in, the `start_params` it starts
    from (`baselines.config.curriculum_start_params`)."""

    def __init__(self, extensions: ExtensionsConfig, env_params: Any, start_params: Any = None):
        self.updates = extensions.train_env_params_anneal_updates
        self.grown_in = bool(extensions.train_env_params_start)
        if self.updates <= 0:
            self.names, self.other = (), {}
        elif self.grown_in:
            if start_params is None:
                raise TypeError("a grown-in curriculum needs its start params (curriculum_start_params)")
            self.names = tuple(extensions.train_env_params_start)
            self.other = {name: getattr(start_params, name) for name in self.names}
        else:
            self.names = tuple(extensions.train_env_params)
            self.other = {name: getattr(env_params, name) for name in self.names}
        self.prefix = START_PREFIX if self.grown_in else FINAL_PREFIX

    def arrays(self) -> dict[str, Any]:
        """The other end a fused member carries (`member_data`), one f32[] per annealed field."""
        return {self.prefix + name: np.float32(value) for name, value in self.other.items()}

    def __call__(self, step_params: Any, update: jax.Array, member: dict | None = None) -> Any:
        """`step_params` (the training values) moved `min(update / N, 1)` of the way to the env's own,
        or the start values moved that far to them."""
        if not self.names:
            return step_params
        progress = anneal_progress(update, self.updates)
        moved = {}
        for name in self.names:
            trained = jnp.asarray(getattr(step_params, name))
            other = self.other[name] if member is None else member[self.prefix + name]
            other = jnp.asarray(other, jnp.float32)
            start, end = (other, trained) if self.grown_in else (trained, other)
            value = start + progress * (end - start)
            moved[name] = (
                value.astype(trained.dtype)
                if trained.dtype.kind == "f"
                else jnp.round(value).astype(trained.dtype)
            )
        return step_params.replace(**moved)
