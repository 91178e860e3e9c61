"""The fused population: members x seeds of one program on one leading axis (vmapped, or in turn on
one CPU device as `hivex train`'s seeds), each row computing
with its member's data (`baselines.core.member.member_data`), sharded over every device of every process like
`hivex train`'s seed axis. Running it (files, checkpoints, evaluation): `baselines.run.fused`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import hivex_jax
from baselines.config import curriculum_start_params
from baselines.core.member import member_data
from baselines.core.ppo import make_train
from baselines.core.training_env import segments_and_tables, union_and_tables
from baselines.run.distributed import fetch
from baselines.run.fused_plan import settings_differ, split_by_pool
from baselines.run.population import Population, chunk_compiler_options, over_seeds, place_global
from hivex_jax.wrappers import PregeneratedWorldPool


def _slots_needed(train: Any) -> float:
    """How many cut slots `train`'s rollout keeps per env (`Train.cut_slots`; None, every step: infinite)."""
    return float("inf") if train.cut_slots is None else train.cut_slots


def _cut_params(members: Sequence[Population]) -> list[Any]:
    """Every member's training and curriculum-start `EnvParams`: a rebuilt program's rollout keeps the cut
    slots of the shortest episodes among them (`make_train(cut_params=)`, `baselines.core.bootstrap`)."""
    return [p for m in members for p in (m.train.train_params, curriculum_start_params(m.config))]


def pool_groups(members: Sequence[Population]) -> list[list[int]]:
    """Members (indices) grouped by training pool when they differ in an env setting (task, level, env
    params) and pregenerate their pools, which then differ (`fused_plan.split_by_pool`); one group
    otherwise (members that differ only in `train_worlds` draw from the union of their worlds)."""
    pregenerated = all(isinstance(m.train.training_env.pool, PregeneratedWorldPool) for m in members)
    if not pregenerated or not settings_differ([m.config for m in members]):
        return [list(range(len(members)))]
    return split_by_pool(members)


