"""The parts of a config the trainer's pieces read, each a small frozen dataclass built once from the config
(`NetworkConfig.of(config)`): `make_train` reads the config and hands each constructor its part, so the
networks, the extensions, the value heads and the optimiser never see the other 60-odd keys, and a walk of
the config from `run_training` goes down instead of back and forth (scripts/config_walk.py counts it).
A part's fields carry their config keys' names (`NetworkConfig.hidden_sizes` is `hidden_sizes`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from baselines.config.schema import PPOConfig


def _of(cls: type, config: PPOConfig, **derived: Any) -> Any:
    """`cls` with each field the config key of its name (a key the config lacks, as MAPPO's critic options
    on an IPPO config: the field's default) and `derived` ones given."""
    values = dict(derived)
    for f in dataclasses.fields(cls):
        if f.name not in values:
            values[f.name] = getattr(config, f.name, f.default)
    return cls(**values)


@dataclass(frozen=True)
class NetworkConfig:
    """The `network:` section, what the actor, the critic and the critic's input are built from, and
    whether the critic is centralised (MAPPO's global state; IPPO: the agent's own observation)."""

    hidden_sizes: tuple[int, ...]
    cnn_channels: tuple[int, ...]
    activation: str
    init_log_std: float
    recurrent: str
    gru_size: int
    visual_encoder: str
    shared_encoder: bool
    centralised_critic: bool
    # MAPPO's critic input (an IPPO config has none of these: off)
    critic_agent_id: bool = False
    critic_local_obs: bool = False
    critic_local_visual: bool = False
    critic_heads_local: bool = False

    @classmethod
    def of(cls, config: PPOConfig) -> NetworkConfig:
        """The config's network part."""
        return _of(cls, config, centralised_critic=config.algo == "mappo")


@dataclass(frozen=True)
class ExtensionsConfig:
    """The `extensions:` section: the training reward's transforms, the teacher and the training env's
    curriculum (`baselines.core.extensions`)."""

    train_reward_weights: dict
    train_reward_weights_anneal_updates: int
    train_reward_sharing: float
    teacher_coef: float
    teacher_where: str
    teacher_anneal_updates: int
    train_env_params: dict
    train_env_params_anneal_updates: int
    train_env_params_start: dict

    @classmethod
    def of(cls, config: PPOConfig) -> ExtensionsConfig:
        """The config's extensions part."""
        return _of(cls, config)


@dataclass(frozen=True)
class ValueHeadsConfig:
    """The value heads over named reward terms and their scales' anneal (`baselines.core.value_heads`)."""

    value_heads: dict
    value_heads_final: dict
    value_heads_anneal_updates: tuple[int, ...]

    @classmethod
    def of(cls, config: PPOConfig) -> ValueHeadsConfig:
        """The config's value-heads part."""
        return _of(cls, config)


@dataclass(frozen=True)
class OptimizerConfig:
    """The optimiser (`baselines.core.kernels.make_optimizer`): Adam at `lr` after clipping the gradient
    norm, the rate annealed linearly to 0 over `schedule_steps` minibatch steps when `anneal_lr`."""

    lr: float
    max_grad_norm: float
    anneal_lr: bool
    schedule_steps: int  # num_updates x update_epochs x num_minibatches

    @classmethod
    def of(cls, config: PPOConfig) -> OptimizerConfig:
        """The config's optimiser part."""
        steps = config.num_updates * config.update_epochs * config.num_minibatches
        return _of(cls, config, schedule_steps=steps)


@dataclass(frozen=True)
class PPOScalars:
    """The PPO numbers a fused member may carry as its own (`baselines.core.member`): the loss's
    coefficients, the discount and GAE's lambda, the optimiser's rate and gradient clip."""

    lr: float
    max_grad_norm: float
    gamma: float
    gae_lambda: float
    clip_eps: float
    clip_value_eps: float
    vf_coef: float
    ent_coef: float
    ent_coef_continuous: float | None
    ent_coef_discrete: float | None

    @classmethod
    def of(cls, config: PPOConfig) -> PPOScalars:
        """The config's PPO scalars."""
        return _of(cls, config)
