"""Frozen, typed trainer configs loaded from YAML files in sections that inherit, with `key=value` overrides.

A config file groups its keys in sections (`env:`, `ppo:`, `network:`, `extensions:`, `run:`; `algo` is
top-level) and may name a `base:` file (a path relative to it; a chain of at most `MAX_BASE_CHAIN`
files, no cycle) whose values it overrides key by key; a dict-valued key (`env_params`, `env_options`,
`train_reward_weights`) merges entry by entry, as a command-line `env_params.x=1` does. A flat file
(every key top-level, the format before sections) reads the same. Every file is read by
`baselines.config_values.load_yaml` (no aliases, at most `MAX_YAML_BYTES`). The config object stays
flat (`config.lr`); `baselines.config_schema` declares each key's section and kind (static / data /
run), `baselines.config_checks` checks values on construction and `baselines.config_env` what needs
the env.

A run's config.yaml is flat and starts with `format_version` (`FORMAT_VERSION`): a file from another
format is refused with a message instead of failing later. Files without it (written before the field
existed, or hand-written) are read as the current format, which they were.
"""

from __future__ import annotations

import difflib
import typing
from pathlib import Path
from typing import Any

import yaml

from baselines.config_checks import (
    LAYER_BOUNDS,
    RECURRENT_CELLS,
    REWARD_SCALINGS,
    SEED_LIMIT,
    SIZE_BOUNDS,
    TEACHER_WHERE,
)
from baselines.config_env import (
    POOL_MAX_BYTES,
    check_env_fit,
    check_world_pool,
    fit_saved_config,
    validate_env,
)
from baselines.config_schema import (
    ALGORITHMS,
    FORMAT_VERSION,
    SECTIONS,
    IPPOConfig,
    MAPPOConfig,
    PPOConfig,
    declared_fields,
    key_kind,
    key_section,
    keys_of_kind,
    program_signature,
)
from baselines.config_values import MAX_YAML_BYTES, ConfigError, coerce_value, load_yaml, parse_overrides
from hivex_jax.core.errors import one_line
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

__all__ = [
    "ALGORITHMS",
    "DEFAULT_CONFIG",
    "FORMAT_VERSION",
    "LAYER_BOUNDS",
    "MAX_BASE_CHAIN",
    "MAX_YAML_BYTES",
    "POOL_MAX_BYTES",
    "RECURRENT_CELLS",
    "REWARD_SCALINGS",
    "SECTIONS",
    "SEED_LIMIT",
    "SIZE_BOUNDS",
    "TEACHER_WHERE",
    "ConfigError",
    "IPPOConfig",
    "MAPPOConfig",
    "PPOConfig",
    "check_env_fit",
    "check_world_pool",
    "fit_saved_config",
    "flatten_sections",
    "from_dict",
    "key_kind",
    "key_section",
    "keys_of_kind",
    "load_config",
    "parse_overrides",
    "program_signature",
    "read_config_file",
    "route_message_options",
    "validate_env",
]

#: the config shipped as the default of `hivex train`
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "ippo_wind_farm_control.yaml"