class FusedPopulation(Population):
    """Members x seeds of one program on one leading axis (row `m * num_seeds + i`: member m, seed i);
    each row computes with its member's data (`member_data`), each member initialises from its own
    config (the state its run alone would start from; members in other env settings through the
    program's trainer with their rows as data, one compiled init for all)."""

    def __init__(self, members: Sequence[Population], devices: Sequence[Any] | None = None):
        self.members = list(members)
        worlds = [m.config.train_worlds for m in members]
        keys = members[0].train.keys  # the program's config is the first member's
        groups = pool_groups(self.members)
        if len(groups) > 1:  # their own pregenerated pools joined; each member draws from its own
            member_pool = [next(k for k, g in enumerate(groups) if i in g) for i in range(len(members))]
            pools = [members[g[0]].train.training_env.pool for g in groups]
            pool, tables = segments_and_tables(pools, member_pool)
        elif len(set(worlds)) > 1:  # one pool of every member's worlds; each draws from its own
            pool, tables = union_and_tables(worlds)
        else:
            pool, tables = None, [{} for _ in members]
        if pool is None:
            # one pool: the members' trainers differ only in data keys and their cut slots; the one with
            # the most slots (None: at every step) holds every member's cuts
            train = max((m.train for m in members), key=_slots_needed)
        else:
            cut_params = _cut_params(members)
            train = make_train(members[0].config, member_worlds=pool, keys=keys, cut_params=cut_params)
        super().__init__(train, devices)
        self.rows = len(members) * self.config.num_seeds
        data = [
            {**member_data(m.config, m.train.train_params, m.train.env, m.train.env_params), **table}
            for m, table in zip(members, tables, strict=True)
            for _ in range(self.config.num_seeds)
        ]
        scalars = {k: np.stack([d[k] for d in data]) for k in data[0] if k != "env_params"}
        host_rows = {**scalars, "env_params": hivex_jax.stack_params([d["env_params"] for d in data])}
        # members in other env settings initialise with the program's trainer from their own rows (the
        # params as data): one compiled init for them all instead of one each
        self._rows_init = jax.jit(self.train.init) if settings_differ([m.config for m in members]) else None
        self._host_rows = host_rows
        # on the devices of every process, sharded as the state's rows (each process places its shards)
        by_rows = NamedSharding(self.mesh, P("pop") if self.shard_axis == "seeds" else P())
        self.member_rows = jax.tree.map(lambda x: place_global(np.asarray(x), by_rows), host_rows)
        self._chunk = jax.jit(
            self._population_chunk, compiler_options=chunk_compiler_options(self.config, self.devices)
        )
        # the member's index is data: one compiled slice serves every member (not one compile each)
        self._member_state = jax.jit(self._member_rows_of)

    def _population_chunk(self, state: Any, member_rows: Any = None) -> tuple[Any, dict]:  # type: ignore[override]
        state, metrics = over_seeds(self.train.update_chunk, self.in_turn)(state, member_rows)
        return jax.lax.with_sharding_constraint(state, self.shardings(state)), metrics

    def init(self, seed: int | None = None) -> Any:
        """Every member's initial state (the rows its own `Population.init` gives), stacked member-major
        and placed as `Population.init` places a population: each process initialises only the rows its
        devices hold, one by one (not under vmap: see `Population.init`)."""
        s = self.config.num_seeds
        # one compiled init per `ProgramKeys.init_and_eval`: members that differ only in update-only keys
        # (lr, ent_coef, seed, ...) start from the same program, compiled once rather than once per member
        inits: dict[str, Any] = {}

        def init_row(row: int) -> Any:
            member = self.members[row // s]
            key = member.seed_keys(member.config.seed if seed is None else seed)[row % s]
            if self._rows_init is not None:
                return self._rows_init(key, jax.tree.map(lambda x: x[row], self._host_rows))
            init_one = inits.setdefault(member.train.keys.init_and_eval, member._init_one)
            return init_one(key)

        return self.place_rows(init_row)

    def place(self, host_state: Any) -> Any:
        """A population state held whole as numpy on every process (e.g. restored and gathered), placed
        on the devices with the population's shardings."""
        return jax.tree.map(
            lambda x, a: place_global(np.asarray(x), a.sharding), host_state, self.abstract_state()
        )

    def abstract_state(self) -> Any:
        # a member's own init: the program's trainer may reset only with member worlds (same shapes)
        one = jax.eval_shape(self.members[0].train.init, jax.random.PRNGKey(self.config.seed))
        shapes = jax.tree.map(lambda s: jax.ShapeDtypeStruct((self.rows, *s.shape), s.dtype), one)
        return jax.tree.map(
            lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes, self.shardings(shapes)
        )

    def compile(self, state: Any) -> float:
        start = time.perf_counter()
        self.compiled = self._chunk.lower(state, self.member_rows).compile()
        self.compile_s = time.perf_counter() - start
        return self.compile_s

    def chunk(self, state: Any) -> tuple[Any, dict[str, np.ndarray]]:
        if self.compiled is None:
            self.compile(state)
        state, metrics = self.compiled(state, self.member_rows)
        return state, fetch(metrics)

    def member_slice(self, tree: Any, m: int) -> Any:
        """Member m's rows `[num_seeds, ...]` of a host pytree (numpy metrics)."""
        s = self.config.num_seeds
        return jax.tree.map(lambda x: x[m * s : (m + 1) * s], tree)

    def member_state(self, state: Any, m: int) -> Any:
        """Member m's rows of the population state, on the devices as its own run holds them (what its
        checkpoint, evaluation and files read; with several processes every process must call it)."""
        return self._member_state(state, np.int32(m))

    def _member_rows_of(self, state: Any, m: jax.Array) -> Any:
        s = self.config.num_seeds
        rows = jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, m * s, s, axis=0), state)
        return jax.lax.with_sharding_constraint(rows, self.shardings(rows))
