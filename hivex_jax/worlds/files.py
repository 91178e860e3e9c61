"""World files: read PNG/JPG/BMP/.npy, resample to the env's grid, validate, and write worlds out.

A world on disk is a directory with one file per field, named by the field (`heights.npy`,
`fire.png`, ...; `world.json` optionally names the env and seed), or a `.npz` holding the fields by
name, or one file (image or `.npy`) that is the env's primary field. Fields a world leaves out keep
their generated values (from the world key). Rules (docs/worlds.md):

* GRID images: grey (or RGB, converted to luma by Pillow's "L" rule), 8-bit values / 255 or 16-bit
  / 65535, mapped linearly onto the field's value range; `.npy` values are taken as they are. Any size
  is resampled to the env's grid: area average along an axis that shrinks, linear interpolation
  between cell centres along one that grows.
* CODES images: the pixel value is the code (8-bit grey); resampled to the nearest cell.
* POINTS images: the pixels brighter than half are candidate points; the A brightest (ties: row-major
  order) become the positions, pixel centres mapped onto the field's value range in both axes.
* ARRAY fields: `.npy` of exactly the generated shape.
* SERIES fields: a 1-D `.npy` of any length L >= 1, values at L evenly spaced times over the episode,
  linearly resampled to the field's K knots (first and last kept; L = 1 is a constant).
Sizes and dtypes are checked from each file's header before it is decoded (at most `MAX_GRID_SIDE` a
side for grids, codes and points; series at most one value per step of the longest episode; arrays
exactly their shape; real numbers only), `.npz` members by name and declared size before any is
decompressed. Every problem raises `UserError` naming the file and what was expected; so does a
`MemoryError` while loading and an OSError while writing.
"""

from __future__ import annotations

import json
import struct
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import jax
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds.fields import (
    ARRAY,
    CODES,
    GRID,
    POINTS,
    SERIES,
    FieldSpec,
    field_specs,
    input_specs,
    worlds_module,
)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
ARRAY_SUFFIXES = (".npy",)
FIELD_SUFFIXES = IMAGE_SUFFIXES + ARRAY_SUFFIXES

# Limits, checked from a file's header before anything is decoded (docs/worlds.md), so that a small
# hostile file (a 13,000 x 13,000 one-colour PNG of 20 KB, a .npz of 1 MB holding a 1 GiB array of
# zeros) is refused instead of being decoded into gigabytes.
#: largest grid, codes or points file, pixels (or cells) a side: 8 x the finest grid any env can have
#: (AWS's `grid_size` <= 252); resampling averages a finer file down to the env's grid anyway, and
#: 2048 x 2048 decodes to 32 MiB as float64
MAX_GRID_SIDE = 2048
#: longest series file where the env's params bound no `max_steps` (else one value per step of the
#: longest episode they allow: `max_series_length`)
DEFAULT_MAX_SERIES_LENGTH = 1_000_001
#: bytes allowed for a .npy header (NumPy's reader refuses headers over 10,000 bytes)
NPY_HEADER_ROOM = 1 << 16


# ------------------------------------------------------------------------------------------- reading
def max_series_length(env: Any, params: Any) -> int:
    """Longest SERIES file `env` takes: one value per step of the longest episode its params allow
    (`max_steps`'s upper bound + 1), or `DEFAULT_MAX_SERIES_LENGTH` where they bound no `max_steps`."""
    from hivex_jax.core.bounds import declared_bounds, resolve_bounds

    table = declared_bounds(type(params))
    if "max_steps" not in table:
        return DEFAULT_MAX_SERIES_LENGTH
    _, hi = resolve_bounds({"max_steps": table["max_steps"]}, getattr(env, "unwrapped", env))["max_steps"]
    return int(min(hi, 2**31)) + 1


def read_image(path: Path, raw_codes: bool = False, max_side: int = MAX_GRID_SIDE) -> np.ndarray:
    """A grey image as f64[H, W]: values in [0, 1], or the raw 8-bit values if `raw_codes`. Its size is
    read from the header (Pillow opens lazily) and refused above `max_side` a side before decoding."""
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - Pillow comes with imageio, a dependency
        raise UserError(f"{path}: reading images needs Pillow (pip install pillow)") from exc
    too_large = f"expected at most {max_side} x {max_side} pixels (docs/worlds.md): scale it down"
    try:
        with warnings.catch_warnings():  # Pillow's bomb warning: the size check below is stricter
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            source = Image.open(path)
    except Image.DecompressionBombError as exc:  # over twice Pillow's own pixel limit
        raise UserError(f"{path}: image too large ({exc}); {too_large}") from exc
    except Exception as exc:  # Pillow raises many types for unreadable files
        raise UserError(f"{path}: unreadable as an image ({type(exc).__name__}: {exc})") from exc
    with source as img:
        width, height = img.size
        if width > max_side or height > max_side:
            raise UserError(f"{path}: image of {width} x {height} pixels; {too_large}")
        try:
            return _decode_grey(img, path, raw_codes)
        except (UserError, MemoryError):
            raise
        except Exception as exc:  # a header that reads but data that does not
            raise UserError(f"{path}: unreadable as an image ({type(exc).__name__}: {exc})") from exc


