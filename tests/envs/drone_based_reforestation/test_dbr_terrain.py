"""hivex_jax.procgen.terrain: the camera-grid evaluations equal the pointwise ones; distances by hand."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.procgen.terrain import (
    disc_union_distance,
    disc_union_distance_on_grid,
    grid_squared_distances,
    hashed_uniform,
    plane_wave_field,
    plane_wave_field_on_grid,
    random_plane_waves,
)

ANGLE = 0.7
FWD = jnp.asarray([np.cos(ANGLE), np.sin(ANGLE)], jnp.float32)
RIGHT = jnp.asarray([np.sin(ANGLE), -np.cos(ANGLE)], jnp.float32)  # FWD turned 90 degrees clockwise
CENTRE = jnp.asarray([13.0, -41.0], jnp.float32)
ROWS = jnp.linspace(-20.0, 20.0, 5)
COLS = jnp.linspace(-30.0, 30.0, 7)


def grid_points() -> jax.Array:
    """f32[R, C, 2]: centre + r * FWD + c * RIGHT."""
    return CENTRE + ROWS[:, None, None] * FWD + COLS[None, :, None] * RIGHT


def test_plane_wave_field_on_grid_equals_pointwise():
    waves, phases = random_plane_waves(jnp.uint32(123), 1, 12, 70.0)
    grid = plane_wave_field_on_grid(waves, phases, CENTRE, FWD, RIGHT, ROWS, COLS)
    np.testing.assert_allclose(grid, plane_wave_field(waves, phases, grid_points()), atol=2e-4)


def test_disc_union_distances_on_grid_equal_pointwise():
    centres = jnp.asarray([[20.0, -40.0], [-10.0, -60.0], [0.0, 0.0]])
    radii = jnp.asarray([5.0, 12.0, -1.0e4])  # the last disc is absent
    grid = disc_union_distance_on_grid(centres, radii, CENTRE, FWD, RIGHT, ROWS, COLS)
    np.testing.assert_allclose(grid, disc_union_distance(grid_points(), centres, radii), atol=1e-3)
    sq = grid_squared_distances(centres, CENTRE, FWD, RIGHT, ROWS, COLS)
    brute = np.sum((np.asarray(grid_points())[None] - np.asarray(centres)[:, None, None]) ** 2, -1)
    np.testing.assert_allclose(sq, brute, rtol=1e-4, atol=1e-2)


def test_disc_union_distance_by_hand():
    centres = jnp.asarray([[0.0, 0.0], [100.0, 0.0]])
    radii = jnp.asarray([10.0, 20.0])
    points = jnp.asarray([[3.0, 4.0], [0.0, 30.0], [65.0, 0.0], [50.0, 0.0]])
    # inside disc 0; 30 - 10 from disc 0; 35 - 20 from disc 1; min(50 - 10, 50 - 20)
    np.testing.assert_allclose(
        disc_union_distance(points, centres, radii), [0.0, 20.0, 15.0, 30.0], atol=1e-5
    )


def test_hashed_draws_are_deterministic_open_and_distinct():
    u = hashed_uniform(jnp.uint32(7), 3, (4096,))
    assert float(u.min()) > 0.0 and float(u.max()) < 1.0
    np.testing.assert_array_equal(u, hashed_uniform(jnp.uint32(7), 3, (4096,)))
    assert not np.array_equal(u, hashed_uniform(jnp.uint32(7), 4, (4096,)))  # another stream
    assert not np.array_equal(u, hashed_uniform(jnp.uint32(8), 3, (4096,)))  # another world
    assert abs(float(u.mean()) - 0.5) < 0.02


def test_plane_wave_field_is_roughly_standard_normal():
    waves, phases = random_plane_waves(jnp.uint32(5), 1, 12, 70.0)
    assert waves.shape == (12, 2) and phases.shape == (12,)
    pts = jnp.stack(jnp.meshgrid(jnp.linspace(-2000, 2000, 64), jnp.linspace(-2000, 2000, 64)), -1)
    f = np.asarray(plane_wave_field(waves, phases, pts))
    assert abs(f.mean()) < 0.2 and 0.6 < f.std() < 1.4
