"""The trainer's env stack (`TrainingEnv`: world pool, auto-reset, episode statistics), and training worlds
per member of a fused population: members whose `train_worlds` differ share one pool, the union
of their worlds, and each member's auto-resets draw from its own share of it; members whose pregenerated
pools differ in their env setting (level, task, env params) draw from their own pool, the pools joined one
after another (`segments_and_tables`).

A member's reset draws `randint(key, (), 0, count)` and plays the pool's world at `index[draw]`: the same
draw as a run alone (`WorldPool.reset` draws `randint(key, (), 0, N)` over its own N worlds, in the same
order), so a member plays the worlds its run alone plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from baselines.core.program_cache import ProgramKeys, cached
from hivex_jax.core.errors import world_seeds
from hivex_jax.core.wrapper import Wrapper
from hivex_jax.wrappers import AutoReset, EpisodeStatistics, PregeneratedWorldPool, WorldPool
from hivex_jax.wrappers.world_pool import pool_builder


@struct.dataclass
class MemberWorlds:
    """The params a member's training env steps with: its `EnvParams` and its worlds in the shared pool
    (`index` i32[K], padded with 0 past `count` i32[])."""

    env: Any
    index: jax.Array
    count: jax.Array


class MemberWorldPool(Wrapper):
    """A world pool (`WorldPool` or `PregeneratedWorldPool` over every member's worlds) whose `reset`
    draws from the member's own worlds; `params` is `MemberWorlds`, the env sees its `env` part."""

    def reset(self, key: jax.Array, params: MemberWorlds):
        draw = jax.random.randint(key, (), 0, params.count)
        return self.env.world(jnp.asarray(params.index)[draw], params.env)

    def step(self, key: jax.Array, state: Any, action: Any, params: MemberWorlds):
        return self.env.step(key, state, action, params.env)

    def action_space(self, params: MemberWorlds) -> Any:
        return self.env.action_space(params.env)

    def observation_space(self, params: MemberWorlds) -> Any:
        return self.env.observation_space(params.env)


def union_and_tables(specs: Sequence[str]) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """`(pool seeds i64[P], per spec {"train_world_index": i32[K], "train_world_count": i32[]})`: the
    sorted union of the specs' world seeds and each spec's seeds as positions in it, in its own order,
    padded to the longest (K)."""
    seeds = [world_seeds(spec, "train_worlds") for spec in specs]
    union = np.unique(np.concatenate(seeds))
    longest = max(s.size for s in seeds)
    tables = []
    for own in seeds:
        index = np.zeros(longest, np.int32)
        index[: own.size] = np.searchsorted(union, own)
        tables.append({"train_world_index": index, "train_world_count": np.int32(own.size)})
    return union, tables


def segments_and_tables(
    pools: Sequence[PregeneratedWorldPool], member_pool: Sequence[int]
) -> tuple[PregeneratedWorldPool, list[dict[str, np.ndarray]]]:
    """`(pools one after another, per member {"train_world_index": i32[K], "train_world_count": i32[]})`
    for members whose pregenerated pools differ (other levels, tasks or env params build other worlds):
    member m draws from its pool `pools[member_pool[m]]`'s segment, in that pool's order, padded to the
    longest (K), so it plays the worlds its run alone plays, as built for its own params."""
    sizes = [p.seeds.size for p in pools]
    offsets = np.cumsum([0, *sizes[:-1]])
    longest = max(sizes)
    tables = []
    for k in member_pool:
        index = np.zeros(longest, np.int32)
        index[: sizes[k]] = offsets[k] + np.arange(sizes[k])
        tables.append({"train_world_index": index, "train_world_count": np.int32(sizes[k])})
    return PregeneratedWorldPool.concatenate(pools), tables


#: the last pregenerated pool built, by its key: the members of a fused sweep that differ only in PPO
#: scalars (their trainers built one after another) share one pool instead of generating it each
_LAST_POOL: dict[str, PregeneratedWorldPool] = {}


def _shared_pool(key: str | None, build: Any) -> PregeneratedWorldPool:
    """The last pool built under `key` if it is the same key, else a new one (kept as the last; no key:
    never shared)."""
    if key is not None and key in _LAST_POOL:
        return _LAST_POOL[key]
    pool = build()
    if key is not None:
        _LAST_POOL.clear()
        _LAST_POOL[key] = pool
    return pool


def shared_pool_builder(setting_free_key: str, env: Any) -> Any:
    """`pool_builder(env)` shared by the configs that differ only in their env setting (task, level, env
    params) or update-only keys (the program cache under their `ProgramKeys.setting_free`): a fused
    sweep's members over levels build their pools with one compile."""
    return cached(("pool builder", setting_free_key), lambda: pool_builder(env))


class TrainingEnv:
    """`EpisodeStatistics(AutoReset(WorldPool(env, train_worlds), final_obs=True, final_state=True))`:
    the trainer's env stack on `hivex_jax.wrappers`' one auto-reset, which also hands back the pre-reset
    observation and state, so IPPO/MAPPO bootstrap from the final (global) state on truncation."""

    def __init__(
        self,
        env: Any,
        worlds: Any,
        params: Any = None,
        pregenerate: bool = False,
        per_member=False,
        pool_key: str | None = None,
        build: Any = None,
    ):
        self.env, self.per_member = env, per_member
        # Same episodes either way (a world's reset is a pure function of its seed and params); the
        # pregenerated pool makes an auto-reset a gather instead of a world generation.
        if isinstance(worlds, PregeneratedWorldPool):  # members' own pools, joined (`segments_and_tables`)
            self.pool = worlds
        elif pregenerate:
            self.pool = _shared_pool(
                pool_key, lambda: PregeneratedWorldPool(env, worlds, params, build=build)
            )
        else:
            self.pool = WorldPool(env, worlds)
        pool = MemberWorldPool(self.pool) if per_member else self.pool  # members draw their own worlds
        self.stats = EpisodeStatistics(AutoReset(pool, final_obs=True, final_state=True))

    @classmethod
    def of(
        cls,
        env: Any,
        params: Any,
        train_worlds: str,
        pregenerate: bool,
        keys: ProgramKeys,
        member_worlds: Any = None,
        pool_as_data: bool = False,
    ) -> TrainingEnv:
        """The stack a config trains on: its `train_worlds` (world seeds; `pregenerate`:
        `pregenerate_worlds`), or with `member_worlds` (a fused population's pool of world seeds, or its
        members' pregenerated pools joined) that pool, each member drawing its own worlds (`params_for`).
        `pool_as_data`: a pregenerated pool is built by the program shared by every env setting of the
        config (`shared_pool_builder`), not by one of its own. `keys`: the config's cache keys."""
        worlds = train_worlds if member_worlds is None else member_worlds
        if isinstance(worlds, PregeneratedWorldPool):
            return cls(env, worlds, params, per_member=True)
        # the pool is a function of the env, its training params, the worlds and how it was built (its
        # floats' rounding), all in this key
        listed = np.asarray(worlds).tolist() if member_worlds is not None else ""
        pool_key = f"{keys.init_and_eval}|{listed}|{'data' if pool_as_data else 'constants'}"
        build = shared_pool_builder(keys.setting_free, env) if pool_as_data and pregenerate else None
        return cls(env, worlds, params, pregenerate, member_worlds is not None, pool_key, build)

    def params_for(self, env_params: Any, member: dict | None) -> Any:
        """What `reset`/`step` take: `env_params`, or a fused member's `MemberWorlds` (`per_member`)."""
        if not self.per_member:
            return env_params
        if member is None:  # per member: every call carries the member's worlds
            raise TypeError("a fused member's training env needs its member data (member_data)")
        return MemberWorlds(env_params, member["train_world_index"], member["train_world_count"])

    def reset(self, key: jax.Array, params: Any) -> tuple[dict, Any]:
        return self.stats.reset(key, params)

    def step(self, key: jax.Array, state: Any, action: dict, params: Any):
        """`(obs, state, reward, terminated, truncated, info, final_obs, final_state)` for one env;
        obs/state are the next episode's when `info["done"]`. Under `vmap` (envs, seeds) worlds are
        generated only on steps where some episode of the batch ended (`wrappers.reset_where`)."""
        return self._with_final(*self.stats.step(key, state, action, params))

    @staticmethod
    def _with_final(obs: Any, state: Any, reward: Any, terminated: Any, truncated: Any, info: dict):
        info = dict(info)
        final_obs = info.pop("final_obs")
        final_state = state.replace(env_state=info.pop("final_state"))  # the statistics wrap it as before
        return obs, state, reward, terminated, truncated, info, final_obs, final_state

    def global_state(self, state: Any, params: Any) -> jax.Array:
        return self.stats.global_state(state, params)
