"""AerialWildfireSuppression-v0 observations: the reference sample at reset, the vector / camera
switches and what the camera shows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from aws_helpers import PARAMS, RESET, STEP, G, action, base_state, calm, cell_of, set_cells

import hivex_jax
from hivex_jax.core.check import _jitted
from hivex_jax.envs.aerial_wildfire_suppression import AerialWildfireSuppression
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_centres
from hivex_jax.envs.aerial_wildfire_suppression.observations import LAYOUT, PALETTE_RGB
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, OUTSIDE, SEA


def test_reset_observation_matches_reference_sample():
    obs, s = RESET(hivex_jax.world_key(6000), PARAMS)
    v = np.asarray(obs["vector"])
    assert np.all(v[:, 4] == 1.0)  # planes start holding water
    np.testing.assert_array_equal(v[:, 5:8], [[-1.0, -1.0, 0.0]] * 3)  # nothing observed yet
    assert np.all(np.abs(v[:, 1]) > 0.8)  # over the south water girdle, like z = -632 in the sample
    np.testing.assert_allclose(np.linalg.norm(v[:, 2:4], axis=-1), 1.0, atol=1e-5)
    assert int(s.burning_count) > 0
    zero_fwd, _ = RESET(hivex_jax.world_key(6000), PARAMS.replace(forward_zero_at_reset=jnp.int32(1)))
    np.testing.assert_array_equal(np.asarray(zero_fwd["vector"])[:, 2:4], 0.0)


def test_vector_size_nine_and_grey_camera_switches():
    env = AerialWildfireSuppression(vector_size=9, camera_channels=1)
    obs, s = _jitted(env).reset(hivex_jax.world_key(0), PARAMS)
    assert obs["vector"].shape == (3, 9) and np.all(np.asarray(obs["vector"])[:, 8] == 0.0)
    assert obs["visual"].shape == (3, 42, 42, 1)
    obs, *_ = _jitted(env).step(jax.random.PRNGKey(0), s, action(drop=1), PARAMS)
    assert obs["vector"].shape == (3, 9) and np.all(np.asarray(obs["vector"])[:, 8] == 0.0)


def test_camera_shows_the_state_under_the_plane():
    s = base_state()
    r, c = cell_of(0.0, 310.0)
    s = set_cells(s, [(r, c)], BURNING)
    obs, _, _, _, _, _ = STEP(jax.random.PRNGKey(0), s, action(), calm())
    image = np.asarray(obs["visual"])
    assert image.dtype == np.uint8
    # Plane 1 is now at (0, 310), over the burning tree: the image centre is fire-coloured.
    np.testing.assert_array_equal(image[1, 21, 21], PALETTE_RGB[BURNING])  # pixel centre (5, 305)
    v = np.asarray(obs["vector"])
    xs, zs = (np.asarray(t) for t in cell_centres(PARAMS, G))
    np.testing.assert_allclose(v[1, LAYOUT["closest_tree"]], [xs[c] / 750, zs[r] / 750], atol=1e-6)
    assert v[1, 7] == 1.0 and v[0, 7] == 0.0  # plane 0 sees trees, none burning
    # A plane over the sea near the border sees sea, and black beyond the border.
    s2 = s.replace(position=jnp.asarray([[0.0, 700.0], [0.0, 300.0], [-400.0, -300.0]]))
    obs2, *_ = STEP(jax.random.PRNGKey(0), s2, action(), calm())
    colours = {tuple(px) for px in np.asarray(obs2["visual"])[0].reshape(-1, 3)}
    assert tuple(PALETTE_RGB[SEA]) in colours and tuple(PALETTE_RGB[OUTSIDE]) in colours
