"""The checks of a trainer config that need its env (built once, nothing compiled): the env accepts the
config's id, task, level and options; the network and extension options find the observation parts,
reward terms and scripted controller they use; the pregenerated world pool fits in memory."""

from __future__ import annotations

import difflib
from typing import Any

import hivex_jax
from baselines.config.checks import HIVEX_SIMPLE_MIN_SIDE
from baselines.config.schema import PPOConfig
from baselines.config.values import ConfigError
from hivex_jax.core.errors import one_line, world_seeds


def make_env(config: PPOConfig) -> tuple[Any, Any]:
    """`(env, params)` for the config's env id, task, level, agent count and overrides."""
    overrides: dict[str, Any] = dict(config.env_options)
    if config.num_agents is not None:
        overrides["num_agents"] = config.num_agents
    overrides.update(config.env_params)
    overrides["task"] = config.task
    env, params = hivex_jax.make(config.env_id, **overrides)
    if config.level is not None:
        params = env.variant_params(params, level=config.level)
    return env, params


def training_params(config: PPOConfig, env_params: Any) -> Any:
    """The `EnvParams` training rollouts play: `env_params` with `train_env_params` on top (made and
    bounds-checked by `hivex_jax.make` as `env_params` are); evaluation keeps `env_params`."""
    if not config.train_env_params:
        return env_params
    _, overridden = make_env(config.replace(env_params={**config.env_params, **config.train_env_params}))
    return env_params.replace(**{name: getattr(overridden, name) for name in config.train_env_params})


def curriculum_start_params(config: PPOConfig) -> Any:
    """The `EnvParams` a grown-in training-env curriculum starts from: `train_env_params_start` on top of
    `env_params` (made and bounds-checked by `hivex_jax.make` as `train_env_params` are); None without
    one (`baselines.core.extensions.EnvParamsAnneal`)."""
    start = config.train_env_params_start
    if config.train_env_params_anneal_updates <= 0 or not start:
        return None
    return make_env(config.replace(env_params={**config.env_params, **start}))[1]


