"""World files: read a world (a folder, `.npz` or single file of PNG/JPG/BMP/.npy fields) fitted to the
env's grid, and write worlds out (`save_world`, with editable PNGs and previews).

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
decompressed (the limits and header checks: `hivex_jax.worlds.file_checks`; resampling and validating
one field: `hivex_jax.worlds.field_fit`). Every problem raises `UserError` naming the file and what was
expected; so does a `MemoryError` while loading and an OSError while writing.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds.field_fit import field_from_file, fit_field
from hivex_jax.worlds.fields import CODES, GRID, POINTS, FieldSpec, field_specs, input_specs, worlds_module
from hivex_jax.worlds.file_checks import FIELD_SUFFIXES, check_byte_size, max_series_length, read_npy


# ------------------------------------------------------------------------------------------ reading
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
            check_byte_size(info.file_size, specs[name], shapes[name], max_length, where)
            values = read_npy(
                lambda info=info: archive.open(info), where, specs[name], shapes[name], max_length
            )
            world[name] = fit_field(values, Path(where), specs[name], shapes[name], False, max_length)
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


# ------------------------------------------------------------------------------------------ writing
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
                lo, hi = spec.image_bounds
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
            lo_xz, hi_xz = spec.image_bounds
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
