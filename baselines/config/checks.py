"""The checks of a trainer config on its own (no env built): sizes against their bounds, values in
range, and the combinations that cannot run. `PPOConfig.validate` runs them on construction; what needs
the env is in `baselines.config.env`."""

from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any

import numpy as np

from baselines.config.values import ConfigError
from hivex_jax.core.errors import UserError, world_seeds

#: values of `reward_scaling`
REWARD_SCALINGS = ("none", "return_std")

#: values of `recurrent`: "none" (feed-forward actor) or "gru" (a GRU over the actor's encoder output)
RECURRENT_CELLS = ("none", "gru")

#: values of `teacher_where`: imitate the scripted controller on every decision, or only where the env's
#: `scripted_safety_mask` says its safety rules take over (Ocean Plastic Collection's border and vessel rules)
TEACHER_WHERE = ("all", "safety")

#: values of `logger`: experiment tracking beside metrics.csv (`baselines.run.loggers`; the last two are
#: optional extras, whose packages `baselines.run.loggers.check_logger` asks for before a run compiles)
LOGGERS = ("none", "tensorboard", "wandb")

#: values of `activation`
ACTIVATIONS = ("tanh", "relu", "gelu", "silu")

#: values of `visual_encoder`: a 3x3/2 SAME convolution per `cnn_channels` entry, or ML-Agents' simple
#: encoder (8x8/4 then 4x4/2, VALID; `baselines.core.networks.Encoder`)
VISUAL_ENCODERS = ("strided3", "hivex_simple")
#: the smallest image side `hivex_simple` reads (ML-Agents' minimum for its simple encoder)
HIVEX_SIMPLE_MIN_SIDE = 20

#: upper bounds of the size keys (docs/training.md, "Bounds"): far above any run one machine holds, low
#: enough that a typo (`num_seeds=1e30`) is one line before anything allocates or compiles; what does fit
#: under them is then checked against the device's memory (`baselines.run.memory`)
SIZE_BOUNDS = {
    "num_seeds": 4096,
    "num_envs": 1 << 20,
    "num_steps": 1 << 16,
    "total_env_steps": 1 << 40,
    "chunk_updates": 4096,
    "update_epochs": 1024,
    "num_minibatches": 1 << 20,
    "gru_size": 1 << 14,
    "gif_stride": 1 << 20,
    "gif_frames": 10_000,
    "eval_every": 1 << 31,
    "checkpoint_every": 1 << 31,
    "teacher_anneal_updates": 1 << 31,
    "train_reward_weights_anneal_updates": 1 << 31,
    "train_env_params_anneal_updates": 1 << 31,
}

#: most `cpu_helpers` processes (each holds its own copy of the env and the programs)
MAX_CPU_HELPERS = 64

#: per-layer width and layer count of `hidden_sizes` and `cnn_channels`
LAYER_BOUNDS = {"hidden_sizes": (1 << 14, 64), "cnn_channels": (4096, 16)}

#: `seed` and `eval_seed` are in [0, SEED_LIMIT): `jax.random.PRNGKey` wraps larger ones onto smaller keys
SEED_LIMIT = 2**32

#: keys that must be >= 1
POSITIVE_KEYS = (
    "num_seeds",
    "num_envs",
    "num_steps",
    "total_env_steps",
    "chunk_updates",
    "update_epochs",
    "num_minibatches",
    "gif_stride",
)