def _decode_grey(img: Any, path: Path, raw_codes: bool) -> np.ndarray:
    """Decode an opened Pillow image (size already checked) as `read_image` says."""
    img.load()
    mode = img.mode
    if mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
        mode = img.mode
    if mode in ("RGBA", "LA"):
        alpha = np.asarray(img.getchannel("A"))
        if alpha.min() < 255:
            raise UserError(f"{path}: has transparent pixels; expected a grey or RGB image")
        img = img.convert("RGB" if mode == "RGBA" else "L")
        mode = img.mode
    if mode == "1":
        values = np.asarray(img, np.float64)
        return values * 255.0 if raw_codes else values
    if mode == "RGB":
        img = img.convert("L")
        mode = "L"
    if mode == "L":
        values = np.asarray(img, np.float64)
        if not raw_codes:
            values /= 255.0
        return values
    if mode.startswith("I;16") or mode == "I":
        values = np.asarray(img, np.float64)
        if raw_codes:
            return values
        if values.max(initial=0) > 65535 or values.min(initial=0) < 0:
            raise UserError(f"{path}: 32-bit integer image; expected 8- or 16-bit grey")
        values /= 65535.0
        return values
    if mode == "F":
        return np.asarray(img, np.float64)
    raise UserError(f"{path}: image mode {mode!r}; expected grey (L, I;16) or RGB")


def read_array(
    path: Path,
    spec: FieldSpec | None = None,
    target: jax.ShapeDtypeStruct | None = None,
    max_length: int = DEFAULT_MAX_SERIES_LENGTH,
) -> np.ndarray:
    """A real-valued `.npy` array (no pickles, no complex numbers). With `spec` and `target`, its
    dtype, shape and size are checked against the field from the file's header before the data is read."""
    path = Path(path)
    if spec is not None and target is not None:
        _check_byte_size(path.stat().st_size, spec, target, max_length, str(path))
    return _read_npy(lambda: open(path, "rb"), str(path), spec, target, max_length)


def _npy_header(fp: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from a `.npy` header (format 1.0 or 2.0, what `np.save` writes for numbers);
    `fp` is left at the start of the data."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, _, dtype = fmt.read_array_header_2_0(fp)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]}; expected 1.0 or 2.0")
    except Exception as exc:
        raise UserError(f"{where}: unreadable as .npy ({type(exc).__name__}: {exc})") from exc
    return tuple(shape), np.dtype(dtype)


def _read_npy(
    open_file: Callable[[], IO[bytes]],
    where: str,
    spec: FieldSpec | None,
    target: jax.ShapeDtypeStruct | None,
    max_length: int,
) -> np.ndarray:
    """The array of a `.npy` stream: header read and checked (`_check_dtype`, and `_check_shape` with
    a field) before its data is."""
    try:
        with open_file() as fp:
            shape, dtype = _npy_header(fp, where)
            _check_dtype(dtype, spec, target, where)
            if spec is not None and target is not None:
                _check_shape(shape, spec, target, where, max_length)
            fp.seek(0)
            return np.lib.format.read_array(fp, allow_pickle=False)
    except (UserError, MemoryError):
        raise
    except Exception as exc:
        raise UserError(f"{where}: unreadable as .npy ({type(exc).__name__}: {exc})") from exc


def _check_dtype(
    dtype: np.dtype, spec: FieldSpec | None, target: jax.ShapeDtypeStruct | None, where: str
) -> None:
    """Refuse all but real numbers: integers and floats of up to 64 bits; booleans only for a boolean
    field (a flag also takes 0/1 numbers)."""
    wants_bool = target is not None and np.dtype(target.dtype) == np.bool_
    if dtype.kind == "b" and (wants_bool or target is None):
        return
    if dtype.fields is None and dtype.subdtype is None:
        if dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize <= 8):
            return
    kinds = {"b": "booleans", "c": "complex numbers", "O": "Python objects", "U": "text", "S": "bytes"}
    what = "records" if dtype.fields is not None else kinds.get(dtype.kind, "not real numbers")
    field = f" for {spec.name!r}" if spec is not None else ""
    expected = "booleans or 0/1 numbers" if wants_bool else "real numbers (integers or floats of <= 64 bits)"
    raise UserError(f"{where}: dtype {dtype} ({what}); expected {expected}{field}")


