"""Jittable spaces: Discrete, MultiDiscrete, Box, Dict and the hybrid action space.

Every space has `shape`, `dtype`, a jittable `sample(key)` and a jittable `contains(x)` that returns a
boolean scalar array (so it can run under `jit`/`vmap`). Shapes include the leading agent axis when the
space describes a whole multi-agent quantity (e.g. `Box(shape=(A, D))`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class Space:
    """Base class of all spaces."""

    shape: tuple[int, ...]
    dtype: Any

    def sample(self, key: jax.Array) -> Any:
        raise NotImplementedError

    def contains(self, x: Any) -> jax.Array:
        raise NotImplementedError


@dataclass(frozen=True)
class Discrete(Space):
    """Integers in [0, n) with the given shape (scalar by default)."""

    n: int
    shape: tuple[int, ...] = ()
    dtype: Any = jnp.int32

    def sample(self, key: jax.Array) -> jax.Array:
        """Uniform integers, shape `self.shape`."""
        return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        ok_type = jnp.issubdtype(x.dtype, jnp.integer)
        if x.shape != self.shape or not ok_type:
            return jnp.asarray(False)
        return jnp.all((x >= 0) & (x < self.n))


@dataclass(frozen=True)
class MultiDiscrete(Space):
    """Integers with per-branch sizes `nvec`; the last axis of `shape` indexes branches."""

    nvec: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: Any = jnp.int32

    def __post_init__(self):
        if self.shape and self.shape[-1] != len(self.nvec):
            raise ValueError(f"MultiDiscrete: last shape axis {self.shape} must equal len(nvec)")

    def sample(self, key: jax.Array) -> jax.Array:
        """Uniform integers per branch, shape `self.shape`."""
        if len(self.nvec) == 0:
            return jnp.zeros(self.shape, self.dtype)
        u = jax.random.uniform(key, self.shape)
        n = jnp.asarray(self.nvec, jnp.float32)
        return jnp.minimum(jnp.floor(u * n), n - 1).astype(self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        if len(self.nvec) == 0:
            return jnp.asarray(True)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec)))


@dataclass(frozen=True)
class Box(Space):
    """Real (or integer) values in [low, high] with the given shape."""

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: Any = jnp.float32

    def sample(self, key: jax.Array) -> jax.Array:
        """Uniform in [low, high] (finite bounds) or standard normal (infinite), shape `self.shape`."""
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, int(self.low), int(self.high) + 1, dtype=self.dtype)
        if np.isfinite(self.low) and np.isfinite(self.high):
            return jax.random.uniform(key, self.shape, self.dtype, minval=self.low, maxval=self.high)
        return jax.random.normal(key, self.shape, self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape or x.dtype != jnp.dtype(self.dtype):
            return jnp.asarray(False)
        if x.size == 0:
            return jnp.asarray(True)
        return jnp.all((x >= self.low) & (x <= self.high))


@dataclass(frozen=True)
class Dict(Space):
    """A mapping of named sub-spaces (e.g. `vector` and `visual` observations)."""

    spaces: Mapping[str, Space]

    @property
    def shape(self) -> dict[str, tuple[int, ...]]:  # type: ignore[override]
        return {k: s.shape for k, s in self.spaces.items()}

    @property
    def dtype(self) -> dict[str, Any]:  # type: ignore[override]
        return {k: s.dtype for k, s in self.spaces.items()}

    def __getitem__(self, name: str) -> Space:
        return self.spaces[name]

    def keys(self):
        return self.spaces.keys()

    def sample(self, key: jax.Array) -> dict[str, Any]:
        """A dict with one sample per sub-space."""
        keys = jax.random.split(key, max(len(self.spaces), 1))
        return {k: s.sample(kk) for (k, s), kk in zip(self.spaces.items(), keys, strict=False)}

    def contains(self, x: Any) -> jax.Array:
        if not isinstance(x, Mapping) or set(x.keys()) != set(self.spaces.keys()):
            return jnp.asarray(False)
        ok = jnp.asarray(True)
        for k, s in self.spaces.items():
            ok = ok & s.contains(x[k])
        return ok


class HybridAction(Dict):
    """HIVEX's hybrid action: `{continuous: f32[A, C] in [-1, 1], discrete: i32[A, B]}`.

    Either part may have width 0 (C = 0 or B = 0); both keys are always present.
    """

    # set in __init__ through object.__setattr__ (the dataclass is frozen); declared for type checkers
    num_agents: int
    continuous_dims: int
    discrete_branches: tuple[int, ...]

    def __init__(self, num_agents: int, continuous_dims: int, discrete_branches: tuple[int, ...]):
        spaces = {
            "continuous": Box(-1.0, 1.0, (num_agents, continuous_dims), jnp.float32),
            "discrete": MultiDiscrete(
                tuple(discrete_branches), (num_agents, len(discrete_branches)), jnp.int32
            ),
        }
        object.__setattr__(self, "spaces", spaces)
        object.__setattr__(self, "num_agents", num_agents)
        object.__setattr__(self, "continuous_dims", continuous_dims)
        object.__setattr__(self, "discrete_branches", tuple(discrete_branches))

    def __repr__(self) -> str:
        return (
            f"HybridAction(num_agents={self.num_agents}, continuous_dims={self.continuous_dims}, "
            f"discrete_branches={self.discrete_branches})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HybridAction) and (
            self.num_agents,
            self.continuous_dims,
            self.discrete_branches,
        ) == (other.num_agents, other.continuous_dims, other.discrete_branches)

    def __hash__(self) -> int:
        return hash((self.num_agents, self.continuous_dims, self.discrete_branches))

    def noop(self) -> dict[str, jax.Array]:
        """The all-zero action (no-op in every HIVEX branch)."""
        return {
            "continuous": jnp.zeros((self.num_agents, self.continuous_dims), jnp.float32),
            "discrete": jnp.zeros((self.num_agents, len(self.discrete_branches)), jnp.int32),
        }