def common_seeds(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted seeds in both `a` and `b`; a pool may name millions of seeds, so a binary search of the
    larger in the sorted smaller rather than sets or `np.intersect1d` (tens of seconds at 16M seeds)."""
    small, large = sorted((a, b), key=len)
    if small.size == 0:
        return small
    small = np.sort(small)
    found = small[np.searchsorted(small, large).clip(max=small.size - 1)] == large
    return np.unique(large[found])


def figure(value: int) -> str:
    """An integer for an error line: `1,234` or, past 16 digits, `~1e30` (a 4,000-digit value stays short)."""
    digits = len(str(abs(value)))
    return f"{value:,}" if digits <= 16 else f"{'-' if value < 0 else ''}~1e{digits - 1}"


def check_config(config: Any) -> None:
    """Raise `ConfigError` on an impossible combination; fold `world_files` into `env_options`."""
    for name in POSITIVE_KEYS:
        if getattr(config, name) < 1:
            raise ConfigError(f"{name} must be >= 1; got {getattr(config, name)}")
    check_bounds(config)
    if config.steps_per_update % config.num_minibatches:
        raise ConfigError(
            f"num_envs * num_steps = {config.num_envs} * {config.num_steps} = {config.steps_per_update} "
            f"env steps per update is not divisible into num_minibatches = {config.num_minibatches}"
        )
    _check_ppo_values(config)
    _check_extensions(config)
    if config.recurrent not in RECURRENT_CELLS:
        raise ConfigError(f"recurrent must be one of {RECURRENT_CELLS}; got {config.recurrent!r}")
    if config.gru_size < 1:
        raise ConfigError(f"gru_size must be >= 1; got {config.gru_size}")
    if config.recurrent != "none" and config.num_envs % config.num_minibatches:
        raise ConfigError(
            f"recurrent={config.recurrent} trains on whole env sequences: num_envs = {config.num_envs} must "
            f"be divisible into num_minibatches = {config.num_minibatches} (minibatches are groups of envs)"
        )
    if not config.hidden_sizes:
        raise ConfigError("hidden_sizes needs at least one layer")
    if config.activation not in ACTIVATIONS:
        raise ConfigError(f"activation must be tanh, relu, gelu or silu; got {config.activation!r}")
    _check_encoders(config)
    _check_run(config)
    _check_worlds(config)


def _check_ppo_values(config: Any) -> None:
    for name in ("gamma", "gae_lambda"):
        if not 0.0 <= getattr(config, name) <= 1.0:
            raise ConfigError(f"{name} must be in [0, 1]; got {getattr(config, name)}")
    if config.reward_scaling not in REWARD_SCALINGS:
        raise ConfigError(f"reward_scaling must be one of {REWARD_SCALINGS}; got {config.reward_scaling!r}")
    for name in ("ent_coef", "ent_coef_continuous", "ent_coef_discrete"):
        value = getattr(config, name)
        if value is not None and not value >= 0:
            raise ConfigError(f"{name} must be >= 0; got {value}")
    if not config.obs_norm_clip > 0:
        raise ConfigError(f"obs_norm_clip must be > 0; got {config.obs_norm_clip}")
    for name in ("lr", "clip_eps"):
        if not getattr(config, name) > 0:  # also refuses NaN
            raise ConfigError(f"{name} must be > 0; got {getattr(config, name)}")
    for key in ("value_heads", "value_heads_final"):
        for term, scale in getattr(config, key).items():
            try:
                positive = math.isfinite(float(scale)) and float(scale) > 0
            except (TypeError, ValueError):
                positive = False
            if not positive:
                raise ConfigError(f"{key}.{term} must be a finite scale > 0; got {scale!r}")
    _check_head_anneal(config)


def _check_head_anneal(config: Any) -> None:
    """`value_heads_final` names heads of `value_heads`; `value_heads_anneal_updates` is [start, end]."""
    if not config.value_heads_final:
        return
    for term in config.value_heads_final:
        if term not in config.value_heads:
            raise ConfigError(
                f"value_heads_final.{term}: no value head of that term; "
                f"value_heads has {list(config.value_heads)}"
            )
    window = config.value_heads_anneal_updates
    if not (
        len(window) == 2
        and all(isinstance(u, int) and not isinstance(u, bool) for u in window)
        and 0 <= window[0] < window[1]
    ):
        raise ConfigError(
            "value_heads_anneal_updates must be [start, end] updates with 0 <= start < end; "
            f"got {list(window)}"
        )


def _check_extensions(config: Any) -> None:
    for term, weight in config.train_reward_weights.items():
        try:
            finite = math.isfinite(float(weight))
        except (TypeError, ValueError):
            finite = False
        if not finite:
            raise ConfigError(f"train_reward_weights.{term} must be a finite number; got {weight!r}")
    if config.train_reward_weights_anneal_updates < 0:
        raise ConfigError(
            "train_reward_weights_anneal_updates must be >= 0 (0 = constant weights); "
            f"got {config.train_reward_weights_anneal_updates}"
        )
    if not 0.0 <= config.train_reward_sharing <= 1.0:
        raise ConfigError(f"train_reward_sharing must be in [0, 1]; got {config.train_reward_sharing}")
    if not (math.isfinite(config.teacher_coef) and config.teacher_coef >= 0):
        raise ConfigError(
            f"teacher_coef must be a finite number >= 0 (0 = no teacher); got {config.teacher_coef}"
        )
    if config.teacher_where not in TEACHER_WHERE:
        raise ConfigError(f"teacher_where must be one of {TEACHER_WHERE}; got {config.teacher_where!r}")
    if config.teacher_anneal_updates < 0:
        raise ConfigError(
            "teacher_anneal_updates must be >= 0 (0 = a constant coefficient); "
            f"got {config.teacher_anneal_updates}"
        )
    if config.train_env_params_anneal_updates < 0:
        raise ConfigError(
            "train_env_params_anneal_updates must be >= 0 (0 = constant train_env_params); "
            f"got {config.train_env_params_anneal_updates}"
        )
    if config.train_env_params_anneal_updates > 0 and not config.train_env_params:
        raise ConfigError("train_env_params_anneal_updates anneals train_env_params, but none are set")
    start = config.train_env_params_start
    if start and config.train_env_params_anneal_updates <= 0:
        raise ConfigError(
            "train_env_params_start needs train_env_params_anneal_updates > 0 (the update where "
            "train_env_params' values are reached)"
        )
    outside = sorted(set(start) - set(config.train_env_params))
    if outside:
        raise ConfigError(
            f"train_env_params_start fields {outside} are not in train_env_params (where their anneal ends)"
        )


def _check_encoders(config: Any) -> None:
    if config.visual_encoder not in VISUAL_ENCODERS:
        raise ConfigError(f"visual_encoder must be one of {VISUAL_ENCODERS}; got {config.visual_encoder!r}")
    if config.shared_encoder and config.algo != "ippo":
        raise ConfigError(
            f"shared_encoder is IPPO only: {config.algo.upper()}'s critic reads the global state, not the "
            "actor's observation, so there is no encoder to share"
        )


def _check_run(config: Any) -> None:
    name = config.name
    if name is not None and (not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0")):
        raise ConfigError(f"name {name!r} must be a folder name (no '/', not '.' or '..')")
    if name is not None and len(name.encode()) > 200:
        raise ConfigError(f"name is {len(name.encode())} bytes long; at most 200 (a folder name)")
    if config.logger not in LOGGERS:
        close = difflib.get_close_matches(str(config.logger).lower(), LOGGERS, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"logger must be one of {', '.join(LOGGERS)}; got {config.logger!r}{hint}")
    if config.cpu_compile_level is not None and config.cpu_compile_level not in (0, 1, 2, 3):
        raise ConfigError(
            f"cpu_compile_level must be 0, 1, 2, 3 (XLA's LLVM optimisation level) or null; got "
            f"{config.cpu_compile_level!r}"
        )
    if config.eval_every < 0 or config.checkpoint_every < 0 or config.gif_frames < 0:
        raise ConfigError("eval_every, checkpoint_every and gif_frames must be >= 0")
    if config.cpu_helpers is not None and not 0 <= config.cpu_helpers <= MAX_CPU_HELPERS:
        raise ConfigError(f"cpu_helpers must be null or 0..{MAX_CPU_HELPERS}, got {config.cpu_helpers}")
    if config.stop_at_test_return is not None and config.eval_every < 1:
        raise ConfigError(
            "stop_at_test_return needs eval_every >= 1: the target is checked at held-out evaluations"
        )


def _check_worlds(config: Any) -> None:
    try:
        train = world_seeds(config.train_worlds, "train_worlds")
        test = (  # "stress": the env's stress worlds over STRESS_SEEDS (docs/worlds.md)
            train[:0] if config.test_worlds == "stress" else world_seeds(config.test_worlds, "test_worlds")
        )
    except UserError as exc:
        raise ConfigError(f"bad world pool: {exc}") from exc
    overlap = common_seeds(train, test)
    if overlap.size:
        raise ConfigError(
            f"train_worlds and test_worlds overlap ({overlap.size} seeds, e.g. {overlap[0]}): "
            "held-out evaluation needs disjoint pools"
        )
    if "num_agents" in config.env_options:
        raise ConfigError("set the agent count with the num_agents field, not env_options")
    if config.world_files is not None:  # the spelled-out key is env_options.world_files
        if config.env_options.get("world_files") is not None:
            raise ConfigError("give world_files or env_options.world_files, not both")
        from hivex_jax.worlds.wrapper import expand_world_paths

        try:
            expand_world_paths(config.world_files)  # a glob that matches no file: refused here
        except UserError as exc:
            raise ConfigError(str(exc)) from exc
        object.__setattr__(config, "env_options", {**config.env_options, "world_files": config.world_files})
        object.__setattr__(config, "world_files", None)


def check_bounds(config: Any) -> None:
    """Raise `ConfigError` on a size over its `SIZE_BOUNDS` / `LAYER_BOUNDS` bound, a seed outside
    [0, 2**32) or a non-finite float (inf from `lr=1e400` as NaN)."""
    for name, bound in SIZE_BOUNDS.items():
        if getattr(config, name) > bound:
            raise ConfigError(
                f"{name} = {figure(getattr(config, name))} is over its bound {bound:,} "
                "(docs/training.md, Bounds)"
            )
    for name, (width, depth) in LAYER_BOUNDS.items():
        layers = getattr(config, name)
        if len(layers) > depth:
            raise ConfigError(f"{name} has {len(layers)} layers; at most {depth}")
        for size in layers:
            if not 1 <= size <= width:
                raise ConfigError(f"{name}: layer size {figure(size)} is outside [1, {width:,}]")
    # the optimiser counts its steps (and the lr schedule its length) in int32
    optimiser_steps = config.num_updates * config.update_epochs * config.num_minibatches
    if optimiser_steps >= 2**31:
        raise ConfigError(
            f"the run would take {figure(optimiser_steps)} optimiser steps (num_updates "
            f"{config.num_updates:,} x update_epochs {config.update_epochs} x num_minibatches "
            f"{config.num_minibatches}), over 2**31 - 1: lower total_env_steps or raise num_envs x num_steps"
        )
    for name in ("seed", "eval_seed"):
        if not 0 <= getattr(config, name) < SEED_LIMIT:
            raise ConfigError(f"{name} must be in [0, 2**32); got {figure(getattr(config, name))}")
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{f.name} must be a finite number; got {value}")
