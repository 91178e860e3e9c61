"""One world-field file read safely: the size limits of world files, and the checks made from a file's
header before it is decoded (`read_image`: Pillow's lazily read size; `read_array` / `read_npy`: the `.npy`
header's shape and dtype, and the file's byte size), so that a small hostile file is refused in one line
instead of being decoded into gigabytes (docs/worlds.md). Fitting what was read to the env's grid:
`hivex_jax.worlds.field_fit`; whole worlds: `hivex_jax.worlds.files`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import jax
import numpy as np

from hivex_jax.core.bounds import declared_bounds, resolve_bounds
from hivex_jax.core.errors import UserError
from hivex_jax.worlds.fields import CODES, GRID, SERIES, FieldSpec

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
        check_byte_size(path.stat().st_size, spec, target, max_length, str(path))
    return read_npy(lambda: open(path, "rb"), str(path), spec, target, max_length)


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


def read_npy(
    open_file: Callable[[], IO[bytes]],
    where: str,
    spec: FieldSpec | None,
    target: jax.ShapeDtypeStruct | None,
    max_length: int,
) -> np.ndarray:
    """The array of a `.npy` stream: header read and checked (`check_dtype`, and `check_shape` with
    a field) before its data is."""
    try:
        with open_file() as fp:
            shape, dtype = _npy_header(fp, where)
            check_dtype(dtype, spec, target, where)
            if spec is not None and target is not None:
                check_shape(shape, spec, target, where, max_length)
            fp.seek(0)
            return np.lib.format.read_array(fp, allow_pickle=False)
    except (UserError, MemoryError):
        raise
    except Exception as exc:
        raise UserError(f"{where}: unreadable as .npy ({type(exc).__name__}: {exc})") from exc


def check_dtype(
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


def check_shape(
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
    """Most elements an array file of `spec` may hold (`check_shape`'s bounds)."""
    if spec.kind in (GRID, CODES):
        return MAX_GRID_SIDE**2
    if spec.kind == SERIES:
        return max_length
    return int(np.prod(target.shape, dtype=np.int64))


def check_byte_size(
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
