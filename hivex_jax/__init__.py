"""hivex_jax: the five HIVEX ecological multi-agent environments as pure JAX functions."""

__version__ = "0.1.0"

from hivex_jax import envs as _envs  # noqa: F401  (registers the environments)
from hivex_jax.core import (
    Environment,
    check_env,
    debug_checks,
    register,
    registered_envs,
    stack_params,
    world_key,
)
from hivex_jax.registration import make

__all__ = [
    "Environment",
    "__version__",
    "check_env",
    "debug_checks",
    "make",
    "register",
    "registered_envs",
    "stack_params",
    "world_key",
]
