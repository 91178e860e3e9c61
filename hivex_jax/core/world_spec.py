"""What a world and a stress world are, as plain definitions the env packages use (their `worlds.py` and
`stress.py`); reading, writing and wrapping live above the envs in `hivex_jax.worlds` (docs/worlds.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

#: field kinds: how a file becomes the field (docs/worlds.md)
GRID = "grid"  # f32[R, R] continuous (heights, densities): bilinear / area-average resampling
CODES = "codes"  # u8[R, R] categorical cell codes: nearest-cell resampling, values from `codes`
ARRAY = "array"  # any shape, exact: .npy of exactly that shape only (layouts, wave tables, scalars)
POINTS = "points"  # f32[A, 2] positions: .npy, or an image whose bright pixels are the points
SERIES = "series"  # f32[K] values over the episode: a 1-D .npy of any length, linearly resampled to K
KINDS = (GRID, CODES, ARRAY, POINTS, SERIES)


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

    @property
    def image_bounds(self) -> tuple[float, float]:
        """Where an image's grey 0..1 maps: `image_range`, else `value_range` (ValueError if neither)."""
        bounds = self.image_range or self.value_range
        if bounds is None:
            raise ValueError(f"field {self.name!r} has neither image_range nor value_range for its images")
        return bounds


class StressWorld(NamedTuple):
    """`make(env, key, state, params) -> (obs, state)` and one line on what makes it hard."""

    make: Callable[..., Any]
    doc: str
