"""Observations: the 6-float vector layout and the rotating 25 x 25 trash grid."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.ocean_plastic_collection import observations
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams

P = OceanPlasticParams()


@jax.jit
def _visual(px, pz, positions, forward):
    ahead, starboard = observations.local_frame(px, pz, positions, forward)
    return observations.trash_grid(ahead, starboard, P)


def _grid(positions, forward, pebbles):
    """The trash grid f32[A, 25, 25] for pebbles padded to 64 (one compile for every scene)."""
    pebbles = list(pebbles) + [(1.0e6, 1.0e6)] * (64 - len(pebbles))
    px = jnp.asarray([p[0] for p in pebbles], jnp.float32)
    pz = jnp.asarray([p[1] for p in pebbles], jnp.float32)
    f32 = jnp.float32
    return np.asarray(_visual(px, pz, jnp.asarray(positions, f32), jnp.asarray(forward, f32)))[..., 0]


def test_vector_layout(opc):
    obs, state = opc.base_obs, opc.base_state
    v = np.asarray(obs["vector"])
    assert v.shape == (3, 6)
    pos = np.asarray(state.positions)
    np.testing.assert_allclose(v[:, 0:2], pos / 200.0, rtol=1e-6)
    np.testing.assert_allclose(v[:, 2:4], np.asarray(state.forward), rtol=1e-6)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(3) * 1e9
    np.testing.assert_allclose(v[:, 4:6], pos[d.argmin(-1)] / 200.0, rtol=1e-6)
    assert opc.env.observation_layout() == {
        "position": slice(0, 2),
        "forward": slice(2, 4),
        "neighbour_position": slice(4, 6),
    }


def test_neighbour_skips_vessels_that_are_out():
    pos = jnp.asarray([[0.0, 0.0], [5.0, 0.0], [50.0, 0.0]])
    nearest = jax.jit(observations.nearest_neighbour)
    nb, dist = nearest(pos, jnp.asarray([True, False, True]))
    np.testing.assert_allclose(np.asarray(nb), [[50.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(np.asarray(dist), [50.0, 5.0, 50.0])
    # Alone: the own position and an infinite distance (no Close-to-Other-Vessel reward).
    nb, dist = nearest(pos, jnp.asarray([True, False, False]))
    np.testing.assert_allclose(np.asarray(nb[0]), [0.0, 0.0])
    assert np.isinf(np.asarray(dist[0]))


def test_grid_cells_are_2m_with_row_0_ahead_and_the_right_side_on_the_right():
    # Vessel at the origin facing north (+z).
    pebbles = [(0.0, 10.0), (6.0, 0.0), (-6.5, -6.5), (-6.6, -6.4), (30.0, 0.0), (0.0, -26.0)]
    grid = _grid([[0.0, 0.0]], [[0.0, 1.0]], pebbles)[0]
    expected = np.zeros((25, 25), np.uint8)
    expected[7, 12] = 128  # 10 m ahead: row floor(12.5 - 5)
    expected[12, 15] = 128  # 6 m to starboard (east): column floor(12.5 + 3)
    expected[15, 9] = 255  # two pebbles behind-left in one cell: saturation count 2
    np.testing.assert_array_equal(grid, expected)  # the last two are out of the 50 m window


def test_grid_rotates_with_the_vessel():
    rng = np.random.default_rng(0)
    pts = rng.uniform(-24.0, 24.0, size=(64, 2))
    north = _grid([[10.0, -20.0]], [[0.0, 1.0]], [(10.0 + x, -20.0 + z) for x, z in pts])
    # Turn the scene 90 degrees clockwise about the vessel: north -> east, (x, z) -> (z, -x).
    east = _grid([[10.0, -20.0]], [[1.0, 0.0]], [(10.0 + z, -20.0 - x) for x, z in pts])
    np.testing.assert_array_equal(north, east)
    assert north.sum() > 0


def test_step_observation_drops_collected_pebbles(opc):
    state = opc.scene([[0.0, 0.0], [60.0, 0.0], [-60.0, 0.0]], pebbles=[(1.0, 0.0), (0.0, 10.0)])
    obs, new, *_ = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]))
    grid = np.asarray(obs["visual"][0, ..., 0])
    # Facing east: the pebble 10 m north is 10 m to port (left): row 12, column floor(12.5 - 5) = 7.
    assert grid[12, 7] == 128
    assert grid.sum() == 128  # the pebble 1 m ahead was collected
    assert obs["visual"].dtype == jnp.uint8 and obs["visual"].shape == (3, 25, 25, 1)
