"""What a world is, per environment: named arrays (`FieldSpec`) and the env package's `worlds` module.

A world is the part of a reset state that the env's generator draws from the world key: a small flat
dict `{field name: array}` (terrain, masks, layouts, wind draws). Each env package has a `worlds.py`
with `FIELDS` (one `FieldSpec` per field), `PRIMARY_FIELD` (what a single image file means, or None),
`world_fields(state) -> dict` (export) and `apply_world(env, key, state, world, params) -> (obs,
state)` (import: put the fields into a reset state and recompute what depends on them).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: field kinds: how a file becomes the field (docs/worlds.md)
GRID = "grid"  # f32[R, R] continuous (heights, densities): bilinear / area-average resampling
CODES = "codes"  # u8[R, R] categorical cell codes: nearest-cell resampling, values from `codes`
ARRAY = "array"  # any shape, exact: .npy of exactly that shape only (layouts, wave tables, scalars)
POINTS = "points"  # f32[A, 2] positions: .npy, or an image whose bright pixels are the points
KINDS = (GRID, CODES, ARRAY, POINTS)


@dataclass(frozen=True)
class FieldSpec:
    """One field of a world: its `kind`, the allowed value range (inclusive; for GRID images, grey 0..1
    maps linearly onto it, or onto `image_range` if set), allowed `codes` (CODES) and what it means."""

    name: str
    kind: str
    value_range: tuple[float, float] | None = None
    codes: tuple[int, ...] | None = None
    doc: str = ""
    #: where image values map to, when not `value_range` (e.g. a layout image spans the default farm)
    image_range: tuple[float, float] | None = None


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
