"""Zero-shot transfer: a trained run evaluated on another env setting (agent count, level, task, any env
option or `EnvParams` field) with its policy unchanged.

The actor is one parameter-shared network applied to each agent's own observation, so it runs on any
agent count, level or task whose per-agent observation and action shapes equal the training env's. Where
they differ (e.g. an observation with a one-hot agent id, whose width is the agent count) the setting is
refused before anything compiles. MAPPO's critic is not needed at evaluation, so MAPPO runs transfer like
IPPO runs.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from typing import Any

from baselines.config import PPOConfig, make_env, parse_overrides, validate_env
from hivex_jax.core.errors import UserError
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

#: config fields that say which env a run plays (the rest are training settings)
ENV_FIELDS = ("env_id", "task", "level", "num_agents", "env_options", "env_params")


def env_setting(config: PPOConfig) -> dict[str, Any]:
    """The env part of a config: `{env_id, task, level, num_agents, env_options, env_params}`."""
    values = config.to_dict()
    return {k: values[k] for k in ENV_FIELDS}


def _option_names(env_id: str) -> tuple[list[str], list[str], str | None]:
    """`(static options, EnvParams fields, level field)` of `env_id` (builds its default env, compiles
    nothing); empty lists for an id the registry cannot describe (e.g. a namespaced one)."""
    import hivex_jax
    from hivex_jax.core.registry import spec

    try:
        static = list(getattr(spec(env_id).factory(), "static_options", ()))
        env, params = hivex_jax.make(env_id)
    except (KeyError, TypeError, ValueError):
        return [], [], None
    fields = [f.name for f in dataclasses.fields(params)]
    return static, fields, getattr(env, "level_field", None)


def eval_config(config: PPOConfig, overrides: Sequence[str]) -> PPOConfig:
    """`config` with the env overrides `["num_agents=12", "level=7", "pattern=3", "env_params.x=1", ...]`
    applied, checked by `hivex_jax.make` (names, bounds) and for a policy-compatible observation and
    action (`check_transferable`); a `UserError` naming the closest names otherwise. Compiles nothing."""
    changes = parse_overrides(list(overrides))
    if not changes:
        return config
    static, fields, level_field = _option_names(config.env_id)
    values = env_setting(config)
    env_options, env_params = dict(values["env_options"]), dict(values["env_params"])
    training_keys = {f.name for f in dataclasses.fields(config)} - set(ENV_FIELDS)
    for key, value in changes.items():
        if isinstance(value, dict) and key in ("env_options", "env_params"):  # env_params.x=...
            for sub, v in value.items():
                _route(sub, v, values, env_options, env_params, static, fields, level_field, f"{key}.")
            continue
        if key == "env_id":
            raise UserError(
                f"env_id={value}: a policy transfers across settings of its env ({config.env_id}), not "
                "to another env"
            )
        if key in training_keys:
            raise UserError(
                f"{key} is a training setting; an evaluation overrides only the env: task, level, "
                "num_agents, env options and EnvParams fields (see docs/generalisation.md)"
            )
        known = list(dict.fromkeys(["task", "level", "num_agents", *static, *fields, *MESSAGE_OPTIONS]))
        if fields and key not in known:
            close = difflib.get_close_matches(key, known, n=3)
            raise UserError(
                f"{key}={value}: {config.env_id} has no such option"
                + (f" (did you mean {' or '.join(close)}?)" if close else "")
                + f"; static options: {sorted(static)}; EnvParams fields: {sorted(fields)}"
            )
        _route(key, value, values, env_options, env_params, static, fields, level_field, "")
    values.update(env_options=env_options, env_params=env_params)
    evaluated = config.replace(**values)
    validate_env(evaluated)  # hivex_jax.make: unknown names with the closest ones, values out of bounds
    check_transferable(config, evaluated)
    return evaluated


def _route(
    key: str,
    value: Any,
    values: dict,
    env_options: dict,
    env_params: dict,
    static: list[str],
    fields: list[str],
    level_field: str | None,
    prefix: str,
) -> None:
    """Put one override where `baselines.config.make_env` reads it: task, level and num_agents are
    config fields (make_env sets them last, so a copy in env_params would be overwritten), the level
    field (e.g. `pattern`) is `level`, static options go to env_options, the rest to env_params."""
    if key == "task":
        values["task"] = value
    elif key == "level" or (level_field is not None and key == level_field):
        values["level"] = value
        env_params.pop(level_field, None)
    elif key == "num_agents":
        values["num_agents"] = value
    elif key in static or key in MESSAGE_OPTIONS or (prefix == "env_options." and key not in fields):
        env_options[key] = value
    else:
        env_params[key] = value


def _per_agent_shapes(env: Any, params: Any) -> dict[str, tuple[int, ...]]:
    """`{obs key: shape without the agent axis}` of the env's observation space."""
    space = env.observation_space(params)
    return {k: tuple(s.shape[1:]) for k, s in space.spaces.items()}


