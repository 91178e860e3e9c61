"""Draw each episode's world from a fixed list of world seeds (a train or test pool)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.registry import world_key
from hivex_jax.wrappers.base import Wrapper


def seed_range(spec: str | Sequence[int]) -> np.ndarray:
    """World seeds from "6000:6100" (half-open range), "1,5,9" or a sequence of ints."""
    if isinstance(spec, str):
        if ":" in spec:
            lo, hi = (int(s) for s in spec.split(":"))
            if hi <= lo:
                raise ValueError(f"empty world range {spec!r}")
            return np.arange(lo, hi, dtype=np.int64)
        return np.asarray([int(s) for s in spec.split(",") if s.strip()], np.int64)
    return np.asarray(list(spec), np.int64)


class WorldPool(Wrapper):
    """`reset(key)` picks a world seed uniformly from `seeds` and builds `world_key(seed)`'s world.

    The pool is the train/test split of a generalisation study: pools for training and evaluation
    should be disjoint (see `hivex_jax.eval`). `info`/state are unchanged.
    """

    def __init__(self, env: Any, seeds: Sequence[int] | str):
        super().__init__(env)
        seeds = seed_range(seeds)
        if seeds.size == 0:
            raise ValueError("WorldPool needs at least one world seed")
        if seeds.min() < 0 or seeds.max() >= 2**32:
            raise ValueError("world seeds must be in [0, 2**32)")
        self.seeds = seeds
        self._seeds = jnp.asarray(seeds.astype(np.uint32))

    def reset(self, key: jax.Array, params: Any):
        index = jax.random.randint(key, (), 0, self._seeds.shape[0])
        return self.env.reset(world_key(self._seeds[index]), params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        return self.env.step(key, state, action, params)
