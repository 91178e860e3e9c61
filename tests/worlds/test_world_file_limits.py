"""World files are bounded from their headers before anything is decoded: hostile files (a tiny PNG of
13,000 x 13,000 pixels, a 1 MB .npz holding a 1 GiB array) are refused with one line and without the
memory their contents would take; dtypes must be real numbers; memory and write errors are one line."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import hivex_jax
from hivex_jax.cli import main
from hivex_jax.core.errors import UserError
from hivex_jax.envs.wind_farm_control.params import PARAM_BOUNDS as WFC_BOUNDS
from hivex_jax.worlds import field_fit, file_checks, load_world, save_world, world_of_seed
from hivex_jax.worlds.file_checks import MAX_GRID_SIDE, max_series_length

#: what a hostile file may cost the process that loads it, peak resident memory in all
PEAK_LIMIT_MB = 500
GIB = 1 << 30


# --------------------------------------------------------------------------------- hostile files
def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    """The `.npy` header (format 1.0) of an array of `shape` and dtype `descr`."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _deflated_zeros(header: bytes, zero_bytes: int) -> tuple[list[tuple[bytes, int]], int, int]:
    """Raw DEFLATE of `header` + `zero_bytes` zeros as (piece, repeats) pieces, CRC-32 and size, built
    without holding the zeros: one 16 MiB block of zeros is compressed once and repeated (each piece
    ends in a full flush, which resets the compressor, so the copies decode the same)."""
    chunk = 16 << 20
    assert zero_bytes % chunk == 0
    zeros = bytes(chunk)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = compressor.compress(header) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush()
    crc = zlib.crc32(header)
    for _ in range(zero_bytes // chunk):
        crc = zlib.crc32(zeros, crc)
    return [(head, 1), (block, zero_bytes // chunk), (tail, 1)], crc, len(header) + zero_bytes


def _write_zip(path: Path, members: list[tuple[str, list[tuple[bytes, int]], int, int]]) -> None:
    """A zip of DEFLATE members (name, pieces, crc, uncompressed size), streamed piece by piece."""
    central = b""
    with open(path, "wb") as out:
        for name, pieces, crc, size in members:
            encoded = name.encode()
            packed = sum(len(piece) * repeats for piece, repeats in pieces)
            offset = out.tell()
            out.write(
                struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, packed, size, len(encoded), 0)
            )
            out.write(encoded)
            for piece, repeats in pieces:
                for _ in range(repeats):
                    out.write(piece)
            fields = (20, 20, 0, 8, 0, 0x21, crc, packed, size, len(encoded), 0, 0, 0, 0, 0, offset)
            central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *fields) + encoded
        start = out.tell()
        out.write(central)
        out.write(
            struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0)
        )


