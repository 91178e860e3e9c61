"""A member of a fused population (`baselines.run.fused`): the data keys it carries as arrays instead of the
config's constants, so one compiled program trains members that differ in them. `make_train` reads every
data key through `value`; with no member (a plain run) it reads the config, and the program is today's.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import optax

from baselines.config import (
    ExtensionsConfig,
    OptimizerConfig,
    PPOConfig,
    PPOScalars,
    curriculum_start_params,
)
from baselines.core.extensions import EnvParamsAnneal, reward_arrays
from baselines.core.kernels import make_optimizer

#: the PPO scalars a member of a fused population carries as data (`member_data`; `baselines.run.fused`)
MEMBER_SCALARS = (
    "lr",
    "max_grad_norm",
    "gamma",
    "gamma_lambda",  # gamma * gae_lambda, multiplied on the host as the one-config program's constant is
    "clip_eps",
    "clip_value_eps",
    "vf_coef",
    "ent_coef",
    "ent_coef_continuous",
    "ent_coef_discrete",
)
#: config keys that reach neither a run's init nor its held-out evaluation, only its updates (the PPO
#: scalars above, as config keys) and which rows' keys it draws (`seed`): configs differing only in these
#: initialise and evaluate with the same programs, which a fused sweep's members share
#: (`baselines.core.program_cache.ProgramKeys.init_and_eval`)
UPDATE_ONLY_KEYS = (frozenset(MEMBER_SCALARS) - {"gamma_lambda"}) | {"gae_lambda", "seed"}
#: data keys a fused member carries as its own values (`member_data`), plus the ones read only by its
#: own init (`seed`) or its own evaluation program (`eval_seed`)
PPO_MEMBER_KEYS = UPDATE_ONLY_KEYS | {"eval_seed"}
#: env data keys: per member too (members whose pregenerated pools differ draw from their own, joined)
ENV_MEMBER_KEYS = frozenset({"task", "level", "env_params", "train_env_params"})
#: training worlds: members draw from their own share of one pool of all their worlds (`training_env`)
WORLD_MEMBER_KEYS = frozenset({"train_worlds"})
#: training-reward keys a member carries as arrays (`extensions.reward_arrays`); on or off is static
REWARD_MEMBER_KEYS = frozenset(
    {"train_reward_weights", "train_reward_weights_anneal_updates", "train_reward_sharing"}
)


def member_data(
    config: PPOConfig, env_params: Any, env: Any = None, final_params: Any = None
) -> dict[str, Any]:
    """One member's data keys as arrays (f32[] scalars, its `EnvParams` and, given its `env`, its
    training-reward weights and sharing): what `update_chunk(runner, member)` reads instead of the
    config's constants, so one program trains members that differ in them. Each scalar is the f32
    rounding of the constant the one-config program folds in (`gamma_lambda` too: the product is taken
    in Python floats there), so a member computes what its config computes alone. `final_params`: the
    env's own params, where a `train_env_params_anneal_updates` curriculum ends (`EnvParamsAnneal`; a
    grown-in one carries its `train_env_params_start` values instead)."""
    own, extensions = PPOScalars.of(config), ExtensionsConfig.of(config)
    scalars = {
        "lr": own.lr,
        "max_grad_norm": own.max_grad_norm,
        "gamma": own.gamma,
        "gamma_lambda": own.gamma * own.gae_lambda,
        "clip_eps": own.clip_eps,
        "clip_value_eps": own.clip_value_eps,
        "vf_coef": own.vf_coef,
        "ent_coef": own.ent_coef,
        "ent_coef_continuous": own.ent_coef if own.ent_coef_continuous is None else own.ent_coef_continuous,
        "ent_coef_discrete": own.ent_coef if own.ent_coef_discrete is None else own.ent_coef_discrete,
    }
    rewards = {} if env is None else reward_arrays(extensions, env, env_params)
    anneal = {}
    if final_params is not None:
        start_params = curriculum_start_params(config)
        anneal = EnvParamsAnneal(extensions, final_params, start_params).arrays()
    return {**{k: np.float32(v) for k, v in scalars.items()}, **rewards, **anneal, "env_params": env_params}


def entropy_bonus(
    scalars: PPOScalars, continuous: jax.Array, discrete: jax.Array, member: dict | None = None
) -> jax.Array | None:
    """The per-branch entropy bonus when `ent_coef_continuous` or `ent_coef_discrete` is set (an unset
    one is `ent_coef`); `None`: `ppo_loss` uses `ent_coef` on the total entropy. A fused member's
    coefficients come from `member` (`member_data`, unset ones already resolved)."""
    if scalars.ent_coef_continuous is None and scalars.ent_coef_discrete is None:
        return None
    if member is not None:
        return member["ent_coef_continuous"] * continuous + member["ent_coef_discrete"] * discrete
    coef_continuous = scalars.ent_coef if scalars.ent_coef_continuous is None else scalars.ent_coef_continuous
    coef_discrete = scalars.ent_coef if scalars.ent_coef_discrete is None else scalars.ent_coef_discrete
    return coef_continuous * continuous + coef_discrete * discrete


def value(scalars: PPOScalars, env_params: Any, member: dict | None, name: str) -> Any:
    """A data key's value: the fused member's array, else the config's constant from its `scalars`
    (`env_params`: the given ones; `gamma_lambda`: None, as `gae` then multiplies the constants itself)."""
    if member is not None:
        return member[name]
    if name == "env_params":
        return env_params
    return None if name == "gamma_lambda" else getattr(scalars, name)


def optimizer_for(
    options: OptimizerConfig, optimizer: optax.GradientTransformation, member: dict | None
) -> Any:
    """The optimiser a member updates with: the same transformations (and state structure) on its lr and
    gradient clip; the config's `optimizer` for a plain run."""
    if member is None:
        return optimizer
    return make_optimizer(options, lr=member["lr"], max_grad_norm=member["max_grad_norm"])
