"""Reading config values: YAML without base-60 numbers, `key=value` overrides, and the coercion of a
value to a config field's declared type. `baselines.config` builds configs with these."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

import yaml

from hivex_jax.core.errors import UserError


class ConfigError(UserError):
    """A config that cannot run (unknown key, wrong type, impossible combination, unreadable file)."""


class _YAMLLoader(yaml.SafeLoader):
    """PyYAML's safe loader without YAML 1.1's base-60 numbers: `train_worlds: 5:30` is the text "5:30"
    (a world range), not the integer 330."""


_YAMLLoader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for _first in "+-0123456789":  # checked before the int/float resolvers that start with these characters
    _YAMLLoader.yaml_implicit_resolvers.setdefault(_first, []).insert(
        0, ("tag:yaml.org,2002:str", re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$"))
    )


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` without base-60 numbers (see `_YAMLLoader`)."""
    return yaml.load(text, Loader=_YAMLLoader)  # noqa: S506 - a SafeLoader subclass


def coerce_value(name: str, value: Any, annotation: Any) -> Any:
    """Convert a YAML / command-line value to the field's declared type, or raise `ConfigError`."""
    hint = annotation
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        hint = args[0]
    try:
        if hint is bool:
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes", "on"):
                    return True
                if value.lower() in ("false", "0", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if hint is int:
            return _whole_number(value)
        if hint is float:
            return float(value)
        if hint is str:
            if value is None:  # `algo=`: an empty value is not the text "None"
                raise ValueError(value)
            return str(value)
        if hint is tuple:
            if isinstance(value, str):
                value = load_yaml(value)
            if isinstance(value, int):
                value = [value]
            if isinstance(value, (str, bytes, dict)):
                raise ValueError(value)
            return tuple(_whole_number(v) for v in value)
        if hint is dict:
            if isinstance(value, str):
                value = load_yaml(value)
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise ValueError(value)
            return dict(value)
    except (TypeError, ValueError, OverflowError, yaml.YAMLError) as exc:  # int(inf): OverflowError
        raise ConfigError(f"{name}: cannot read {value!r} as {getattr(hint, '__name__', hint)}") from exc
    return value


def _whole_number(value: Any) -> int:
    """`value` as an int: an int, a float or text of a whole number (`1e6`); else `ValueError`
    (`OverflowError` for an infinite float)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, str):
        value = float(value) if any(c in value for c in ".eEnN") else int(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return int(value)


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """`["lr=1e-3", "env_params.wind_noise_degrees=10"]` -> dict (dotted keys fill dict fields)."""
    out: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"override {item!r} must look like key=value")
        try:
            value = load_yaml(raw) if raw.strip() else None
        except (yaml.YAMLError, ValueError, RecursionError) as exc:  # a 5,000-digit int; [[[[... nesting
            shown = item if len(item) <= 60 else item[:60] + "..."
            raise ConfigError(f"override {shown!r}: cannot read the value (YAML syntax or size)") from exc
        if "." in key:
            top, sub = key.split(".", 1)
            out.setdefault(top, {})
            if not isinstance(out[top], dict):
                raise ConfigError(f"override {item!r}: {top} is not a dict field")
            out[top][sub] = value
        else:
            out[key] = value
    return out
