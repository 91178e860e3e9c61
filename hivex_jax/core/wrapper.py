"""Wrapper base: forwards everything to the wrapped environment; wrapped state keeps the inner one."""

from __future__ import annotations

from typing import Any

import jax
from flax import struct


@struct.dataclass
class WrappedState:
    """Base of every wrapper state: `env_state` is the wrapped environment's state."""

    env_state: Any

    # Trainers and adapters read these through any stack of wrappers.
    @property
    def alive(self) -> jax.Array:
        return self.env_state.alive

    @property
    def step(self) -> jax.Array:
        return self.env_state.step


class Wrapper:
    """Forwards attribute access, `render`, `global_state` and spaces to `self.env`."""

    def __init__(self, env: Any):
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    def inner_state(self, state: Any) -> Any:
        """The innermost environment state."""
        while isinstance(state, WrappedState):
            state = state.env_state
        return state

    def render(self, state: Any, params: Any) -> jax.Array:
        return self.unwrapped.render(self.inner_state(state), params)

    def global_state(self, state: Any, params: Any) -> jax.Array:
        return self.unwrapped.global_state(self.inner_state(state), params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"
