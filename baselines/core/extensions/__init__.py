"""Training-only recipes outside the PPO core, selected from the config's `extensions` part
(`baselines.config.ExtensionsConfig`): the reward the trainer learns
from (`training_reward`: re-weighting with its anneal, then sharing), auxiliary losses
(`auxiliary_losses`: the teacher) and the training env's curriculum (`EnvParamsAnneal`). `baselines.core.ppo`
calls the hooks (`base`) without knowing what they are; with every recipe off the program is the plain
PPO one."""

from __future__ import annotations

from typing import Any

import jax

from baselines.config import ExtensionsConfig
from baselines.core.extensions.base import AuxiliaryLoss, TrainingRewardTransform
from baselines.core.extensions.env_anneal import EnvParamsAnneal
from baselines.core.extensions.rewards import RewardReweighting, RewardSharing
from baselines.core.extensions.teacher import Teacher

__all__ = [
    "AUXILIARY_METRIC_NAMES",
    "AuxiliaryLoss",
    "EnvParamsAnneal",
    "TrainingRewardTransform",
    "auxiliary_loss_types",
    "auxiliary_losses",
    "metric_names",
    "reward_arrays",
    "training_reward",
]


def reward_transforms(
    extensions: ExtensionsConfig, env: Any, env_params: Any
) -> list[RewardReweighting | RewardSharing]:
    """The config's reward transforms (each a `TrainingRewardTransform` with its `arrays()`), in the
    order they apply."""
    transforms: list[RewardReweighting | RewardSharing] = []
    if extensions.train_reward_weights:  # the env's reward terms re-weighted (info keeps the env's)
        transforms.append(RewardReweighting(extensions, env, env_params))
    if extensions.train_reward_sharing > 0.0:  # then each agent also earns its env's mean
        transforms.append(RewardSharing(extensions.train_reward_sharing))
    return transforms


def training_reward(extensions: ExtensionsConfig, env: Any, env_params: Any) -> TrainingRewardTransform:
    """The config's transforms composed in order (none: the env's reward); a fused member's own values
    come from `member` (`reward_arrays`)."""
    transforms = reward_transforms(extensions, env, env_params)

    def transform(
        info: dict, reward: jax.Array, active: jax.Array, update: jax.Array, member: dict | None = None
    ) -> jax.Array:
        for each in transforms:
            reward = each(info, reward, active, update, member)
        return reward

    return transform


def reward_arrays(extensions: ExtensionsConfig, env: Any, env_params: Any) -> dict[str, Any]:
    """The values of the config's reward transforms a fused member carries as its own arrays."""
    transforms = reward_transforms(extensions, env, env_params)
    return {k: v for each in transforms for k, v in each.arrays().items()}


#: every metric an auxiliary loss can add (the columns a run's metrics.csv may have beyond PPO's)
AUXILIARY_METRIC_NAMES = Teacher.metric_names


def auxiliary_loss_types(extensions: ExtensionsConfig) -> tuple[type, ...]:
    """The classes of the config's auxiliary losses, in the order their terms add up."""
    return (Teacher,) if extensions.teacher_coef > 0 else ()


def auxiliary_losses(extensions: ExtensionsConfig, env: Any) -> tuple[AuxiliaryLoss, ...]:
    """The config's auxiliary losses for `env`."""
    return tuple(kind(extensions, env) for kind in auxiliary_loss_types(extensions))


def metric_names(extensions: ExtensionsConfig) -> tuple[str, ...]:
    """The metrics (and metrics.csv columns) the config's auxiliary losses add, in order."""
    return tuple(name for kind in auxiliary_loss_types(extensions) for name in kind.metric_names)