def _check_shape(
    shape: tuple[int, ...], spec: FieldSpec, target: jax.ShapeDtypeStruct, where: str, max_length: int
) -> None:
    """Refuse a shape `spec` cannot take: GRID/CODES 2-D of at most `MAX_GRID_SIDE` a side, SERIES 1-D
    of at most `max_length`, ARRAY and POINTS exactly `target`'s shape."""
    expected = tuple(target.shape)
    if spec.kind in (GRID, CODES):
        if len(shape) != 2:
            raise UserError(
                f"{where}: {len(shape)}-D array of shape {shape}; expected a 2-D (single-channel) "
                f"grid for {spec.name!r} (resampled to {expected})"
            )
        if max(shape) > MAX_GRID_SIDE:
            raise UserError(
                f"{where}: grid of {shape[0]} x {shape[1]}; expected at most {MAX_GRID_SIDE} x "
                f"{MAX_GRID_SIDE} for {spec.name!r} (resampled to {expected}; docs/worlds.md): scale it down"
            )
    elif spec.kind == SERIES:
        if len(shape) != 1:
            raise UserError(
                f"{where}: {len(shape)}-D array of shape {shape}; expected a 1-D series for "
                f"{spec.name!r} (any length, resampled to {expected[0]} knots)"
            )
        if shape[0] > max_length:
            raise UserError(
                f"{where}: series of {shape[0]:,} values; expected at most {max_length:,} (one per step "
                f"of the longest episode) for {spec.name!r}"
            )
    elif shape != expected:
        raise UserError(f"{where}: shape {shape}; expected {expected} for {spec.name!r}")


def _max_elements(spec: FieldSpec, target: jax.ShapeDtypeStruct, max_length: int) -> int:
    """Most elements an array file of `spec` may hold (`_check_shape`'s bounds)."""
    if spec.kind in (GRID, CODES):
        return MAX_GRID_SIDE**2
    if spec.kind == SERIES:
        return max_length
    return int(np.prod(target.shape, dtype=np.int64))


