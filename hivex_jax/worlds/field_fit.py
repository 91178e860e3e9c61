"""One world field fitted to the env: an image or array read from a file (`hivex_jax.worlds.file_checks`)
or given in memory, resampled to the field's shape (GRID: area average when shrinking, linear between cell
centres when growing; CODES: nearest cell; SERIES: linear over the episode; POINTS from an image: the
brightest pixels) and validated (finite, codes, value range) into the field's dtype (docs/worlds.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.worlds.fields import ARRAY, CODES, GRID, POINTS, SERIES, FieldSpec
from hivex_jax.worlds.file_checks import (
    DEFAULT_MAX_SERIES_LENGTH,
    FIELD_SUFFIXES,
    IMAGE_SUFFIXES,
    check_dtype,
    check_shape,
    read_array,
    read_image,
)


# ---------------------------------------------------------------------------------------- resampling
def _axis_matrix(size_in: int, size_out: int) -> np.ndarray:
    """f64[out, in] weights: area average when shrinking, linear between cell centres when growing."""
    if size_out < size_in:
        edges_in = np.arange(size_in + 1) / size_in
        edges_out = np.arange(size_out + 1) / size_out
        lo = np.maximum(edges_out[:-1, None], edges_in[None, :-1])
        hi = np.minimum(edges_out[1:, None], edges_in[None, 1:])
        overlap = np.clip(hi - lo, 0.0, None)
        return overlap / overlap.sum(axis=1, keepdims=True)
    centres = (np.arange(size_out) + 0.5) * size_in / size_out - 0.5  # in input cell units
    centres = np.clip(centres, 0.0, size_in - 1)
    left = np.floor(centres).astype(int)
    right = np.minimum(left + 1, size_in - 1)
    frac = centres - left
    out = np.zeros((size_out, size_in))
    np.add.at(out, (np.arange(size_out), left), 1.0 - frac)
    np.add.at(out, (np.arange(size_out), right), frac)
    return out


def resample_continuous(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """f64[H, W] -> f64[shape]: area average along shrinking axes, linear along growing ones (the
    identity at equal size)."""
    rows = _axis_matrix(values.shape[0], shape[0])
    cols = _axis_matrix(values.shape[1], shape[1])
    return rows @ values @ cols.T


def resample_nearest(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """[H, W] -> [shape]: each output cell takes the input cell under its centre."""
    r = np.minimum(
        ((np.arange(shape[0]) + 0.5) * values.shape[0] / shape[0]).astype(int), values.shape[0] - 1
    )
    c = np.minimum(
        ((np.arange(shape[1]) + 0.5) * values.shape[1] / shape[1]).astype(int), values.shape[1] - 1
    )
    return values[r][:, c]


def resample_series(values: np.ndarray, knots: int) -> np.ndarray:
    """f64[L] at L evenly spaced times -> f64[knots] at `knots` evenly spaced times over the same span
    (linear; first and last values kept; a single value is a constant)."""
    if values.shape[0] == 1:
        return np.full(knots, values[0])
    where = np.linspace(0.0, values.shape[0] - 1, knots)
    return np.interp(where, np.arange(values.shape[0]), values)


def image_points(values: np.ndarray, count: int, value_range: tuple[float, float], path: Path) -> np.ndarray:
    """f64[count, 2] (x, z) from an image in [0, 1]: the `count` brightest pixels above 0.5, pixel
    centres mapped onto `value_range` (x grows to the right, z upward; row 0 is the top)."""
    flat = values.reshape(-1)
    bright = np.flatnonzero(flat > 0.5)
    if bright.size < count:
        raise UserError(
            f"{path}: {bright.size} pixels brighter than 0.5; expected at least {count} (one per agent)"
        )
    order = bright[np.argsort(-flat[bright], kind="stable")[:count]]
    rows, cols = np.divmod(order, values.shape[1])
    lo, hi = value_range
    x = lo + (cols + 0.5) / values.shape[1] * (hi - lo)
    z = hi - (rows + 0.5) / values.shape[0] * (hi - lo)
    return np.stack([x, z], axis=-1)


# ----------------------------------------------------------------------------------------- one field
def field_from_file(
    path: Path, spec: FieldSpec, target: jax.ShapeDtypeStruct, max_length: int = DEFAULT_MAX_SERIES_LENGTH
) -> np.ndarray:
    """Read, resample and validate one field file into `target`'s shape and dtype (sizes and dtypes
    checked from the file's header first; `max_length`: the longest SERIES file)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIELD_SUFFIXES:
        raise UserError(f"{path}: unknown file type {suffix!r}; expected one of {', '.join(FIELD_SUFFIXES)}")
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise UserError(f"{path}: empty file; expected {spec.kind} field {spec.name!r}")
    image = suffix in IMAGE_SUFFIXES
    if image and spec.kind in (ARRAY, SERIES):
        raise UserError(
            f"{path}: field {spec.name!r} takes a .npy of shape {tuple(target.shape)}, not an image"
        )
    # passed on without a name here, so `fit_field` frees the file's array as soon as it is converted
    return fit_field(
        read_image(path, raw_codes=spec.kind == CODES)
        if image
        else read_array(path, spec, target, max_length),
        path,
        spec,
        target,
        image,
        max_length,
    )


