"""The two hooks through which training-only recipes reach the PPO core (`baselines.core.ppo`), which calls
them without knowing what they are.

- A `TrainingRewardTransform` maps `(info, reward, active, update) -> reward` after every env step: the
  reward GAE learns from (episode returns and evaluations keep the env's).
- An `AuxiliaryLoss` records extra per-step fields in the rollout's transitions (`Transition.extras`),
  reads what it needs from the policy's distribution on every replayed step, and adds a term to the
  PPO loss with its own metrics (also the metrics.csv columns it names).
"""

from __future__ import annotations

from typing import Any, Protocol

import jax

from baselines.core.networks import HybridDistribution


class TrainingRewardTransform(Protocol):
    """`f32[N, A]` training reward of one env step from the step's `info`, the reward so far, the
    agents' `active` mask bool[N, A], the update number i32[] and a fused member's data (None: the
    config's values; `arrays()` names what a member carries)."""

    def __call__(
        self, info: dict, reward: jax.Array, active: jax.Array, update: jax.Array, member: dict | None = None
    ) -> jax.Array: ...


class AuxiliaryLoss(Protocol):
    """A training-time loss term beside PPO's (e.g. `baselines.core.extensions.teacher.Teacher`)."""

    #: the metrics `loss` adds, in the order of their metrics.csv columns
    metric_names: tuple[str, ...]

    def record(self, obs: dict, info: dict, env_params: Any) -> dict:
        """Fields `[N, A, ...]` stored in the transition of the step that acted on `obs` (keys unique
        across extensions)."""
        ...

    def coefficient(self, update: jax.Array) -> jax.Array:
        """The term's weight at this update (fixed through its epochs)."""
        ...

    def readout(self, dist: HybridDistribution, extras: dict) -> jax.Array:
        """What the loss needs from the policy on one (replayed) step, e.g. a log-probability."""
        ...

    def loss(self, coefficient: jax.Array, readout: jax.Array, traj: Any) -> tuple[jax.Array, dict]:
        """`(term added to the loss, metrics)` over a minibatch of transitions `traj`."""
        ...
