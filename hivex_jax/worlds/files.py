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
Every problem raises `UserError` naming the file and what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------------------------------- reading
def read_image(path: Path, raw_codes: bool = False) -> np.ndarray:
    """A grey image as f64[H, W]: values in [0, 1], or the raw 8-bit values if `raw_codes`."""
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - Pillow comes with imageio, a dependency
        raise UserError(f"{path}: reading images needs Pillow (pip install pillow)") from exc
    try:
        with Image.open(path) as img:
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
                return np.asarray(img, np.float64) * (255.0 if raw_codes else 1.0)
            if mode == "RGB":
                img = img.convert("L")
                mode = "L"
            if mode == "L":
                values = np.asarray(img, np.float64)
                return values if raw_codes else values / 255.0
            if mode.startswith("I;16") or mode == "I":
                values = np.asarray(img, np.float64)
                if raw_codes:
                    return values
                if values.max(initial=0) > 65535 or values.min(initial=0) < 0:
                    raise UserError(f"{path}: 32-bit integer image; expected 8- or 16-bit grey")
                return values / 65535.0
            if mode == "F":
                return np.asarray(img, np.float64)
    except UserError:
        raise
    except Exception as exc:  # Pillow raises many types for unreadable files
        raise UserError(f"{path}: unreadable as an image ({type(exc).__name__}: {exc})") from exc
    raise UserError(f"{path}: image mode {mode!r}; expected grey (L, I;16) or RGB")


def read_array(path: Path) -> np.ndarray:
    """A numeric `.npy` array (no pickles)."""
    try:
        values = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise UserError(f"{path}: unreadable as .npy ({type(exc).__name__}: {exc})") from exc
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise UserError(f"{path}: dtype {values.dtype}; expected a numeric array")
    return values


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
def field_from_file(path: Path, spec: FieldSpec, target: jax.ShapeDtypeStruct) -> np.ndarray:
    """Read, resample and validate one field file into `target`'s shape and dtype."""
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
    values = read_image(path, raw_codes=spec.kind == CODES) if image else read_array(path)
    return _fit_field(values, path, spec, target, image)


def field_from_array(values: Any, spec: FieldSpec, target: jax.ShapeDtypeStruct, where: str) -> np.ndarray:
    """Validate and fit an in-memory array (e.g. from a `.npz`) as one field; `where` names it in errors."""
    return _fit_field(np.asarray(values), Path(where), spec, target, image=False)


def _fit_field(
    values: np.ndarray, path: Path, spec: FieldSpec, target: jax.ShapeDtypeStruct, image: bool
) -> np.ndarray:
    shape = tuple(target.shape)
    if values.size == 0:
        raise UserError(f"{path}: empty array; expected {spec.kind} field {spec.name!r} of shape {shape}")
    values = values.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise UserError(f"{path}: contains NaN or infinite values; expected finite {spec.name!r}")
    if spec.kind in (GRID, CODES):
        if values.ndim != 2:
            raise UserError(
                f"{path}: {values.ndim}-D array of shape {values.shape}; expected a 2-D (single-channel) "
                f"grid for {spec.name!r} (resampled to {shape})"
            )
        if spec.kind == GRID:
            if image and (spec.image_range or spec.value_range) is not None:
                lo, hi = spec.image_range or spec.value_range
                values = lo + values * (hi - lo)
            values = resample_continuous(values, shape)
        else:
            values = resample_nearest(values, shape)
    elif spec.kind == SERIES:
        if values.ndim != 1:
            raise UserError(
                f"{path}: {values.ndim}-D array of shape {values.shape}; expected a 1-D series for "
                f"{spec.name!r} (any length, resampled to {shape[0]} knots)"
            )
        values = resample_series(values, shape[0])
    elif spec.kind == POINTS:
        if image:
            values = image_points(values, shape[0], spec.image_range or spec.value_range, path)
        elif values.shape != shape:
            raise UserError(f"{path}: shape {values.shape}; expected {shape} for {spec.name!r}")
    elif values.shape != shape:
        raise UserError(f"{path}: shape {values.shape}; expected {shape} for {spec.name!r}")
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
    world = _read_world(Path(path), env, params)
    complete = getattr(worlds_module(env), "complete_world", None)
    return world if complete is None else complete(getattr(env, "unwrapped", env), params, world, str(path))


def _read_world(path: Path, env: Any, params: Any) -> dict[str, np.ndarray]:
    specs = {**field_specs(env), **input_specs(env)}
    shapes = {**world_shapes(env, params), **input_shapes(env, params)}
    env_id = getattr(env, "env_id", "")
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
        return {name: field_from_file(file, specs[name], shapes[name]) for name, file in files.items()}
    if path.suffix.lower() == ".npz":
        try:
            archive = dict(np.load(path, allow_pickle=False))
        except Exception as exc:
            raise UserError(f"{path}: unreadable as .npz ({type(exc).__name__}: {exc})") from exc
        unknown = sorted(set(archive) - set(specs))
        if unknown:
            raise UserError(
                f"{path}: no field(s) {unknown} in {env_id}; expected names from {', '.join(specs)}"
            )
        if not archive:
            raise UserError(f"{path}: empty archive; expected fields named after {', '.join(specs)}")
        return {k: field_from_array(v, specs[k], shapes[k], f"{path}[{k}]") for k, v in archive.items()}
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
    return {primary: field_from_file(path, specs[primary], shapes[primary])}


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
    from PIL import Image

    out = Path(out_dir)
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