# ---------------------------------------------------------------------------------------- sections
def flatten_sections(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with its sections (`ppo: {lr: ...}`) spread into flat keys (`lr: ...`); top-level keys
    stay. A known key in another section than its own, or given twice, is a `ConfigError`."""
    fields = declared_fields()
    flat: dict[str, Any] = {}
    for top, value in values.items():
        if top not in SECTIONS:
            _put(flat, top, value)
            continue
        if value is None:  # an empty section (`run:` with every key commented out)
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{top}: a section is a mapping of key: value; got {value!r}")
        for key, entry in value.items():
            key = str(key)
            name, _, sub = key.partition(".")  # `env.env_params.x=1` on the command line
            if name in fields or name in MESSAGE_OPTIONS:
                home = key_section(name)
                if home != top:
                    where = f"the {home} section" if home else "the top level"
                    raise ConfigError(f"{name} belongs in {where}, not in {top}")
            _put(flat, name, {sub: entry} if sub else entry)
    return flat


def _put(flat: dict[str, Any], key: str, value: Any) -> None:
    """`flat[key] = value`; dict values given twice (`env_params.a`, `env_params.b`) merge."""
    if key in flat:
        if isinstance(flat[key], dict) and isinstance(value, dict) and not set(flat[key]) & set(value):
            flat[key] = {**flat[key], **value}
            return
        raise ConfigError(f"{key} is given twice (at the top level and in a section, or in two sections)")
    flat[key] = value


def merge_values(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`base` overridden by `top` (both flat): key by key, dict values entry by entry."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


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


def _layer(values: dict[str, Any]) -> dict[str, Any]:
    """One file's (or the command line's) values, flat, message options routed into env_options."""
    return route_message_options(flatten_sections(values))


# ---------------------------------------------------------------------------------------- building
def from_dict(values: dict[str, Any]) -> PPOConfig:
    """Build the config class named by `values["algo"]` (default ippo) from flat or sectioned values;
    unknown keys are errors."""
    values = dict(values)
    version = values.pop("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ConfigError(
            f"format_version {version!r}: written by another version of hivex_jax; this one reads "
            f"format_version {FORMAT_VERSION} (use the hivex_jax version that wrote it)"
        )
    if "base" in values:
        raise ConfigError("base: names the file a config file inherits from; only a config file has one")
    values = _layer(values)
    algo = str(values.get("algo", "ippo")).lower()
    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}; got {algo!r}")
    cls = ALGORITHMS[algo]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(values) - set(hints))
    if unknown:
        known = sorted(set(hints) - {"algo"})
        said = []
        for u in unknown:
            close = difflib.get_close_matches(u, known, n=2)
            said.append(f"{u!r}" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        raise ConfigError(f"unknown config key(s) for {algo}: {', '.join(said)}. Known: {sorted(hints)}")
    kwargs = {k: coerce_value(k, v, hints[k]) for k, v in values.items()}
    kwargs["algo"] = algo
    return cls(**kwargs)


# ----------------------------------------------------------------------------------------- reading
def _read_mapping(path: Path) -> dict[str, Any]:
    """The YAML mapping of a config file, or a one-line `ConfigError`."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
        if len(data) > MAX_YAML_BYTES:
            raise ConfigError(f"config file {path} is over {MAX_YAML_BYTES:,} bytes; a config is a few KB")
        values = load_yaml(data.decode("utf-8")) or {}
    except ConfigError as exc:  # an alias (`_YAMLLoader`)
        message = one_line(exc)
        raise ConfigError(message if str(path) in message else f"config file {path}: {message}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {one_line(exc)}") from exc
    except (ValueError, RecursionError) as exc:  # an over-long integer, nesting past Python's stack
        raise ConfigError(f"config file {path} is not valid YAML ({type(exc).__name__})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"config file {path} is not valid YAML ({problem}{where})") from exc
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: a config is a YAML mapping of key: value")
    return values


def _check_file(path: Path) -> None:
    """A one-line `ConfigError` unless `path` is a file (with a hint for a shipped config named from
    outside the repository)."""
    if path.is_file():
        return
    shipped = DEFAULT_CONFIG.parent.parent / path  # `configs/x.yaml` typed outside the repository
    hint = f"; the shipped one is {shipped}" if not path.is_absolute() and shipped.is_file() else ""
    raise ConfigError(f"config file {path} " + ("is a folder" if path.exists() else "does not exist") + hint)


#: the most files a chain of `base:` files may hold (the shipped configs use two)
MAX_BASE_CHAIN = 16


def read_config_file(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The flat values of a config file with its `base:` files applied under it (message options routed
    into env_options); a chain of more than `MAX_BASE_CHAIN` files, or a cycle, is a `ConfigError`."""
    path = Path(path)
    if len(_chain) >= MAX_BASE_CHAIN:
        raise ConfigError(
            f"{_chain[0]}: its chain of base: files is longer than {MAX_BASE_CHAIN} files "
            f"(stopped at {path}); merge some of them"
        )
    _check_file(path)
    values = _read_mapping(path)
    base = values.pop("base", None)
    layer = _layer(values)
    if base is None:
        return layer
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{path}: base must be the path of another config file; got {base!r}")
    base_path = path.parent / base
    chain = (*_chain, path.resolve())
    if base_path.resolve() in chain:
        names = " -> ".join(p.name for p in (*chain, base_path.resolve()))
        raise ConfigError(f"{path}: its bases form a cycle ({names})")
    if not base_path.is_file():
        raise ConfigError(f"{path}: base {base} does not exist (looked for {base_path})")
    return merge_values(read_config_file(base_path, chain), layer)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PPOConfig:
    """Read a YAML config (default: IPPO on Wind Farm Control) and apply `key=value` overrides (flat
    `lr=3e-4` or sectioned `ppo.lr=3e-4`)."""
    changes = _layer(parse_overrides(list(overrides or [])))
    if path is None and not DEFAULT_CONFIG.exists():  # installed without the configs/ folder
        return from_dict(changes)
    values = read_config_file(path if path is not None else DEFAULT_CONFIG)
    # Command-line values replace the file's, dict fields entry by entry (`message_loss=1` on a config
    # whose env_options hold the channel's other options).
    return from_dict(merge_values(values, changes))
