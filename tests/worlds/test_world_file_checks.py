"""World files: resampling rules (hand-computed) and one-line errors for bad files."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.worlds import load_world, save_world, world_of_seed
from hivex_jax.worlds.field_fit import image_points, resample_continuous, resample_nearest


def test_resample_area_average_when_shrinking_and_linear_when_growing():
    grid = np.arange(16, dtype=float).reshape(4, 4)
    # 4 -> 2: each output cell is the mean of a 2 x 2 block
    np.testing.assert_allclose(resample_continuous(grid, (2, 2)), [[2.5, 4.5], [10.5, 12.5]])
    # 2 -> 4 along one axis: cell centres at -0.25, 0.25, 0.75, 1.25 input cells, clamped at the edges
    np.testing.assert_allclose(resample_continuous(np.array([[0.0, 4.0]]), (1, 4)), [[0.0, 1.0, 3.0, 4.0]])
    np.testing.assert_array_equal(resample_continuous(grid, (4, 4)), grid)


def test_resample_nearest_keeps_codes():
    codes = np.array([[0, 5], [6, 1]])
    np.testing.assert_array_equal(resample_nearest(codes, (4, 4)), np.kron(codes, np.ones((2, 2), int)))
    np.testing.assert_array_equal(resample_nearest(np.kron(codes, np.ones((3, 3), int)), (2, 2)), codes)


def test_image_points_picks_the_brightest_pixels_at_their_centres(tmp_path):
    image = np.zeros((4, 4))
    image[0, 3], image[2, 1], image[3, 3] = 1.0, 0.9, 0.6
    points = image_points(image, 2, (-2.0, 2.0), tmp_path / "x.png")
    # pixel (row 0, col 3): x = -2 + 3.5 / 4 * 4 = 1.5, z = 2 - 0.5 = 1.5; pixel (2, 1): x = -0.5, z = -0.5
    np.testing.assert_allclose(points, [[1.5, 1.5], [-0.5, -0.5]])
    with pytest.raises(UserError, match="expected at least 5"):
        image_points(image, 5, (-2.0, 2.0), tmp_path / "x.png")


@pytest.fixture(scope="module")
def wrm():
    env, params = hivex_jax.make("WildfireResourceManagement-v0")
    return env.unwrapped, params


def test_height_image_is_scaled_and_resampled(wrm, tmp_path):
    env, params = wrm
    pixels = np.zeros((64, 64), np.uint8)
    pixels[:, 32:] = 255  # west half sea level, east half the image range's top (130 m)
    Image.fromarray(pixels).save(tmp_path / "h.png")
    heights = load_world(tmp_path / "h.png", env, params)["heights"]
    assert heights.shape == (env.fire_resolution, env.fire_resolution)
    half = env.fire_resolution // 2
    np.testing.assert_allclose(heights[:, :half], 0.0)
    np.testing.assert_allclose(heights[:, half:], 130.0, rtol=1e-6)


@pytest.mark.parametrize(
    "make_file, message",
    [
        (lambda p: Image.fromarray(np.zeros((8, 8, 4), np.uint8)).save(p / "heights.png"), "transparent"),
        (lambda p: np.save(p / "heights.npy", np.full((8, 8), np.nan)), "NaN"),
        (lambda p: np.save(p / "heights.npy", np.zeros((0, 8))), "empty"),
        (lambda p: np.save(p / "heights.npy", np.zeros((8, 8, 3))), "2-D"),
        (lambda p: np.save(p / "heights.npy", np.full((8, 8), -5.0)), r"within \[0, 2000\]"),
        (lambda p: (p / "heights.png").write_bytes(b"not a png"), "unreadable"),
        (lambda p: (p / "heights.png").write_bytes(b""), "empty file"),
        (lambda p: np.save(p / "fire.npy", np.full((8, 8), 9)), "not codes"),
        (lambda p: np.save(p / "wind_speed.npy", np.zeros(3)), "shape"),
        (lambda p: np.save(p / "lava.npy", np.zeros(3)), "no field 'lava'"),
    ],
)
def test_bad_files_get_one_line_errors_naming_the_file(wrm, tmp_path, make_file, message):
    env, params = wrm
    make_file(tmp_path)
    with pytest.raises(UserError, match=message) as err:
        load_world(tmp_path, env, params)
    text = str(err.value)
    assert "\n" not in text and str(tmp_path) in text


def test_exported_png_reads_back_within_half_a_grey_level(wrm, tmp_path):
    env, params = wrm
    world = world_of_seed(env, params, 6000)
    save_world(world, tmp_path, env, seed=6000, images=True)
    heights = load_world(tmp_path / "heights.png", env, params)["heights"]
    np.testing.assert_allclose(heights, world["heights"], atol=130.0 / 255 / 2 + 1e-4)
    fire = load_world(tmp_path / "fire.png", env, params)["fire"]
    np.testing.assert_array_equal(fire, world["fire"])  # codes are exact
