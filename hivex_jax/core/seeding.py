"""Every seeding rule of the project in one place: which integer names which world, and how every
other key (evaluation steps, adapter episodes, auto-reset worlds) is derived from it.

Three kinds of seed appear, and the names say which:

* **world seed** (`int` in [0, 2**32)): the public name of a world. `world_key(seed)` is the PRNG key
  `reset` builds that world from, so "world 6000" is the same world on every machine and batch size.
  `seed_range` parses a list of them ("6000:6100", "1,5,9").
* **world noise seed** (`u32[]`): an integer drawn *from* a world's key inside `reset`
  (`seed_from_key`), which hash-based generators (`hivex_jax.procgen.noise`) and some env states keep
  to redraw per-step noise. It is not the world seed: world 6000's noise seed is
  `seed_from_key(world_key(6000))`.
* **keys derived from a world seed** for the steps taken in it: evaluation rollouts
  (`rollout_key`, `rollout_step_keys`) and the host adapters (`adapter_episode_key`,
  `adapter_step_key`, `adapter_next_world_seed`). Each is a `fold_in` chain, so a step's key depends
  only on the world seed (and the evaluation key), never on the batch it runs in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: world seeds are u32: the integer `world_key` packs into the key
WORLD_SEED_LIMIT = 2**32
#: the most seeds one "lo:hi" range may name (128 MiB as int64): `0:4294967295` is refused, not allocated
WORLD_RANGE_LIMIT = 1 << 24


# ----------------------------------------------------------------------------------- world seeds
def world_key(seed: int | jax.Array) -> jax.Array:
    """The PRNG key `u32[2]` of world `seed`: the same integer gives the same world on every machine
    and batch. Works with a traced integer too (used by `WorldPool`)."""
    return jax.random.PRNGKey(jnp.asarray(seed, jnp.uint32))


def seed_range(spec: str | Sequence[int]) -> np.ndarray:
    """World seeds `i64[N]` from "6000:6100" (half-open range), "1,5,9" or a sequence of ints."""
    if isinstance(spec, str):
        if ":" in spec:
            lo, hi = (int(s) for s in spec.split(":"))
            if hi <= lo:
                raise ValueError(f"empty world range {spec!r}")
            if hi - lo > WORLD_RANGE_LIMIT:
                raise ValueError(
                    f"world range {spec!r} names {hi - lo:,} seeds; at most {WORLD_RANGE_LIMIT:,}"
                )
            return np.arange(lo, hi, dtype=np.int64)
        return np.asarray([int(s) for s in spec.split(",") if s.strip()], np.int64)
    return np.asarray(list(spec), np.int64)


def world_pool_seeds(spec: str | Sequence[int], owner: str = "a world pool") -> np.ndarray:
    """`seed_range(spec)` checked for a pool: `i64[N]`, non-empty, every seed in [0, 2**32)."""
    seeds = seed_range(spec)
    if seeds.size == 0:
        raise ValueError(f"{owner} needs at least one world seed")
    if seeds.min() < 0 or seeds.max() >= WORLD_SEED_LIMIT:
        raise ValueError("world seeds must be in [0, 2**32)")
    return seeds


# ------------------------------------------------------------------------------ key -> integer
def seed_from_key(key: jax.Array) -> jax.Array:
    """An integer seed `u32[]` drawn from `key` (one `jax.random.bits` draw).

    The one key -> integer rule: a world's noise seed (`seed_from_key(world key)`) and the world seed
    an adapter's auto-reset moves to (`adapter_next_world_seed`) both use it.
    """
    return jax.random.bits(key, (), jnp.uint32)


# ------------------------------------------------------------------------ evaluation rollouts
def rollout_key(key: jax.Array, world_seed: Any) -> jax.Array:
    """The key of an evaluation episode on world `world_seed` under evaluation key `key`: every
    policy and batch scored with `key` sees the same environment randomness on that world."""
    return jax.random.fold_in(key, world_seed)


def rollout_step_keys(episode_key: jax.Array, t: Any) -> tuple[jax.Array, jax.Array]:
    """`(action key, env step key)` of step `t` of an evaluation episode (`rollout_key`)."""
    k_act, k_env = jax.random.split(jax.random.fold_in(episode_key, t))
    return k_act, k_env


def hivex_protocol_step_keys(test_seed: int, decision: Any) -> tuple[jax.Array, jax.Array]:
    """`(action key, env step key)` of decision `decision` of a HIVEX-protocol test run
    (`hivex_jax.eval.hivex_protocol`): one stream per run from the test seed, as ML-Agents' test runs
    continued Unity's stream seeded 6000 across episodes."""
    k_act, k_env = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(test_seed), decision))
    return k_act, k_env


# ------------------------------------------------------------------------------------ adapters
# The host adapters (PettingZoo, Gymnasium, the host session) derive every key from the integer world
# seed alone, so world `s` driven by the same actions gives the same trajectory through each of them.
_ADAPTER_EPISODE = 1  # fold_in index of the episode key under the world key (0 is left to the world)
_ADAPTER_NEXT_WORLD = 2**31 - 1  # fold_in index of the key that draws the next world (steps never reach it)


def adapter_episode_key(world_seed: Any) -> jax.Array:
    """The key of an adapter episode in world `world_seed`; step `t` uses `adapter_step_key(key, t)`."""
    return jax.random.fold_in(world_key(world_seed), _ADAPTER_EPISODE)


def adapter_step_key(episode_key: jax.Array, step: Any) -> jax.Array:
    """The key of the decision taken at episode step `step` (0-based) of an adapter episode."""
    return jax.random.fold_in(episode_key, jnp.asarray(step, jnp.uint32))


def adapter_next_world_seed(episode_key: jax.Array) -> jax.Array:
    """The world seed `u32[]` an adapter's auto-reset moves to after the episode of `episode_key`:
    auto-reset worlds stay named worlds."""
    return seed_from_key(jax.random.fold_in(episode_key, _ADAPTER_NEXT_WORLD))