def _check_byte_size(
    size: int, spec: FieldSpec, target: jax.ShapeDtypeStruct, max_length: int, where: str
) -> None:
    """Refuse an array file (or `.npz` member, by its declared uncompressed size) larger than the largest
    `.npy` of `spec`: its most elements at 8 bytes each, plus a header."""
    limit = _max_elements(spec, target, max_length) * 8 + NPY_HEADER_ROOM
    if size > limit:
        raise UserError(
            f"{where}: {size:,} bytes; expected at most {limit:,} for {spec.name!r} ({spec.kind} field, "
            f"shape {tuple(target.shape)}; docs/worlds.md)"
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
    # passed on without a name here, so `_fit_field` frees the file's array as soon as it is converted
    return _fit_field(
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
    return _fit_field(np.asarray(values), Path(where), spec, target, False, max_length)


def _fit_field(
    values: np.ndarray,
    path: Path,
    spec: FieldSpec,
    target: jax.ShapeDtypeStruct,
    image: bool,
    max_length: int = DEFAULT_MAX_SERIES_LENGTH,
) -> np.ndarray:
    shape = tuple(target.shape)
    if values.size == 0:
        raise UserError(f"{path}: empty array; expected {spec.kind} field {spec.name!r} of shape {shape}")
    if not image:  # a file's header was checked already; an in-memory array is checked here
        _check_dtype(values.dtype, spec, target, str(path))
        _check_shape(values.shape, spec, target, str(path), max_length)
    values = values.astype(np.float64, copy=False)
    if not np.isfinite(values).all():
        raise UserError(f"{path}: contains NaN or infinite values; expected finite {spec.name!r}")
    if spec.kind in (GRID, CODES):
        if spec.kind == GRID:
            if image and (spec.image_range or spec.value_range) is not None:
                lo, hi = spec.image_range or spec.value_range
                values = lo + values * (hi - lo)
            values = resample_continuous(values, shape)
        else:
            values = resample_nearest(values, shape)
    elif spec.kind == SERIES:
        values = resample_series(values, shape[0])
    elif spec.kind == POINTS and image:
        values = image_points(values, shape[0], spec.image_range or spec.value_range, path)
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


# ----------------------------------------------------------------------------------------- worlds
def world_shapes(env: Any, params: Any) -> dict[str, jax.ShapeDtypeStruct]:
    """Shapes and dtypes of `env`'s world fields (no world is built)."""
    module = worlds_module(env)
    raw = getattr(env, "unwrapped", env)
    return jax.eval_shape(lambda k: module.world_fields(raw.reset(k, params)[1]), world_key(0))


def input_shapes(env: Any, params: Any) -> dict[str, jax.ShapeDtypeStruct]:
    """Shapes and dtypes of `env`'s input fields (`input_specs`; empty for most envs)."""
    module = worlds_module(env)
    if not getattr(module, "INPUT_FIELDS", ()):
        return {}
    return module.input_shapes(getattr(env, "unwrapped", env), params)


def load_world(path: str | Path, env: Any, params: Any) -> dict[str, np.ndarray]:
    """One world from a directory, `.npz` or single field file: `{field: array}` fitted to `env`'s grid
    (only the fields the files give; input fields converted by the env's `complete_world`)."""
    try:
        world = _read_world(Path(path), env, params)
        complete = getattr(worlds_module(env), "complete_world", None)
        return (
            world if complete is None else complete(getattr(env, "unwrapped", env), params, world, str(path))
        )
    except MemoryError as exc:  # files are bounded before they are read, but memory may be short anyway
        detail = f": {exc}" if str(exc) else ""
        raise UserError(
            f"{path}: not enough memory to load this world (MemoryError{detail}); "
            "docs/worlds.md gives the size limits of world files"
        ) from exc


def _read_world(path: Path, env: Any, params: Any) -> dict[str, np.ndarray]:
    specs = {**field_specs(env), **input_specs(env)}
    shapes = {**world_shapes(env, params), **input_shapes(env, params)}
    env_id = getattr(env, "env_id", "")
    max_length = max_series_length(env, params)
    if path.is_dir():
        meta = path / "world.json"
        if meta.is_file():
            try:
                named = json.loads(meta.read_text()).get("env")
            except (json.JSONDecodeError, AttributeError) as exc:
                raise UserError(f"{meta}: unreadable JSON ({exc})") from exc
            if named and named != env_id:
                raise UserError(f"{meta}: a world of {named}; expected one of {env_id}")
        files: dict[str, Path] = {}
        for file in sorted(path.iterdir()):  # folders (the export's preview/) are not read
            if file.name == "world.json" or file.name.startswith(".") or not file.is_file():
                continue
            if file.suffix.lower() not in FIELD_SUFFIXES:
                continue
            if file.stem not in specs:
                raise UserError(
                    f"{file}: no field {file.stem!r} in {env_id}; expected one of {', '.join(specs)}"
                )
            if file.stem in files:  # which one the user edited is not ours to guess
                raise UserError(
                    f"{path}: {files[file.stem].name} and {file.name} both give field {file.stem!r}: keep one"
                )
            files[file.stem] = file
        if not files:
            raise UserError(f"{path}: no field files; expected files named after {', '.join(specs)}")
        return {
            name: field_from_file(file, specs[name], shapes[name], max_length) for name, file in files.items()
        }
    if path.suffix.lower() == ".npz":
        return _read_npz(path, specs, shapes, env_id, max_length)
    primary = worlds_module(env).PRIMARY_FIELD
    if path.parent.name == PREVIEW_DIR and (path.parent.parent / "world.json").is_file():
        raise UserError(
            f"{path}: a contrast-stretched preview (its legend.txt), not a world file; load "
            f"{path.parent.parent / path.name} or the folder {path.parent.parent}"
        )
    if path.stem in specs:
        primary = path.stem
    else:
        _check_single_file_name(path, specs, primary)
    if primary is None:
        raise UserError(
            f"{path}: {env_id} has no single-file world; expected a directory or .npz with fields "
            f"{', '.join(specs)}"
        )
    return {primary: field_from_file(path, specs[primary], shapes[primary], max_length)}


def _read_npz(
    path: Path,
    specs: Mapping[str, FieldSpec],
    shapes: Mapping[str, jax.ShapeDtypeStruct],
    env_id: str,
    max_length: int,
) -> dict[str, np.ndarray]:
    """The fields of a `.npz` world, bounded before anything is decompressed: the member count from the
    zip's end record, every member's name (a field) and declared uncompressed size, then each member's
    .npy header; members are read by name, one at a time."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    entries = _zip_entry_count(path)
    if entries is not None and entries > len(specs):
        raise UserError(
            f"{path}: {entries:,} members; expected at most {len(specs)}, one per field of {env_id} "
            f"({', '.join(specs)})"
        )
    try:
        archive = zipfile.ZipFile(path)
    except Exception as exc:
        raise UserError(f"{path}: unreadable as .npz ({type(exc).__name__}: {exc})") from exc
    with archive:
        members: dict[str, zipfile.ZipInfo] = {}
        unknown = []
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")  # np.savez's member names (np.load keys drop .npy)
            if name not in specs:
                unknown.append(name)
            elif name in members:
                raise UserError(f"{path}: field {name!r} given by two members: keep one")
            else:
                members[name] = info
        if unknown:
            raise UserError(
                f"{path}: no field(s) {sorted(unknown)} in {env_id}; expected names from {', '.join(specs)}"
            )
        if not members:
            raise UserError(f"{path}: empty archive; expected fields named after {', '.join(specs)}")
        world = {}
        for name, info in members.items():
            where = f"{path}[{name}]"
            _check_byte_size(info.file_size, specs[name], shapes[name], max_length, where)
            values = _read_npy(
                lambda info=info: archive.open(info), where, specs[name], shapes[name], max_length
            )
            world[name] = _fit_field(values, Path(where), specs[name], shapes[name], False, max_length)
            del values  # one member in memory at a time
        return world


def _zip_entry_count(path: Path) -> int | None:
    """How many members a zip's end record declares (read from the file's tail: `zipfile` builds one
    object per member before anything can be checked), or None where no end record is found."""
    with open(path, "rb") as file:
        file.seek(0, 2)
        size = file.tell()
        file.seek(max(0, size - (22 + 0xFFFF)))  # the end record (22 bytes) and a comment of up to 64 KiB
        tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    (entries,) = struct.unpack_from("<H", tail, at + 10)
    return entries  # 0xFFFF (a zip64 archive's marker) is more than any env has fields


def _check_single_file_name(path: Path, specs: Mapping[str, FieldSpec], primary: str | None) -> None:
    """A single file not named after a field is the primary field, unless its name says otherwise: it
    sits in an exported world folder (`world.json`: every file there is named after its field) or its
    name contains another field's name (`fire_edited.png` is not the heights map). UserError then."""
    import re

    named = [
        name
        for name in specs
        if name != primary and re.search(rf"(^|[^a-z0-9]){re.escape(name)}([^a-z0-9]|$)", path.stem.lower())
    ]
    exported = (path.parent / "world.json").is_file()
    if named or exported:
        why = f"its name mentions field {named[0]!r}" if named else f"{path.parent} is a world folder"
        raise UserError(
            f"{path}: not named after a field ({why}); a single file not named after a field is the "
            f"primary field {primary!r}: name it after one of {', '.join(specs)}"
        )


def world_of_seed(env: Any, params: Any, seed: int) -> dict[str, np.ndarray]:
    """The generated world of world seed `seed` as `{field: numpy array}`."""
    module = worlds_module(env)
    raw = getattr(env, "unwrapped", env)
    fields = jax.jit(lambda k: module.world_fields(raw.reset(k, params)[1]))(world_key(seed))
    return {k: np.asarray(v) for k, v in fields.items()}


def save_world(
    world: Mapping[str, np.ndarray],
    out_dir: str | Path,
    env: Any,
    seed: int | None = None,
    images: bool = False,
) -> list[Path]:
    """Write `world` as `<field>.npy` files (exact) plus `world.json`; with `images`, each GRID/CODES
    field as an editable `<field>.png` instead of its `.npy` (read back as any image: GRID 16-bit over
    its image range, to within 1/65535 of it; CODES 8-bit, exact) and contrast-stretched previews with
    a legend in `preview/` (not read back). Returns the paths written."""
    out = Path(out_dir)
    with _writing(out):
        return _save_world(world, out, env, seed, images)


@contextmanager
def _writing(out: Path) -> Iterator[None]:
    """Turn an OSError of writing under `out` (an unwritable or impossible path) into one `UserError`
    line naming the path and the reason."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        failed = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(out) else ""
        raise UserError(f"{out}: cannot write the world there: {reason}{failed}") from exc


def _save_world(
    world: Mapping[str, np.ndarray], out: Path, env: Any, seed: int | None, images: bool
) -> list[Path]:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    specs = field_specs(env)
    written = []
    for name, values in world.items():
        values = np.asarray(values)
        spec = specs[name]
        if images and spec.kind in (GRID, CODES) and values.ndim == 2:
            file = out / f"{name}.png"
            if spec.kind == CODES:
                Image.fromarray(values.astype(np.uint8)).save(file)
            else:  # the range images are read with (16-bit: 1/65535 of it, closer than the float32 grid)
                lo, hi = spec.image_range or spec.value_range
                grey = np.rint(np.clip((values - lo) / (hi - lo), 0, 1) * 65535).astype(np.uint16)
                Image.fromarray(grey).save(file)
            stale = out / f"{name}.npy"  # an earlier export's exact file would conflict with the PNG
            if stale.is_file():
                stale.unlink()
        else:
            file = out / f"{name}.npy"
            np.save(file, values)
        written.append(file)
    if images:
        written += save_previews(world, out / PREVIEW_DIR, env)
    meta = {
        "env": getattr(env, "env_id", ""),
        "world_seed": seed,
        "fields": {
            k: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)} for k, v in world.items()
        },
    }
    (out / "world.json").write_text(json.dumps(meta, indent=1) + "\n")
    written.append(out / "world.json")
    return written


#: the export's sub-folder of pictures to look at; loading a world folder reads no sub-folder
PREVIEW_DIR = "preview"
#: previews are scaled up (nearest) to at least this many pixels a side, so an 8 x 8 grid is visible
PREVIEW_MIN_SIDE = 256


def save_previews(world: Mapping[str, np.ndarray], out_dir: str | Path, env: Any) -> list[Path]:
    """Contrast-stretched 8-bit pictures of `world`'s GRID/CODES fields (the field's min -> black, max ->
    white) and POINTS fields (white dots over the image range), plus `legend.txt` saying what grey
    means in each. For looking at only: the stretch differs per world, so they are not read back."""
    from PIL import Image

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specs = field_specs(env)
    legend = [
        "Previews for looking at, not world files: loading a world folder ignores this folder.",
        "Each grid picture is contrast-stretched: black = the field's smallest value, white = its largest,",
        "grey g (0..255) = smallest + g / 255 x (largest - smallest). To edit a field, edit the world's",
        "<field>.png (export with --png) or <field>.npy one level up; docs/worlds.md says how each is read.",
        "",
    ]
    written = []
    for name, values in world.items():
        values = np.asarray(values)
        spec = specs[name]
        if spec.kind in (GRID, CODES) and values.ndim == 2:
            lo, hi = float(values.min()), float(values.max())
            span = hi - lo if hi > lo else 1.0
            pixels = np.rint((values.astype(np.float64) - lo) / span * 255).astype(np.uint8)
            line = (
                f"{name}.png: black = {lo:.6g}, white = {hi:.6g}"
                if hi > lo
                else (f"{name}.png: all black = {lo:.6g} (the field is constant)")
            )
        elif spec.kind == POINTS and values.ndim == 2 and values.shape[-1] == 2:
            lo_xz, hi_xz = spec.image_range or spec.value_range
            side = PREVIEW_MIN_SIDE
            pixels = np.zeros((side, side), np.uint8)
            col = np.clip(((values[:, 0] - lo_xz) / (hi_xz - lo_xz) * side).astype(int), 0, side - 1)
            row = np.clip(((hi_xz - values[:, 1]) / (hi_xz - lo_xz) * side).astype(int), 0, side - 1)
            for dr in (-1, 0, 1):  # 3 x 3 dots
                for dc in (-1, 0, 1):
                    pixels[np.clip(row + dr, 0, side - 1), np.clip(col + dc, 0, side - 1)] = 255
            line = (
                f"{name}.png: white dots = the {len(values)} points, x in [{lo_xz:g}, {hi_xz:g}] left to "
                f"right, z in [{lo_xz:g}, {hi_xz:g}] bottom to top (points outside: on the edge)"
            )
        else:
            continue
        scale = max(1, -(-PREVIEW_MIN_SIDE // max(pixels.shape)))
        pixels = pixels.repeat(scale, axis=0).repeat(scale, axis=1)
        Image.fromarray(pixels).save(out / f"{name}.png")
        written.append(out / f"{name}.png")
        legend.append(f"{line}; row 0 = north" + (f"; {spec.doc}" if spec.doc else ""))
    (out / "legend.txt").write_text("\n".join(legend) + "\n")
    written.append(out / "legend.txt")
    return written
