"""The downward camera shows the world: forest, the reforestation band, seeds, the station, the arena
edge; it is heading-up and its field of view grows with height."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dbr_helpers import KEY, action, flat_state

from hivex_jax.envs.drone_based_reforestation.observations import (
    GRAY_BAND,
    GRAY_BAND_RANGE,
    GRAY_FOREST,
    GRAY_SEED,
    camera,
)

FOREST_GRAY = round(GRAY_FOREST * 255)


@pytest.fixture(scope="module")
def params(env):
    return env.default_params()


def image(env, fns, state, params):
    obs, *_ = fns.step(KEY, state, action(env), params)
    return np.asarray(obs["visual"][..., 0])


def test_field_of_view_grows_with_height(env, fns, base_state, params):
    xz = [[0.0, 120.0]] * 3  # above the centre of a forest disc of radius 20
    forest = ((0.0, 120.0, 20.0),)
    fractions = []
    for h in (1.0, 20.0, 40.0):
        s = flat_state(env, params, base_state, xz, height_above_ground=h, forest=forest)
        fractions.append(np.mean(image(env, fns, s, params)[0] == FOREST_GRAY))
    assert fractions[0] == 1.0  # 7 m half-width: all forest
    assert fractions[0] > fractions[1] > fractions[2]
    half = 6.0 + 40.0  # camera_min_half_width + height * tan(45 deg)
    assert fractions[2] == pytest.approx(np.pi * 20**2 / (2 * half) ** 2, abs=0.03)


def test_heading_up_orientation(env, fns, base_state, params):
    forest = ((25.0, 120.0, 8.0),)  # 25 m east (+x) of the drones
    s = flat_state(env, params, base_state, [[0.0, 120.0]] * 3, height_above_ground=20.0, forest=forest)
    s = s.replace(yaw=jnp.asarray([0.0, np.pi, np.pi / 2]))  # facing +x, -x, +z
    img = image(env, fns, s, params) == FOREST_GRAY
    rows = np.arange(16)[:, None]
    cols = np.arange(16)[None, :]
    assert img[0].any() and np.mean(rows[img[0].nonzero()[0]]) < 4  # ahead: top rows
    assert img[1].any() and np.mean(rows[img[1].nonzero()[0]]) > 11  # behind: bottom rows
    assert img[2].any() and np.mean((cols + 0 * rows)[img[2]]) > 11  # forest to the right when facing +z


def test_band_seed_station_and_edge(env, fns, base_state, params):
    forest = ((100.0, 0.0, 20.0),)
    xz = [[60.0, 0.0], [0.0, 0.0], [199.0, 150.0]]  # 20 m from the forest; over the station; at the edge
    s = flat_state(env, params, base_state, xz, height_above_ground=4.0, forest=forest, yaw=0.0)
    img = image(env, fns, s, params)  # half-width 6 + 4 = 10 m
    centre = img[0, 7:9, 7:9].astype(float) / 255.0
    pot = (75 - 20) / 72.5
    np.testing.assert_allclose(centre, GRAY_BAND + GRAY_BAND_RANGE * pot, atol=0.03)
    assert np.all(img[1, 4:12, 4:12] == 255)  # the station pad (charging radius 7.5 m)
    assert np.all(img[2, 0] == 0) and np.all(img[2, 8:] > 0)  # beyond the arena edge (ahead) is black
    # a planted seed 20 m to the left (+z when facing +x), seen from 30 m (half-width 36 m)
    s2 = flat_state(
        env, params, base_state, xz, height_above_ground=30.0, forest=forest, yaw=0.0, planted=[(60.0, 20.0)]
    )
    img2 = image(env, fns, s2, params)
    seed_pixels = np.argwhere(img2[0] == round(GRAY_SEED * 255))
    assert len(seed_pixels) > 0 and np.all(seed_pixels[:, 1] < 8)  # left half
    img3 = image(env, fns, s2.replace(planted_count=jnp.int32(0)), params)
    assert not np.any(img3[0] == round(GRAY_SEED * 255))


def test_camera_size_32_contradiction_8(env, base_state, params):
    """The process figure's 32 x 32 camera (static option `camera_size=32`) sees the same ground."""
    forest = ((0.0, 120.0, 20.0),)
    s = flat_state(env, params, base_state, [[0.0, 120.0]] * 3, height_above_ground=40.0, forest=forest)
    p_cap = s.planted.shape[0]
    present = jnp.zeros(p_cap, bool)

    @jax.jit
    def shoot(state):
        args = (state.world, params, state.position, state.yaw, state.ground, state.planted, present)
        return camera(*args, 32), camera(*args, 16)

    big, small = shoot(s)
    assert big.shape == (3, 32, 32, 1) and big.dtype == jnp.uint8
    area = np.pi * 20**2 / (2 * (6.0 + 40.0)) ** 2  # the disc's share of the 92 m square
    assert np.mean(np.asarray(big[0, ..., 0]) == FOREST_GRAY) == pytest.approx(area, abs=0.015)
    # each 2 x 2 block of the 32 image covers one pixel of the 16 image: the forest agrees in the middle
    blocks = np.asarray(big[0, ..., 0]).reshape(16, 2, 16, 2) == FOREST_GRAY
    np.testing.assert_array_equal(
        blocks.all(axis=(1, 3))[6:10, 6:10], np.asarray(small[0, 6:10, 6:10, 0]) == FOREST_GRAY
    )