def check_env_fit(config: PPOConfig, env: Any, env_params: Any) -> None:
    """Raise a one-line `ConfigError` if the config's network or normalisation options need an
    observation part the env does not have (compiles nothing)."""
    spaces = env.observation_space(env_params).spaces
    vector = spaces.get("vector")
    has_vector = vector is not None and vector.shape[-1] > 0
    parts = ", ".join(f"{k} {tuple(v.shape)}" for k, v in spaces.items())
    check_visual_encoder(config, spaces.get("visual"), parts)
    if config.cnn_channels and "visual" not in spaces:
        raise ConfigError(
            f"cnn_channels={list(config.cnn_channels)} builds convolutions over obs['visual'], but "
            f"{config.env_id} observes only {parts}: set cnn_channels=[]"
        )
    if config.obs_normalization and not has_vector:
        raise ConfigError(
            f"obs_normalization normalises obs['vector'], but {config.env_id} observes only {parts}: "
            "set obs_normalization=false"
        )
    names = list(getattr(env, "reward_term_names", ()))
    for key in ("train_reward_weights", "value_heads"):
        for term in getattr(config, key):
            if term not in names:
                close = difflib.get_close_matches(str(term), names, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ConfigError(
                    f"{key}: {config.env_id} has no reward term {term!r}{hint}; its terms: {names}"
                )
    if config.train_reward_weights and not hasattr(env_params, "task_weights"):
        raise ConfigError(
            f"train_reward_weights needs the env's task weights (params.task_weights); "
            f"{config.env_id} has none"
        )
    if config.teacher_coef > 0:
        from hivex_jax.eval.rollout import find_scripted_policy

        if find_scripted_policy(env) is None:
            raise ConfigError(
                f"teacher_coef > 0 imitates the env's scripted controller; {config.env_id} has none"
            )
        if config.teacher_where == "safety" and not callable(getattr(env, "scripted_safety_mask", None)):
            raise ConfigError(
                f"teacher_where=safety needs the env's scripted_safety_mask; {config.env_id} has none: "
                "use teacher_where=all"
            )
    if config.algo == "mappo" and getattr(config, "critic_local_obs", False) and not has_vector:
        raise ConfigError(
            f"critic_local_obs appends obs['vector'] to MAPPO's critic input, but {config.env_id} "
            f"observes only {parts}: set critic_local_obs=false"
        )
    if config.algo == "mappo" and getattr(config, "critic_heads_local", False) and not config.value_heads:
        raise ConfigError(
            "critic_heads_local puts MAPPO's value heads on the local obs, but value_heads is empty"
        )
    if config.algo == "mappo" and getattr(config, "critic_local_visual", False) and "visual" not in spaces:
        raise ConfigError(
            f"critic_local_visual gives MAPPO's critic obs['visual'], but {config.env_id} observes only "
            f"{parts}: set critic_local_visual=false"
        )


def check_visual_encoder(config: PPOConfig, visual: Any, parts: str) -> None:
    """Raise a one-line `ConfigError` if `visual_encoder=hivex_simple` cannot read the env's `visual`
    space (absent, or under ML-Agents' 20 x 20 minimum) or `cnn_channels` is not its two layers."""
    if config.visual_encoder != "hivex_simple":
        return
    if visual is None:
        raise ConfigError(
            f"visual_encoder=hivex_simple convolves obs['visual'], but {config.env_id} observes only "
            f"{parts}: leave visual_encoder at strided3"
        )
    height, width = visual.shape[-3:-1]
    if min(height, width) < HIVEX_SIMPLE_MIN_SIDE:
        raise ConfigError(
            f"visual_encoder=hivex_simple (8x8/4 then 4x4/2) needs images of at least "
            f"{HIVEX_SIMPLE_MIN_SIDE} x {HIVEX_SIMPLE_MIN_SIDE}; {config.env_id}'s are {height} x {width}: "
            "use visual_encoder=strided3"
        )
    if len(config.cnn_channels) != 2:
        raise ConfigError(
            "visual_encoder=hivex_simple has two convolutions (8x8/4, 4x4/2): cnn_channels needs two "
            f"entries (e.g. [16, 32]); got {list(config.cnn_channels)}"
        )


def validate_env(config: PPOConfig) -> None:
    """Raise `ConfigError` unless `hivex_jax.make` accepts the config's env id, task, level and options,
    and the env has the observation parts the config's options need (builds the env once, compiles
    nothing)."""
    try:
        env, env_params = make_env(config)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int past int64
        message = one_line(exc)
        if config.env_id not in message:  # e.g. a value jnp cannot convert: say which options it was
            given = {"env_params": config.env_params, "env_options": config.env_options}
            message = (
                f"{config.env_id} with {', '.join(f'{k}={v}' for k, v in given.items() if v)}: {message}"
            )
        raise ConfigError(message) from exc
    check_env_fit(config, env, env_params)
    check_world_pool(config, env, env_params)
    check_train_env_params(config)


def check_train_env_params(config: PPOConfig) -> None:
    """Raise a one-line `ConfigError` naming `train_env_params` (or `train_env_params_start`) if
    `hivex_jax.make` refuses its fields (unknown, or outside the env's bounds) or it sets the task (a data
    key of its own)."""
    for key in ("train_env_params", "train_env_params_start"):
        _check_env_overrides(config, key, getattr(config, key))


def _check_env_overrides(config: PPOConfig, key: str, overrides: dict) -> None:
    if not overrides:
        return
    if "task" in overrides:
        raise ConfigError(f"{key} cannot set the task: training and evaluation play `task`")
    try:
        _, params = make_env(config.replace(env_params={**config.env_params, **overrides}))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(f"{key} {dict(overrides)}: {one_line(exc)}") from exc
    static = [name for name in overrides if not hasattr(params, name)]
    if static:
        raise ConfigError(
            f"{key} takes EnvParams fields only; {static} are static options of {config.env_id} "
            "(they change the program: set them in env_options for training and evaluation)"
        )


#: the most a pregenerated training world pool may hold (`PregeneratedWorldPool`'s own limit)
POOL_MAX_BYTES = 4 << 30


def check_world_pool(config: PPOConfig, env: Any, env_params: Any) -> None:
    """Raise a one-line `ConfigError` if `pregenerate_worlds` would build a train pool over
    `POOL_MAX_BYTES` (traces one reset only for pools of over 4096 worlds; smaller ones always fit)."""
    if not config.pregenerate_worlds or config.env_options.get("world_files") is not None:
        return
    count = len(world_seeds(config.train_worlds, "train_worlds"))
    if count <= 4096:
        return
    import jax

    from hivex_jax.core.seeding import world_key

    one = jax.eval_shape(env.reset, world_key(0), env_params)
    per_world = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(one))
    if per_world * count > POOL_MAX_BYTES:
        raise ConfigError(
            f"pregenerate_worlds: a pool of {count:,} train worlds needs {per_world * count / 2**30:.1f} GiB "
            f"({per_world / 2**10:.1f} KiB each), over {POOL_MAX_BYTES / 2**30:.0f} GiB: use fewer "
            "train_worlds or pregenerate_worlds=false"
        )


def fit_saved_config(config: PPOConfig) -> PPOConfig:
    """A run folder's config as this version reads it: runs saved before `cnn_channels` on an env without
    images was refused carry the old default (16, 32) there; it built nothing (the encoder has no image
    to convolve), so dropping it gives the same network and parameters."""
    if not config.cnn_channels:
        return config
    try:
        env, env_params = make_env(config)
    except (KeyError, TypeError, ValueError, OverflowError):
        return config  # validate_env says what is wrong with it
    if "visual" in env.observation_space(env_params).spaces:
        return config
    return config.replace(cnn_channels=[])
