"""hivex_jax.procgen.noise: the matmul value noise equals the textbook per-cell blend, fBm is the weighted,
normalised octave sum, and batched maps equal the maps made one at a time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.procgen import noise


def reference_value_noise(lattice: np.ndarray, resolution: int) -> np.ndarray:
    """Value noise by definition, one pixel at a time: the pixel centre's position in lattice cells, the
    smoothstep of its fractional part, and a bilinear blend of the 4 surrounding lattice values."""
    cells = lattice.shape[0] - 1
    out = np.zeros((resolution, resolution))
    for r in range(resolution):
        for c in range(resolution):
            ur, uc = (r + 0.5) * cells / resolution, (c + 0.5) * cells / resolution
            i, j = min(int(ur), cells - 1), min(int(uc), cells - 1)
            fr, fc = ur - i, uc - j
            fr, fc = fr * fr * (3 - 2 * fr), fc * fc * (3 - 2 * fc)
            top = lattice[i, j] * (1 - fc) + lattice[i, j + 1] * fc
            bottom = lattice[i + 1, j] * (1 - fc) + lattice[i + 1, j + 1] * fc
            out[r, c] = top * (1 - fr) + bottom * fr
    return out


def normalised(x: np.ndarray) -> np.ndarray:
    return (x - x.min()) / (x.max() - x.min())


@pytest.mark.parametrize("cells, resolution", [(3, 10), (6, 32)])
def test_value_noise_is_the_per_cell_smoothstep_blend(cells, resolution):
    lattice = np.random.default_rng(cells).uniform(size=(cells + 1, cells + 1)).astype(np.float32)
    ours = np.asarray(noise.value_noise_from_lattice(jnp.asarray(lattice), resolution))
    np.testing.assert_allclose(ours, reference_value_noise(lattice, resolution), atol=1e-6)
    key = jax.random.PRNGKey(cells)  # value_noise draws exactly this lattice from its key
    drawn = np.asarray(jax.random.uniform(key, (cells + 1, cells + 1)))
    np.testing.assert_allclose(
        np.asarray(noise.value_noise(key, resolution, cells)),
        reference_value_noise(drawn, resolution),
        atol=1e-6,
    )


def test_fbm_is_the_normalised_octave_sum():
    resolution, base, octaves = 17, 3, 3
    sizes = noise.lattice_sizes(resolution, base, octaves)
    assert sizes == (3, 6, 12)  # base * 2**octave, capped at the resolution
    key = jax.random.PRNGKey(4)
    keys = jax.random.split(key, octaves)
    lattices = [np.asarray(jax.random.uniform(k, (c + 1, c + 1))) for k, c in zip(keys, sizes, strict=True)]
    octave_sum = sum(0.5**o * reference_value_noise(lat, resolution) for o, lat in enumerate(lattices))
    ours = np.asarray(jax.jit(noise.fbm, static_argnums=(1, 2, 3))(key, resolution, base, octaves))
    np.testing.assert_allclose(ours, normalised(octave_sum / 1.75), atol=1e-5)


def test_fbm_hashed_maps_are_independent_normalised_and_equal_one_at_a_time():
    seed, resolution = jnp.uint32(9), 32
    maps = np.asarray(jax.jit(lambda s: noise.fbm_hashed(s, resolution, 4, 3, num_maps=3))(seed))
    assert maps.shape == (3, resolution, resolution)
    np.testing.assert_allclose(maps.min((1, 2)), 0.0, atol=1e-6)
    np.testing.assert_allclose(maps.max((1, 2)), 1.0, atol=1e-6)
    assert not np.allclose(maps[0], maps[1])
    sizes = noise.lattice_sizes(resolution, 4, 3)
    lattices = [noise.hash_uniform(seed, jnp.uint32(o), (3, c + 1, c + 1)) for o, c in enumerate(sizes)]
    for m in range(3):
        single = noise.fbm_from_lattices([lat[m] for lat in lattices], resolution)
        np.testing.assert_allclose(maps[m], np.asarray(single), atol=1e-6)