def _gib_npz(path: Path, member: str) -> Path:
    """A .npz of about 1 MB whose member `member` is a 1 GiB float64 array of zeros (valid zip, CRC)."""
    header = _npy_header((GIB // 8,))
    pieces, crc, size = _deflated_zeros(header, GIB)
    _write_zip(path, [(member, pieces, crc, size)])
    return path


def _big_png(path: Path, width: int, height: int) -> Path:
    """A one-colour 1-bit PNG of width x height pixels (a few KB to a few hundred KB on disk)."""
    Image.new("1", (width, height)).save(path)
    return path


def test_deflated_zeros_decode_to_the_header_and_the_zeros():
    """The hostile .npz builder's trick (repeated full-flush blocks) gives a valid stream (small here)."""
    header = _npy_header((4,))
    pieces, crc, size = _deflated_zeros(header, 2 * (16 << 20))
    data = zlib.decompress(b"".join(piece * repeats for piece, repeats in pieces), -15)
    assert len(data) == size == len(header) + 2 * (16 << 20)
    assert data[: len(header)] == header and not any(data[len(header) :]) and zlib.crc32(data) == crc


# ------------------------------------------------------------------------ checks, in this process
@pytest.fixture(scope="module")
def wrm():
    env, params = hivex_jax.make("WildfireResourceManagement-v0")
    return env.unwrapped, params


@pytest.fixture(scope="module")
def wfc():
    env, params = hivex_jax.make("WindFarmControl-v0")
    return getattr(env, "unwrapped", env), params


def _refused(path, env, params, *messages: str) -> str:
    with pytest.raises(UserError) as err:
        load_world(path, env, params)
    text = str(err.value)
    assert "\n" not in text and str(path) in text
    for message in messages:
        assert message in text, text
    return text


@pytest.mark.parametrize("name", ["heights.png", "fire.png", "map.png"])
def test_png_over_the_size_limit_is_refused_from_its_header(wrm, tmp_path, name, monkeypatch):
    env, params = wrm
    path = _big_png(tmp_path / name, 13_000, 13_000)
    assert path.stat().st_size < 1_000_000  # 169 M pixels in a small file
    decoded = []
    monkeypatch.setattr(file_checks, "_decode_grey", lambda *a: decoded.append(a))
    _refused(path, env, params, "13000 x 13000 pixels", f"at most {MAX_GRID_SIDE} x {MAX_GRID_SIDE}")
    assert decoded == []  # refused before decoding


def test_image_size_limit_is_per_side_and_inclusive(wrm, tmp_path):
    env, params = wrm
    # 2048 x 1 is taken (and resampled: one row of zeros gives a flat sea-level grid), 2049 x 1 is not
    heights = load_world(_big_png(tmp_path / "heights.png", MAX_GRID_SIDE, 1), env, params)["heights"]
    assert heights.shape == (env.fire_resolution,) * 2 and not heights.any()
    _refused(_big_png(tmp_path / "wide.png", MAX_GRID_SIDE + 1, 1), env, params, f"{MAX_GRID_SIDE + 1} x 1")
    _refused(_big_png(tmp_path / "tall.png", 1, MAX_GRID_SIDE + 1), env, params, f"1 x {MAX_GRID_SIDE + 1}")


def test_image_beyond_pillows_own_limit_is_one_line(wrm, tmp_path):
    env, params = wrm  # 200 M pixels: Pillow refuses it itself (DecompressionBombError) when opening
    _refused(_big_png(tmp_path / "heights.png", 20_000, 10_000), env, params, "too large", "at most 2048")


def test_points_image_over_the_limit_is_refused(wfc, tmp_path):
    env, params = wfc
    _refused(_big_png(tmp_path / "layout.png", 4_000, 10), env, params, "4000 x 10 pixels")


def test_npy_sizes_are_checked_from_the_header_and_file_size(wrm, wfc, tmp_path):
    env, params = wrm
    # header-only: a 16384 x 8192 grid claimed by a 128-byte file
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "heights.npy").write_bytes(_npy_header((16_384, 8_192)))
    _refused(
        tmp_path / "a", env, params, "grid of 16384 x 8192", f"at most {MAX_GRID_SIDE} x {MAX_GRID_SIDE}"
    )
    # a sparse 1 GiB .npy (takes no disk space): refused by its size before its header is read
    (tmp_path / "b").mkdir()
    with open(tmp_path / "b" / "flammability.npy", "wb") as out:
        out.write(_npy_header((16_384, 8_192)))
        out.truncate(GIB + 128)
    limit = MAX_GRID_SIDE**2 * 8 + file_checks.NPY_HEADER_ROOM
    _refused(tmp_path / "b", env, params, f"{GIB + 128:,} bytes", f"at most {limit:,}")
    # an array field takes exactly its shape, checked from the header
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "wind_speed.npy").write_bytes(_npy_header((GIB // 8,)))
    _refused(tmp_path / "c", env, params, f"shape ({GIB // 8},); expected ()")
    # a series: at most one value per step of the longest episode WFC's params allow
    env, params = wfc
    longest = WFC_BOUNDS["max_steps"][1] + 1
    assert max_series_length(env, params) == longest == 1_000_001
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "wind_direction_schedule.npy").write_bytes(_npy_header((longest + 1,)))
    _refused(tmp_path / "d", env, params, f"series of {longest + 1:,} values", f"at most {longest:,}")
    np.save(tmp_path / "d" / "wind_direction_schedule.npy", np.zeros(longest))  # the longest is taken
    assert load_world(tmp_path / "d", env, params)["wind_direction_schedule"].shape == (64,)


def test_npz_unknown_member_is_refused_before_it_is_decompressed(wrm, tmp_path):
    env, params = wrm
    # a member whose compressed data is garbage: reading it would fail, so the name must decide first
    garbage = [(b"\xff" * 64, 1)]
    _write_zip(
        tmp_path / "w.npz", [("heights.npy", *_good_member(np.zeros((4, 4)))), ("lava.npy", garbage, 0, 99)]
    )
    _refused(tmp_path / "w.npz", env, params, "no field(s) ['lava']")


def _good_member(values: np.ndarray) -> tuple[list[tuple[bytes, int]], int, int]:
    buf = io.BytesIO()
    np.save(buf, values)
    data = buf.getvalue()
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return [(compressor.compress(data) + compressor.flush(), 1)], zlib.crc32(data), len(data)


def test_npz_member_sizes_and_headers_are_checked_before_reading(wfc, tmp_path):
    env, params = wfc
    # the declared uncompressed size (1 GiB) refuses the member before it is opened
    _gib_npz(tmp_path / "big.npz", "wind_direction_schedule.npy")
    _refused(tmp_path / "big.npz", env, params, "[wind_direction_schedule]", f"{GIB + 128:,} bytes")
    # a small member whose header claims a huge series: refused from the header
    header = _npy_header((GIB // 8,))
    _write_zip(tmp_path / "head.npz", [("wind_direction_schedule.npy", *_good_member_bytes(header))])
    _refused(tmp_path / "head.npz", env, params, f"series of {GIB // 8:,} values")
    # more members than the env has fields: refused from the zip's end record
    with zipfile.ZipFile(tmp_path / "many.npz", "w") as archive:
        for i in range(40):
            archive.writestr(f"m{i}.npy", b"")
    _refused(tmp_path / "many.npz", env, params, "40 members", "expected at most 8")
    # two members for one field (np.load would key both as 'main_wind_angle')
    with zipfile.ZipFile(tmp_path / "twice.npz", "w") as archive:
        for name in ("main_wind_angle.npy", "main_wind_angle"):
            buf = io.BytesIO()
            np.save(buf, np.float32(0.5))
            archive.writestr(name, buf.getvalue())
    _refused(tmp_path / "twice.npz", env, params, "'main_wind_angle' given by two members")


def _good_member_bytes(data: bytes) -> tuple[list[tuple[bytes, int]], int, int]:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return [(compressor.compress(data) + compressor.flush(), 1)], zlib.crc32(data), len(data)


def test_npz_world_still_loads_member_by_member(wfc, tmp_path):
    env, params = wfc
    world = world_of_seed(env, params, 6000)
    np.savez_compressed(tmp_path / "w.npz", **world)
    loaded = load_world(tmp_path / "w.npz", env, params)
    assert set(loaded) == set(world)
    for name, values in world.items():
        np.testing.assert_array_equal(loaded[name], values)


@pytest.mark.parametrize(
    "values, message",
    [
        (np.zeros(10, np.complex64), "complex numbers"),
        (np.zeros(10, bool), "booleans"),
        (np.zeros(10, np.longdouble), "floats of <= 64 bits"),
        (np.array(["a", "b"]), "text"),
        (np.zeros(3, [("a", "f4"), ("b", "f4")]), "records"),
        (np.array([0.0, None], dtype=object), "Python objects"),
    ],
)
def test_series_takes_real_numbers_only(wfc, tmp_path, values, message):
    env, params = wfc
    if values.dtype == np.longdouble and values.dtype.itemsize <= 8:
        pytest.skip("long double is float64 on this platform")
    np.save(tmp_path / "wind_direction_schedule.npy", values, allow_pickle=values.dtype.hasobject)
    _refused(tmp_path, env, params, message, "for 'wind_direction_schedule'")
    # the same checks for an in-memory array (`field_from_array`) and for a .npz member
    if not values.dtype.hasobject:
        np.savez(tmp_path / "w.npz", wind_direction_schedule=values)
        _refused(tmp_path / "w.npz", env, params, message)


def test_flags_take_booleans_and_numbers_take_integers(wfc, tmp_path):
    env, params = wfc
    np.save(tmp_path / "wind_schedule_given.npy", np.bool_(True))
    np.save(tmp_path / "wind_direction_schedule.npy", np.arange(5, dtype=np.int16))
    world = load_world(tmp_path, env, params)
    assert world["wind_schedule_given"].dtype == bool and world["wind_schedule_given"]
    np.testing.assert_allclose(world["wind_direction_schedule"][[0, -1]], [0.0, 4.0])
    np.save(tmp_path / "main_wind_angle.npy", np.bool_(True))  # a number wanted: a boolean is refused
    _refused(tmp_path, env, params, "main_wind_angle.npy", "booleans", "for 'main_wind_angle'")


# ------------------------------------------------------------------------- memory and write errors
def test_memory_error_is_one_line(wrm, tmp_path, monkeypatch, capsys):
    env, params = wrm
    np.save(tmp_path / "heights.npy", np.zeros((8, 8)))

    def no_memory(*args):
        raise MemoryError("Unable to allocate 1.00 GiB")

    monkeypatch.setattr(field_fit, "resample_continuous", no_memory)
    _refused(tmp_path, env, params, "not enough memory", "Unable to allocate 1.00 GiB")
    assert main(["world", "show", str(tmp_path), "--env", "WildfireResourceManagement-v0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not enough memory" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_export_to_an_impossible_folder_is_one_line(capsys):
    argv = ["world", "export", "--env", "WindFarmControl-v0", "--world", "1", "--out", "/proc/x"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "/proc/x" in err and "No such file or directory" in err


def test_write_error_during_save_is_one_line(wfc, tmp_path):
    env, params = wfc
    (tmp_path / "positions.npy").mkdir()  # a folder where a field file goes
    with pytest.raises(UserError) as err:
        save_world(world_of_seed(env, params, 1), tmp_path, env)
    text = str(err.value)
    assert "\n" not in text and "cannot write the world there" in text and "positions.npy" in text


# --------------------------------------------------------------------- peak memory, in a child process
CHILD = """
import json, sys
import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.worlds import load_world, world_shapes


def status_mb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024


env, params = hivex_jax.make(sys.argv[1])
env = getattr(env, "unwrapped", env)
world_shapes(env, params)  # traced once before measuring: what loading costs besides the file
setup_peak = status_mb("VmHWM")
try:  # the high-water mark back to the current size (Linux >= 4.0), so the load's own peak shows
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    before = status_mb("VmRSS")
except OSError:
    before = None
try:
    load_world(sys.argv[2], env, params)
    error = None
except UserError as exc:
    error = str(exc)
peak = max(setup_peak, status_mb("VmHWM"))
rise = None if before is None else status_mb("VmHWM") - before
print(json.dumps({"error": error, "peak_mb": peak, "rise_mb": rise}))
"""


def _load_in_child(env_id: str, path: Path) -> dict:
    """Load `path` in a fresh process: its error (or None), the process's peak resident memory and (where
    Linux can reset the high-water mark) how far loading raised it, MB. The child reads its own VmHWM:
    its `ru_maxrss` would start from this (pytest) process's size, which Linux carries across fork and
    exec."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, env_id, str(path)], capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _png_13000(tmp: Path) -> Path:
    return _big_png(tmp / "heights.png", 13_000, 13_000)


def _npz_gib_schedule(tmp: Path) -> Path:
    return _gib_npz(tmp / "w.npz", "wind_direction_schedule.npy")


def _npz_gib_unknown(tmp: Path) -> Path:
    return _gib_npz(tmp / "w.npz", "lava.npy")


def _largest_png(tmp: Path) -> Path:
    ramp = np.linspace(0, 65535, MAX_GRID_SIDE, dtype=np.uint16)
    Image.fromarray(np.tile(ramp, (MAX_GRID_SIDE, 1))).save(tmp / "heights.png")
    return tmp / "heights.png"


def _largest_npy(tmp: Path) -> Path:
    np.save(tmp / "flammability.npy", np.zeros((MAX_GRID_SIDE, MAX_GRID_SIDE), np.int64))
    return tmp / "flammability.npy"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status (Linux)")
@pytest.mark.parametrize(
    "env_id, make_file, message",
    [
        ("WildfireResourceManagement-v0", _png_13000, "13000 x 13000 pixels"),
        ("WindFarmControl-v0", _npz_gib_schedule, f"{GIB + 128:,} bytes"),
        ("WindFarmControl-v0", _npz_gib_unknown, "no field(s) ['lava']"),
        ("WildfireResourceManagement-v0", _largest_png, None),  # the largest files taken
        ("WildfireResourceManagement-v0", _largest_npy, None),
    ],
    ids=["png_13000", "npz_1gib_field", "npz_1gib_unknown", "largest_png", "largest_npy"],
)
def test_peak_memory_of_loading_stays_bounded(tmp_path, env_id, make_file, message):
    path = make_file(tmp_path)
    result = _load_in_child(env_id, path)
    if message is None:
        assert result["error"] is None
    else:
        assert result["error"] is not None and message in result["error"] and "\n" not in result["error"]
    assert result["peak_mb"] < PEAK_LIMIT_MB, result
    if result["rise_mb"] is not None:
        # a refusal decodes nothing (measured: <= 2 MB); the largest files taken decode to 32 MiB of
        # float64 (measured: 64-70 MB with the copies in flight)
        assert result["rise_mb"] < (20 if message else 150), result
