"""Draw each episode's world from a fixed list of world seeds (a train or test pool)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import seed_range, world_key, world_pool_seeds
from hivex_jax.core.wrapper import Wrapper

# `seed_range` lives in hivex_jax.core.seeding; this was its old home, so it stays importable here.
__all__ = ["PregeneratedWorldPool", "WorldPool", "pool_builder", "seed_range"]


class WorldPool(Wrapper):
    """`reset(key)` picks a world seed uniformly from `seeds` and builds `world_key(seed)`'s world.

    The pool is the train/test split of a generalisation study: pools for training and evaluation
    should be disjoint (see `hivex_jax.eval`). `info`/state are unchanged.
    """

    def __init__(self, env: Any, seeds: Sequence[int] | str):
        super().__init__(env)
        self.seeds = world_pool_seeds(seeds, "WorldPool")
        self._seeds = jnp.asarray(self.seeds.astype(np.uint32))

    def reset(self, key: jax.Array, params: Any):
        return self.world(jax.random.randint(key, (), 0, self._seeds.shape[0]), params)

    def world(self, index: jax.Array, params: Any):
        """`(obs, state)` of the pool's world at `index` (`i32[]`), built for `params`."""
        return self.env.reset(world_key(self._seeds[index]), params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        return self.env.step(key, state, action, params)


class PregeneratedWorldPool(Wrapper):
    """`WorldPool` with every world of the pool generated once, up front: `reset` is then a gather.

    `WorldPool.reset` rebuilds `world_key(seed)`'s world from scratch, and a vmapped `AutoReset` pays
    that cost for every world of the batch on each step where any of them ends an episode (with many
    parallel envs, most steps). A world's reset is a
    pure function of its seed and `params`, so building all of them once gives the same episodes
    (floats up to the rounding of a batched build) at a fraction of the cost (`hivex bench
    --pregenerate N` measures it). The pool is built for the `params` given here; `reset(key,
    params)` ignores its `params` argument, so use it where every world of the batch shares those
    params (one task and level per training run). Memory: `len(seeds)` reset outputs on the default
    device; more than `max_bytes` is refused with the figure. `build`: a compiled `(seeds u32[B], params)
    -> worlds [B, ...]` (`pool_builder`) that takes the params as data, so pools of several settings share
    one program (their worlds equal the constant-params build's up to float rounding); default: a program
    with these params as constants.
    """

    def __init__(
        self,
        env: Any,
        seeds: Sequence[int] | str,
        params: Any,
        batch_size: int = 256,
        max_bytes: int = 4 << 30,
        build: Any = None,
    ):
        super().__init__(env)
        pool_seeds = world_pool_seeds(seeds, "PregeneratedWorldPool")
        one = jax.eval_shape(env.reset, world_key(0), params)
        per_world = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(one))
        if per_world * pool_seeds.size > max_bytes:
            raise ValueError(
                f"a pool of {pool_seeds.size} worlds needs {per_world * pool_seeds.size / 2**20:.0f} MiB "
                f"({per_world / 2**10:.1f} KiB each), over max_bytes={max_bytes / 2**20:.0f} MiB: "
                "use fewer world seeds or WorldPool"
            )
        self.seeds = pool_seeds
        self.params = params
        self.bytes = per_world * pool_seeds.size
        if build is None:  # the params as constants: a program of their own
            constant = jax.jit(jax.vmap(lambda seed: env.reset(world_key(seed), params)))
            build = lambda seeds, _: constant(seeds)  # noqa: E731
        chunks = []
        for start in range(0, pool_seeds.size, batch_size):
            part = pool_seeds[start : start + batch_size]
            padded = np.resize(part, batch_size)  # one compiled shape for every chunk
            worlds = build(jnp.asarray(padded, jnp.uint32), params)
            chunks.append(jax.tree.map(lambda x, n=part.size: x[:n], worlds))
        self.pool = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=0), *chunks)

    @classmethod
    def concatenate(cls, pools: Sequence[PregeneratedWorldPool]) -> PregeneratedWorldPool:
        """One pool of `pools`' worlds, one pool after another, each as it was built (for its own
        params): pool k's world i is at `sum(len(p.seeds) for p in pools[:k]) + i`. For `world(index)`
        (a fused trainer's members each draw from their own segment); `params` is the first pool's."""
        first = pools[0]
        joined = cls.__new__(cls)
        Wrapper.__init__(joined, first.env)
        joined.seeds = np.concatenate([p.seeds for p in pools])
        joined.params = first.params
        joined.bytes = sum(p.bytes for p in pools)
        joined.pool = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=0), *[p.pool for p in pools])
        return joined

    def reset(self, key: jax.Array, params: Any):
        return self.world(jax.random.randint(key, (), 0, self.seeds.size), params)

    def world(self, index: jax.Array, params: Any):
        """`(obs, state)` of the pool's world at `index` (`i32[]`), as built up front (`params` unused)."""
        return jax.tree.map(lambda x: x[index], self.pool)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        return self.env.step(key, state, action, params)


def pool_builder(env: Any) -> Any:
    """A compiled `(seeds u32[B], params) -> worlds [B, ...]` for `PregeneratedWorldPool(build=...)`: the
    env params as data, one program for every setting (task, level, `EnvParams`) of `env`."""
    return jax.jit(jax.vmap(lambda seed, params: env.reset(world_key(seed), params), in_axes=(0, None)))
