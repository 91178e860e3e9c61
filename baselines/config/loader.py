"""Frozen, typed trainer configs loaded from YAML files in sections that inherit, with `key=value` overrides.

A config file groups its keys in sections (`env:`, `ppo:`, `network:`, `extensions:`, `run:`; `algo` is
top-level) and may name a `base:` file (a path relative to it; a chain of at most `MAX_BASE_CHAIN`
files, no cycle) whose values it overrides key by key; a dict-valued key (`env_params`, `env_options`,
`train_reward_weights`) merges entry by entry, as a command-line `env_params.x=1` does. A flat file
(every key top-level, the format before sections) reads the same. Every file is read by
`baselines.config.values.load_yaml` (no aliases, at most `MAX_YAML_BYTES`). The config object stays
flat (`config.lr`); `baselines.config.schema` declares each key's section and kind (static / data /
run) and builds configs from values, `baselines.config.checks` checks values on construction and
`baselines.config.env` what needs the env.

A run's config.yaml is flat and starts with `format_version` (`FORMAT_VERSION`): a file from another
format is refused with a message instead of failing later. Files without it (written before the field
existed, or hand-written) are read as the current format, which they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from baselines.config.env import (
    fit_saved_config,
)
from baselines.config.schema import (
    PPOConfig,
    flat_layer,
    from_dict,
)
from baselines.config.values import MAX_YAML_BYTES, ConfigError, load_yaml, parse_overrides
from hivex_jax.core.errors import one_line

#: the config shipped as the default of `hivex train`
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "ippo_wind_farm_control.yaml"


def merge_values(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`base` overridden by `top` (both flat): key by key, dict values entry by entry."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


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
    layer = flat_layer(values)
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
    changes = flat_layer(parse_overrides(list(overrides or [])))
    if path is None and not DEFAULT_CONFIG.exists():  # installed without the configs/ folder
        return from_dict(changes)
    values = read_config_file(path if path is not None else DEFAULT_CONFIG)
    # Command-line values replace the file's, dict fields entry by entry (`message_loss=1` on a config
    # whose env_options hold the channel's other options).
    return from_dict(merge_values(values, changes))


#: keys a run folder's saved config may differ in from a rerun's without changing its training or results:
#: outputs (the experiment tracker among them), `pregenerate_worlds` (the same episodes either way; a
#: fused program of members whose pools together are too big generates worlds at reset,
#: `baselines.run.fused_plan.plan_sweep`) and `cpu_compile_level` (the same training up to float32
#: rounding, as on another machine)
RERUN_FREE_KEYS = frozenset(
    {
        "name",
        "out_dir",
        "checkpoint_every",
        "gif_stride",
        "gif_frames",
        "pregenerate_worlds",
        "cpu_compile_level",
        "logger",
        "logger_project",
    }
)


def saved_config_changes(run_dir: str | Path, config: PPOConfig) -> list[str]:
    """`"key saved -> now"` for each key (beyond `RERUN_FREE_KEYS`) in which the config a run folder was
    trained with (its config.yaml) differs from `config`; [] when it has none. A `ConfigError` if this
    version cannot read it."""
    saved_file = Path(run_dir) / "config.yaml"
    if not saved_file.is_file():
        return []
    try:
        saved = fit_saved_config(load_config(saved_file)).to_dict()
    except Exception as exc:  # a folder from another version: say so rather than mix it in
        raise ConfigError(f"{run_dir} holds a run this version cannot read ({one_line(exc)})") from exc
    now = config.to_dict()
    return [
        f"{k} {saved.get(k)!r} -> {now[k]!r}"
        for k in now
        if k not in RERUN_FREE_KEYS and saved.get(k) != now[k]
    ]
