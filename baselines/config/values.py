"""Reading config values: YAML without base-60 numbers, `key=value` overrides, and the coercion of a
value to a config field's declared type. `baselines.config` builds configs with these."""

from __future__ import annotations

import re
import reprlib
import types
import typing
from typing import Any

import yaml

from hivex_jax.core.errors import UserError
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS


class ConfigError(UserError):
    """A config that cannot run (unknown key, wrong type, impossible combination, unreadable file)."""


#: the largest config file or `key=value` value read: the shipped configs are under 10 KB, and PyYAML's
#: pure-Python parser takes ~1 s per 100 KB of a long list
MAX_YAML_BYTES = 64 << 10


class _YAMLLoader(yaml.SafeLoader):
    """PyYAML's safe loader without YAML 1.1's base-60 numbers (`train_worlds: 5:30` is the text "5:30",
    a world range, not the integer 330) and without aliases: `*name` repeats a node without its text,
    so a few hundred bytes of nested aliases (a "billion laughs") stand for billions of values that
    every later walk of the value (a check, an error message) would visit. Configs need none."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        """A node of the document; an alias is a one-line `ConfigError` naming it and its line."""
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ConfigError(
                f"YAML aliases are not accepted in a config (*{event.anchor} at line "
                f"{event.start_mark.line + 1}): write the value out"
            )
        return super().compose_node(parent, index)


_YAMLLoader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for _first in "+-0123456789":  # checked before the int/float resolvers that start with these characters
    _YAMLLoader.yaml_implicit_resolvers.setdefault(_first, []).insert(
        0, ("tag:yaml.org,2002:str", re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$"))
    )


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` without base-60 numbers and aliases (see `_YAMLLoader`), of at most
    `MAX_YAML_BYTES`; those are a one-line `ConfigError`."""
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(f"{len(text):,} characters of YAML; a config holds at most {MAX_YAML_BYTES:,}")
    return yaml.load(text, Loader=_YAMLLoader)  # noqa: S506 - a SafeLoader subclass


#: a value in an error message: at most a few entries per level and 60 characters per text, so a large
#: value gives a short line (and a short computation)
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 60
_SHORT_REPR.maxlevel = 3


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
    except ConfigError as exc:  # a value given as YAML text with an alias
        raise ConfigError(f"{name}: {exc}") from exc
    except (TypeError, ValueError, OverflowError, yaml.YAMLError) as exc:  # int(inf): OverflowError
        shown = _SHORT_REPR.repr(value)
        raise ConfigError(f"{name}: cannot read {shown} as {getattr(hint, '__name__', hint)}") from exc
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
        except ConfigError as exc:  # an alias, or past MAX_YAML_BYTES
            raise ConfigError(f"override {key}: {exc}") from exc
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


def put_value(flat: dict[str, Any], key: str, value: Any) -> None:
    """`flat[key] = value`; dict values given twice (`env_params.a`, `env_params.b`) merge."""
    if key in flat:
        if isinstance(flat[key], dict) and isinstance(value, dict) and not set(flat[key]) & set(value):
            flat[key] = {**flat[key], **value}
            return
        raise ConfigError(f"{key} is given twice (at the top level and in a section, or in two sections)")
    flat[key] = value


def route_message_options(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the message channel's top-level keys (`message_vocab=2`, `MESSAGE_OPTIONS`) moved
    into `env_options`, where `hivex_jax.make` reads them (docs/messages.md); both spellings: refused."""
    values = dict(values)
    for key in MESSAGE_OPTIONS:
        if key in values:
            options = dict(values.get("env_options") or {})
            if key in options:
                raise ConfigError(f"give {key} or env_options.{key}, not both")
            values["env_options"] = {**options, key: values.pop(key)}
    return values
