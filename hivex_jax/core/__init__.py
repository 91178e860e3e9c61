"""Core API: the Environment base, spaces, the registry and the conformance checker.

`make` is not here: it composes wrappers from layers above core (`hivex_jax.make`, hivex_jax/registration.py).
"""

from hivex_jax.core import spaces
from hivex_jax.core.bounds import debug_checks
from hivex_jax.core.check import ConformanceError, check_env
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import (
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
    "register",
    "registered_envs",
    "spaces",
    "spec",
    "stack_params",
    "world_key",
]
