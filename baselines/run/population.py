"""The population: `num_seeds` independent runs of one config, vmapped and sharded over the devices
(of every process when `jax.distributed` runs several; `baselines.run.distributed`) or, on one CPU
device, run in turn in one program (`seeds_in_turn`), and the cache that
lets a resumed run, `hivex evaluate` after `hivex train` or a sweep over host-only keys reuse the
compiled programs."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from baselines.config import PPOConfig
from baselines.core.ppo import RunnerState, Train, make_train
from baselines.core.program_cache import ProgramKeys, cached
from baselines.run.distributed import fetch


def seeds_in_turn(devices: Sequence[Any]) -> bool:
    """Whether a population on `devices` runs its seeds in turn (`lax.map`, one program) rather than
    vmapped: on one CPU device. XLA's CPU backend runs a network vmapped over seeds (batched matmuls,
    one kernel per seed) slower per seed than one seed's own; on several devices the seeds (or envs)
    are sharded, and accelerators want the batch."""
    return len(devices) == 1 and devices[0].platform == "cpu"


def over_seeds(fn: Any, in_turn: bool) -> Any:
    """`fn` over a leading seed axis of all its arguments: `jax.vmap(fn)`, or in turn (`lax.map`)."""
    if not in_turn:
        return jax.vmap(fn)
    return lambda *args: jax.lax.map(lambda row: fn(*row), args)


def chunk_compiler_options(config: PPOConfig, devices: Sequence[Any]) -> dict[str, Any] | None:
    """XLA options of the training program: `cpu_compile_level` on CPU devices (None: the process's)."""
    if config.cpu_compile_level is None or devices[0].platform != "cpu":
        return None
    return {"xla_backend_optimization_level": config.cpu_compile_level}


class Population:
    """`num_seeds` independent runs, vmapped, sharded over `devices` (default: `jax.devices()`, which
    with several processes spans all of them; each process then feeds and fetches its own shards). On
    one CPU device the seeds run in turn in the same program instead (`seeds_in_turn`): the same runs to
    float32 rounding.

    Sharding (`shard_axis="auto"`): over the seed axis when the device count divides `num_seeds` (no
    communication), else over the env axis when it divides `num_envs` (parameters replicated,
    gradients all-reduced by XLA), else replicated; "seeds", "envs" or "none" force a choice. The
    program is the same in every case, so the numbers agree with one device up to float summation
    order.
    """

    def __init__(self, train: Train, devices: Sequence[Any] | None = None, shard_axis: str = "auto"):
        self.train = train
        self.config = train.config
        # what the population reads of its config, read once
        self.num_seeds, self.seed = self.config.num_seeds, self.config.seed
        num_envs = self.config.num_envs
        self.devices = list(devices if devices is not None else jax.devices())
        self.mesh = Mesh(np.asarray(self.devices), ("pop",))
        n = len(self.devices)
        divides = {"seeds": self.num_seeds % n == 0, "envs": num_envs % n == 0}
        if shard_axis == "auto":
            shard_axis = "seeds" if divides["seeds"] else "envs" if divides["envs"] else "none"
        elif shard_axis not in ("seeds", "envs", "none") or (
            shard_axis != "none" and not divides[shard_axis]
        ):
            raise ValueError(f"cannot shard the {shard_axis!r} axis over {n} devices")
        self.shard_axis = shard_axis
        self.in_turn = seeds_in_turn(self.devices)
        self._init_one = jax.jit(train.init)
        self._chunk = jax.jit(
            self._population_chunk,
            donate_argnums=0 if jax.default_backend() != "cpu" else (),
            compiler_options=chunk_compiler_options(self.config, self.devices),
        )
        self.compiled: Any = None
        self.compile_s = float("nan")

    # -------------------------------------------------------------------------------- sharding
    def shardings(self, state: Any) -> Any:
        """A pytree of `NamedSharding` matching `state` (a population `RunnerState`)."""
        replicated = NamedSharding(self.mesh, P())
        if self.shard_axis == "seeds":
            return jax.tree.map(lambda _: NamedSharding(self.mesh, P("pop")), state)
        if self.shard_axis == "envs":
            envs = NamedSharding(self.mesh, P(None, "pop"))
            everything = jax.tree.map(lambda _: replicated, state)
            return everything.replace(
                env_state=jax.tree.map(lambda _: envs, state.env_state),
                obs=jax.tree.map(lambda _: envs, state.obs),
            )
        return jax.tree.map(lambda _: replicated, state)

    def _population_chunk(self, state: RunnerState) -> tuple[RunnerState, dict]:
        state, metrics = over_seeds(self.train.update_chunk, self.in_turn)(state)
        return jax.lax.with_sharding_constraint(state, self.shardings(state)), metrics

    # ------------------------------------------------------------------------------------ init
    def seed_keys(self, seed: int) -> list[jax.Array]:
        """Key of training seed i = fold_in(PRNGKey(seed), i): seed i is the same run for any num_seeds."""
        base = jax.random.PRNGKey(seed)
        return [jax.random.fold_in(base, i) for i in range(self.num_seeds)]

    def init(self, seed: int | None = None) -> RunnerState:
        """The population's initial state `[num_seeds, ...]`, placed on the devices.

        Each process initialises only the seeds its devices hold (all of them unless the seed axis is
        sharded) and places only its addressable shards. Seeds are initialised one by one, NOT under
        `vmap`: flax's orthogonal init is a QR decomposition, and batched LAPACK calls can deadlock
        jaxlib 0.10 on 2-core CPUs.
        """
        keys = self.seed_keys(self.seed if seed is None else seed)
        return self.place_rows(lambda i: self._init_one(keys[i]))

    def place_rows(self, init_row: Any) -> Any:
        """The population state from `init_row(i)` (row i's state, one seed's shapes), placed with the
        population's shardings: each process computes only the rows its devices hold."""
        leaves, treedef = jax.tree.flatten(self.abstract_state())
        needed: set[int] = set()
        for leaf in leaves:
            for index in leaf.sharding.addressable_devices_indices_map(leaf.shape).values():
                needed.update(range(leaf.shape[0])[index[0] if index else slice(None)])
        host = {i: jax.tree.leaves(jax.device_get(init_row(i))) for i in sorted(needed)}
        placed = []
        for j, leaf in enumerate(leaves):
            full = np.zeros(leaf.shape, leaf.dtype)  # rows no local device holds stay unread zeros
            for i, row_leaves in host.items():
                full[i] = row_leaves[j]
            placed.append(place_global(full, leaf.sharding))
        return jax.tree.unflatten(treedef, placed)

    def abstract_state(self) -> Any:
        """Shapes, dtypes and shardings of the population state (the target of a restore)."""
        # every seed's state has one seed's shapes: trace one init, not num_seeds of them (minutes at 4,096)
        one = jax.eval_shape(self.train.init, jax.random.PRNGKey(self.seed))
        n = self.num_seeds
        shapes = jax.tree.map(lambda s: jax.ShapeDtypeStruct((n, *s.shape), s.dtype), one)
        shardings = self.shardings(shapes)
        return jax.tree.map(
            lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes, shardings
        )

    # ----------------------------------------------------------------------------------- chunk
    def compile(self, state: RunnerState) -> float:
        """Ahead-of-time compile the chunk for `state`'s shapes; returns the compile time (s)."""
        start = time.perf_counter()
        self.compiled = self._chunk.lower(state).compile()
        self.compile_s = time.perf_counter() - start
        return self.compile_s

    def compile_piece(self, updates: int) -> Any:
        """`updates` of the chunk's updates on one seed row, compiled: `compiled(row) -> (row, metrics [1,
        updates])`. Seeds in turn, a seed's numbers are the same in any company and in pieces of any length
        (tests/baselines/test_helpers.py), so helper processes may share a chunk's seeds piece by piece."""
        assert self.in_turn, "pieces of a chunk are the population's only where its seeds run in turn"
        piece = over_seeds(functools.partial(self.train.update_chunk, updates=updates), True)
        options = chunk_compiler_options(self.config, self.devices)
        return jax.jit(piece, compiler_options=options).lower(self.part_state(1)).compile()

    def part_state(self, rows: int) -> Any:
        """`abstract_state` of `rows` seed rows."""
        return jax.tree.map(
            lambda s: jax.ShapeDtypeStruct((rows, *s.shape[1:]), s.dtype, sharding=s.sharding),
            self.abstract_state(),
        )

    def chunk(self, state: RunnerState) -> tuple[RunnerState, dict[str, np.ndarray]]:
        """Run `chunk_updates` updates on every seed; metrics come back as numpy `[num_seeds, K]` (on
        every process: gathered across processes)."""
        if self.compiled is None:
            self.compile(state)
        state, metrics = self.compiled(state)
        return state, fetch(metrics)


def place_global(full: np.ndarray, sharding: Any) -> jax.Array:
    """`full` (the same on every process) as a global array: each process places its own shards."""
    return jax.make_array_from_callback(full.shape, sharding, lambda index: full[index])


def get_population(config: PPOConfig, devices: Sequence[Any] | None = None) -> Population:
    """`Population(make_train(config), devices)`, reused across calls with the same compute config."""
    devices = list(devices if devices is not None else jax.devices())
    keys = ProgramKeys.of(config)  # computed once: the trainer carries them to the evaluations
    key = ("population", keys.compute, tuple(str(d) for d in devices))
    return cached(key, lambda: Population(make_train(config, keys=keys), devices))
