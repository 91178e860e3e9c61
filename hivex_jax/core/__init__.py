"""Core API: the Environment base, spaces, the registry and the conformance checker."""

from hivex_jax.core import spaces
from hivex_jax.core.bounds import debug_checks
from hivex_jax.core.check import ConformanceError, check_env
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import (
    make,
    register,
    registered_envs,
    spec,
    stack_params,
    world_key,
)

__all__ = [
    "ConformanceError",
    "EnvState",
    "Environment",
    "StepOutput",
    "check_env",
    "debug_checks",
    "make",
    "register",
    "registered_envs",
    "spaces",
    "spec",
    "stack_params",
    "world_key",
]
