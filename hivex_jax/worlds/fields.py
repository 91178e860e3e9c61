"""What a world is, per environment: named arrays (`FieldSpec`) and the env package's `worlds` module.

A world is the part of a reset state that the env's generator draws from the world key: a small flat
dict `{field name: array}` (terrain, masks, layouts, wind draws). Each env package has a `worlds.py`
with `FIELDS` (one `FieldSpec` per field), `PRIMARY_FIELD` (what a single image file means, or None),
`world_fields(state) -> dict` (export) and `apply_world(env, key, state, world, params) -> (obs,
state)` (import: put the fields into a reset state and recompute what depends on them). Optionally
`INPUT_FIELDS` (fields a file may give that import converts into world fields, never exported; their
shapes from `input_shapes(env, params)`) and `complete_world(env, params, world, where) -> world` (run
on every loaded world: converts input fields, sets "given" flags).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from hivex_jax.core.world_spec import ARRAY, CODES, GRID, KINDS, POINTS, SERIES, FieldSpec

__all__ = [
    "ARRAY",
    "CODES",
    "GRID",
    "KINDS",
    "POINTS",
    "SERIES",
    "FieldSpec",
    "field_specs",
    "input_specs",
    "worlds_module",
]


def worlds_module(env: Any) -> ModuleType:
    """The `worlds` module of `env`'s package (env unwrapped), e.g. `...wind_farm_control.worlds`."""
    raw = getattr(env, "unwrapped", env)
    package = type(raw).__module__.rsplit(".", 1)[0]
    try:
        return importlib.import_module(f"{package}.worlds")
    except ModuleNotFoundError as exc:
        raise ValueError(f"{getattr(raw, 'env_id', type(raw).__name__)} has no world files support") from exc


def field_specs(env: Any) -> dict[str, FieldSpec]:
    """`{name: FieldSpec}` of `env`'s world fields, in the module's order."""
    return {spec.name: spec for spec in worlds_module(env).FIELDS}


def input_specs(env: Any) -> dict[str, FieldSpec]:
    """`{name: FieldSpec}` of the fields a file may give that import converts into world fields (e.g.
    AWS's `heights` -> `slope`); not exported. Empty for most envs."""
    return {spec.name: spec for spec in getattr(worlds_module(env), "INPUT_FIELDS", ())}
