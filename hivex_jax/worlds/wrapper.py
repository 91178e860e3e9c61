"""`FileWorlds`: reset into worlds from files (stacked arrays), mixed freely with generated worlds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.core.wrapper import Wrapper
from hivex_jax.worlds.fields import worlds_module
from hivex_jax.worlds.files import load_world, world_shapes

#: `reset_world` index of "the world generated from the key" (no file world)
GENERATED = -1


class FileWorlds(Wrapper):
    """Wraps an env whose state is the env's own (no FrameStack inside; see `with_file_worlds`).
    `reset` builds the key's world, then with probability `1 - generated_fraction` replaces its
    fields with those of a file world drawn uniformly from `worlds` (fields a file world leaves out
    keep their generated values).

    The file worlds are stacked arrays `[N, ...]` with a per-world "given" flag per field, so one
    compiled `reset` serves any world index and `vmap` mixes file and generated worlds in a batch.
    The state is the env's own state: the world lives in it, so `step` is the env's `step`.
    """

    def __init__(
        self,
        env: Any,
        worlds: Sequence[Mapping[str, np.ndarray]],
        params: Any = None,
        generated_fraction: float = 0.0,
    ):
        super().__init__(env)
        if isinstance(env, FrameStack):  # its state wraps the env's: put FileWorlds under it
            raise TypeError("FileWorlds goes under frame stacking; use with_file_worlds(env, ...)")
        if not worlds:
            raise UserError("FileWorlds: no worlds given")
        if not 0.0 <= generated_fraction <= 1.0:
            raise UserError(f"FileWorlds: generated_fraction must be in [0, 1]; got {generated_fraction}")
        self.module = worlds_module(env)
        shapes = world_shapes(env, env.default_params() if params is None else params)
        names = sorted({name for world in worlds for name in world})
        self.num_worlds = len(worlds)
        self.generated_fraction = float(generated_fraction)
        self.stacked: dict[str, jax.Array] = {}
        self.given: dict[str, jax.Array] = {}
        for name in names:
            target = shapes[name]
            rows, flags = [], []
            for world in worlds:
                value = world.get(name)
                if value is not None and tuple(np.shape(value)) != tuple(target.shape):
                    raise UserError(
                        f"FileWorlds: field {name!r} has shape {np.shape(value)}; expected {target.shape}"
                    )
                rows.append(
                    np.zeros(target.shape, target.dtype) if value is None else np.asarray(value, target.dtype)
                )
                flags.append(value is not None)
            self.stacked[name] = jnp.asarray(np.stack(rows))
            self.given[name] = jnp.asarray(flags)

    def reset_world(self, key: jax.Array, params: Any, index: jax.Array | int):
        """`(obs, state)` of file world `index` (i32[]; `GENERATED` = -1: the key's generated world)."""
        raw = self.env
        obs, state = raw.reset(key, params)
        fields = self.module.world_fields(state)
        index = jnp.asarray(index, jnp.int32)
        use = index >= 0
        row = jnp.clip(index, 0, self.num_worlds - 1)
        merged = dict(fields)
        for name, stacked in self.stacked.items():
            merged[name] = jnp.where(use & self.given[name][row], stacked[row], fields[name])
        return self.module.apply_world(raw, key, state, merged, raw.clamp_params(params))

    def pick(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`(world key, world index)` a reset with `key` uses (index `GENERATED`: the key's own world)."""
        k_world, k_pick, k_mix = jax.random.split(key, 3)
        index = jax.random.randint(k_pick, (), 0, self.num_worlds)
        generated = jax.random.uniform(k_mix) < self.generated_fraction
        return k_world, jnp.where(generated, GENERATED, index)

    def reset(self, key: jax.Array, params: Any):
        k_world, index = self.pick(key)
        return self.reset_world(k_world, params, index)

    def played_worlds(self, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
        """i64[N]: the file world each world seed's reset plays (`GENERATED`: the key's generated world)."""
        from hivex_jax.core.seeding import world_key

        pick = jax.jit(jax.vmap(lambda seed: self.pick(world_key(seed))[1]))
        return np.asarray(pick(jnp.asarray(np.asarray(seeds), jnp.uint32)), np.int64)

    def seed_free(self, index: int) -> bool:
        """True if an episode on file world `index` depends only on the world and the actions: the env
        says so (`FILE_WORLD_SEED_FREE`) and the file gives every world field (a field it leaves out
        comes from the seed's generated world)."""
        if index < 0 or not getattr(self.module, "FILE_WORLD_SEED_FREE", False):
            return False
        fields = [spec.name for spec in self.module.FIELDS]
        return all(name in self.given and bool(self.given[name][index]) for name in fields)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        return self.env.step(key, state, action, params)


def with_file_worlds(env: Any, worlds: Sequence[Mapping[str, np.ndarray]], params: Any = None, **kwargs: Any):
    """`env` (as `make` returns it: bare or in a FrameStack) with `FileWorlds` under its frame stacking."""
    if isinstance(env, FrameStack):
        return FrameStack(FileWorlds(env.env, worlds, params, **kwargs), env.stacks)
    return FileWorlds(env, worlds, params, **kwargs)


def distinct_episode_seeds(
    env: Any, seeds: Sequence[int], passes_key: tuple[type, ...] = ()
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """`(seeds, record)`: `seeds` without those whose episode would repeat an earlier one's under the
    same actions (a seed-free env's file world that an earlier seed already plays: `FileWorlds.seed_free`),
    and what was dropped and why (None: nothing dropped). `env` as `make` builds it; wrappers between it
    and `FileWorlds` must hand `reset` its key unchanged (FrameStack, and the classes in `passes_key`),
    otherwise nothing is dropped."""
    seed_array = np.asarray(seeds, np.int64)
    inner = env
    while not isinstance(inner, FileWorlds):
        if not isinstance(inner, (FrameStack, *passes_key)):
            return seed_array, None
        inner = inner.env
    played = inner.played_worlds(seed_array)
    keep, seen = [], set()
    for i, index in enumerate(played.tolist()):
        if inner.seed_free(index) and index in seen:
            continue
        seen.add(index)
        keep.append(i)
    if len(keep) == len(seed_array):
        return seed_array, None
    dropped = sorted(set(range(len(seed_array))) - set(keep))
    record = {
        "seeds_given": len(seed_array),
        "distinct": len(keep),
        "dropped_seeds": seed_array[dropped].tolist(),
        "why": f"{getattr(inner, 'env_id', '')}: on a file world the seed changes "
        + inner.module.SEED_ON_FILE_WORLD,
    }
    return seed_array[keep], record


def load_worlds(paths: Sequence[str], env: Any, params: Any) -> list[dict[str, np.ndarray]]:
    """`load_world` of each path (directories, `.npz` or single field files), in order."""
    return [load_world(path, env, params) for path in paths]


def expand_world_paths(spec: str | Sequence[str]) -> list[str]:
    """World paths from `spec`: a comma-separated string or a list, each a path or a glob pattern
    (`DIR/*.png`), in sorted order per pattern; a pattern that matches nothing is a `UserError`."""
    import glob

    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s) for s in spec]
    paths: list[str] = []
    for item in items:
        if not item:
            continue
        matches = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not matches:
            raise UserError(f"world_files {item!r} matches no file")
        paths.extend(matches)
    if not paths:
        raise UserError("world_files names no file")
    return paths


def wrap_worlds(env: Any, params: Any, world_files: Any = None, stress_worlds: Any = None) -> Any:
    """`env` (as `make` builds it) drawing its worlds from `world_files` (paths / globs, see
    `expand_world_paths`) and/or turning them into stress worlds (`"all"` or comma-separated names):
    what `hivex_jax.make(id, world_files=..., stress_worlds=...)` returns."""
    if world_files:
        worlds = load_worlds(expand_world_paths(world_files), env, params)
        env = with_file_worlds(env, worlds, params)
    if stress_worlds:
        from hivex_jax.worlds.stress import with_stress_worlds

        names = None if stress_worlds == "all" else [s.strip() for s in str(stress_worlds).split(",") if s]
        env = with_stress_worlds(env, names)
    return env
