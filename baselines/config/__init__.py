"""Trainer configs: the values (YAML, overrides, coercion), the schema (every key declared once with its
section and kind, the frozen `PPOConfig` classes and how they are built), the checks on the values alone,
the checks and helpers that need the env (`make_env`), and the loader (files in sections that inherit via
`base:`, `key=value` overrides). `from baselines.config import load_config, PPOConfig` is the public face.

Layer: the lowest of the trainer. May import `hivex_jax` and its own modules; values < checks < schema <
env < loader, and synonyms (other trainers' spellings of the keys) < schema; never `baselines.core`,
`run`, `cli` or `studies`.
"""

from baselines.config.checks import (
    LAYER_BOUNDS,
    RECURRENT_CELLS,
    REWARD_SCALINGS,
    SEED_LIMIT,
    SIZE_BOUNDS,
    TEACHER_WHERE,
)
from baselines.config.env import (
    POOL_MAX_BYTES,
    check_env_fit,
    check_world_pool,
    curriculum_start_params,
    fit_saved_config,
    make_env,
    training_params,
    validate_env,
)
from baselines.config.loader import (
    DEFAULT_CONFIG,
    MAX_BASE_CHAIN,
    RERUN_FREE_KEYS,
    load_config,
    merge_values,
    read_config_file,
    saved_config_changes,
)
from baselines.config.schema import (
    ALGORITHMS,
    FORMAT_VERSION,
    SECTIONS,
    IPPOConfig,
    MAPPOConfig,
    PPOConfig,
    flatten_sections,
    from_dict,
    key_kind,
    key_section,
    keys_of_kind,
    program_signature,
)
from baselines.config.sections import (
    ExtensionsConfig,
    NetworkConfig,
    OptimizerConfig,
    PPOScalars,
    ValueHeadsConfig,
)
from baselines.config.values import (
    MAX_YAML_BYTES,
    ConfigError,
    parse_overrides,
    route_message_options,
)

__all__ = [
    "ALGORITHMS",
    "ConfigError",
    "DEFAULT_CONFIG",
    "ExtensionsConfig",
    "FORMAT_VERSION",
    "IPPOConfig",
    "LAYER_BOUNDS",
    "MAX_BASE_CHAIN",
    "MAX_YAML_BYTES",
    "MAPPOConfig",
    "NetworkConfig",
    "OptimizerConfig",
    "POOL_MAX_BYTES",
    "PPOConfig",
    "PPOScalars",
    "RECURRENT_CELLS",
    "RERUN_FREE_KEYS",
    "REWARD_SCALINGS",
    "SECTIONS",
    "SEED_LIMIT",
    "SIZE_BOUNDS",
    "TEACHER_WHERE",
    "ValueHeadsConfig",
    "check_env_fit",
    "check_world_pool",
    "curriculum_start_params",
    "fit_saved_config",
    "flatten_sections",
    "from_dict",
    "key_kind",
    "key_section",
    "keys_of_kind",
    "load_config",
    "make_env",
    "merge_values",
    "parse_overrides",
    "program_signature",
    "read_config_file",
    "route_message_options",
    "saved_config_changes",
    "training_params",
    "validate_env",
]
