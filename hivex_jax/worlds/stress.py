"""Stress worlds: named hard or adversarial world generators per env, each a pure function of the key.

Each env package's `stress.py` has `STRESS_WORLDS = {name: StressWorld(make, doc)}`, where
`make(env, key, state, params) -> (obs, state)` turns the key's reset state (its generated world) into
the stress world. `StressWorlds` wraps an env so every reset builds one; with several names, the
world key picks which (so world seed s always gives the same stress world). docs/worlds.md lists them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.core.seeding import world_key
from hivex_jax.core.world_spec import StressWorld
from hivex_jax.core.wrapper import Wrapper
from hivex_jax.worlds.fields import worlds_module

#: the world seeds of the stress pool (`test_worlds=stress`): disjoint from train 5000-5999 and the
#: held-out 6000-6999 ranges the configs use
STRESS_SEEDS = "9000-9031"


def stress_table(env: Any) -> dict[str, StressWorld]:
    """`{name: StressWorld}` of `env`'s package (env unwrapped)."""
    raw = getattr(env, "unwrapped", env)
    package = type(raw).__module__.rsplit(".", 1)[0]
    try:
        return dict(importlib.import_module(f"{package}.stress").STRESS_WORLDS)
    except ModuleNotFoundError as exc:
        raise UserError(f"{getattr(raw, 'env_id', type(raw).__name__)} has no stress worlds") from exc


def stress_names(env: Any) -> tuple[str, ...]:
    """Names of `env`'s stress worlds."""
    return tuple(stress_table(env))


class StressWorlds(Wrapper):
    """Wraps an env whose state is the env's own (no FrameStack inside): `reset(key)` builds the
    key's world, then turns it into stress world `names[i]`, i drawn from the key (one name: always
    that one). `step` is the env's."""

    def __init__(self, env: Any, names: Sequence[str] | None = None):
        super().__init__(env)
        if isinstance(env, FrameStack):  # its state wraps the env's: put StressWorlds under it
            raise TypeError("StressWorlds goes under frame stacking; use with_stress_worlds(env, ...)")
        table = stress_table(env)
        names = tuple(table) if names is None else tuple(names)
        unknown = [n for n in names if n not in table]
        if unknown or not names:
            raise UserError(f"{env.env_id}: unknown stress world(s) {unknown}; names are {', '.join(table)}")
        self.names = names
        self._makers = [table[n].make for n in names]

    def reset_stress(self, key: jax.Array, params: Any, which: jax.Array | int):
        """`(obs, state)` of stress world `names[which]` built on the key's world."""
        raw = self.env
        obs, state = raw.reset(key, params)
        clamped = raw.clamp_params(params)
        branches = [lambda k, s, f=f: f(raw, k, s, clamped) for f in self._makers]
        if len(branches) == 1:
            return branches[0](key, state)
        return jax.lax.switch(jnp.asarray(which, jnp.int32), branches, key, state)

    def reset(self, key: jax.Array, params: Any):
        which = jax.random.randint(jax.random.fold_in(key, 0x57E55), (), 0, len(self.names))
        return self.reset_stress(key, params, which)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        return self.env.step(key, state, action, params)


def with_stress_worlds(env: Any, names: Sequence[str] | None = None) -> Any:
    """`env` (as `make` returns it: bare or in a FrameStack) with `StressWorlds` under its stacking."""
    if isinstance(env, FrameStack):
        return FrameStack(StressWorlds(env.env, names), env.stacks)
    return StressWorlds(env, names)


def stress_world_of_seed(env: Any, params: Any, name: str, seed: int) -> dict[str, np.ndarray]:
    """World fields of stress world `name` at world seed `seed` (for `hivex world export --stress`)."""
    raw = getattr(env, "unwrapped", env)
    wrapped = StressWorlds(raw, [name])
    module = worlds_module(raw)
    fields = jax.jit(lambda k: module.world_fields(wrapped.reset(k, params)[1]))(world_key(seed))
    return {k: np.asarray(v) for k, v in fields.items()}