def check_transferable(config: PPOConfig, evaluated: PPOConfig) -> None:
    """Raise `UserError` unless the trained actor of `config` can act in the env of `evaluated`: the same
    per-agent observation shapes and the same action space (continuous dims, discrete branches)."""
    (train_env, train_params), (env, params) = make_env(config), make_env(evaluated)
    before, after = _per_agent_shapes(train_env, train_params), _per_agent_shapes(env, params)
    changed = {k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after))}
    changed = {k: v for k, v in changed.items() if v[0] != v[1]}
    setting = _differences(config, evaluated)
    if changed:
        key, (a, b) = next(iter(changed.items()))
        layout = _changed_slices(train_env, env)
        raise UserError(
            f"the policy cannot transfer to {setting}: its per-agent {key!r} observation is {a} in "
            f"training and {b} here"
            + (f" (the {', '.join(layout)} part depends on the setting)" if layout else "")
            + "; the trained network takes fixed-size input"
        )
    actions = (train_env.continuous_dims, tuple(train_env.discrete_branches))
    here = (env.continuous_dims, tuple(env.discrete_branches))
    if actions != here:
        raise UserError(
            f"the policy cannot transfer to {setting}: the action space (continuous dims, discrete "
            f"branches) is {actions} in training and {here} here"
        )


def _changed_slices(train_env: Any, env: Any) -> list[str]:
    """Names of the `observation_layout` slices whose width differs between two envs."""
    try:
        a, b = train_env.observation_layout(), env.observation_layout()
    except (AttributeError, NotImplementedError):
        return []
    width = lambda s, n: len(range(*s.indices(n)))  # noqa: E731 - open-ended slices need the obs width
    na = _per_agent_shapes(train_env, None).get("vector", (0,))[-1]
    nb = _per_agent_shapes(env, None).get("vector", (0,))[-1]
    return [k for k in a if k in b and width(a[k], na) != width(b[k], nb)]


def _differences(config: PPOConfig, evaluated: PPOConfig) -> str:
    """`"num_agents=12, level=3"`: the env settings where `evaluated` differs from `config`."""
    return ", ".join(f"{k}={b}" for k, (_, b) in changes(env_setting(config), env_setting(evaluated)).items())


def changes(train_setting: dict, eval_setting: dict) -> dict[str, tuple[Any, Any]]:
    """`{"num_agents": (3, 12), "env_params.x": (None, 1.0)}`: where two `env_setting`s differ."""
    out: dict[str, tuple[Any, Any]] = {}
    for key in ENV_FIELDS:
        a, b = train_setting.get(key), eval_setting.get(key)
        if isinstance(a, dict) or isinstance(b, dict):
            a, b = a or {}, b or {}
            out.update(
                {f"{key}.{k}": (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
            )
        elif a != b:
            out[key] = (a, b)
    return out


def setting_tag(overrides: Sequence[str]) -> str:
    """A file-name-safe tag of overrides: `["num_agents=12", "level=3"]` -> `"num_agents=12_level=3"`."""
    text = "_".join(overrides)
    return "".join(c if c.isalnum() or c in "=.-" else "_" for c in text)