def field_from_array(
    values: Any,
    spec: FieldSpec,
    target: jax.ShapeDtypeStruct,
    where: str,
    max_length: int = DEFAULT_MAX_SERIES_LENGTH,
) -> np.ndarray:
    """Validate and fit an in-memory array (e.g. from a `.npz`) as one field; `where` names it in errors."""
    return fit_field(np.asarray(values), Path(where), spec, target, False, max_length)


def fit_field(
    values: np.ndarray,
    path: Path,
    spec: FieldSpec,
    target: jax.ShapeDtypeStruct,
    image: bool,
    max_length: int = DEFAULT_MAX_SERIES_LENGTH,
) -> np.ndarray:
    """`values` read from `path` (an image's in [0, 1] or raw codes, else an array of the file or memory,
    whose dtype and shape are checked here) resampled to `target`'s shape, validated, in its dtype."""
    shape = tuple(target.shape)
    if values.size == 0:
        raise UserError(f"{path}: empty array; expected {spec.kind} field {spec.name!r} of shape {shape}")
    if not image:  # a file's header was checked already; an in-memory array is checked here
        check_dtype(values.dtype, spec, target, str(path))
        check_shape(values.shape, spec, target, str(path), max_length)
    values = values.astype(np.float64, copy=False)
    if not np.isfinite(values).all():
        raise UserError(f"{path}: contains NaN or infinite values; expected finite {spec.name!r}")
    if spec.kind in (GRID, CODES):
        if spec.kind == GRID:
            if image and (spec.image_range or spec.value_range) is not None:
                lo, hi = spec.image_bounds
                values = lo + values * (hi - lo)
            values = resample_continuous(values, shape)
        else:
            values = resample_nearest(values, shape)
    elif spec.kind == SERIES:
        values = resample_series(values, shape[0])
    elif spec.kind == POINTS and image:
        values = image_points(values, shape[0], spec.image_bounds, path)
    if spec.codes is not None:
        bad = np.setdiff1d(np.unique(values), np.asarray(spec.codes))
        if bad.size:
            raise UserError(
                f"{path}: values {bad[:5].tolist()} are not codes of {spec.name!r}; "
                f"expected {list(spec.codes)}"
            )
    if spec.value_range is not None:
        lo, hi = spec.value_range
        if values.min() < lo - 1e-6 * max(1.0, abs(lo)) or values.max() > hi + 1e-6 * max(1.0, abs(hi)):
            raise UserError(
                f"{path}: values in [{values.min():.6g}, {values.max():.6g}]; expected {spec.name!r} "
                f"within [{lo:g}, {hi:g}]"
            )
    dtype = np.dtype(target.dtype)
    if np.issubdtype(dtype, np.integer):
        values = np.rint(values)
    return values.astype(dtype)
