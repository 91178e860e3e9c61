"""Gather-free value noise and fBm: the same values as `noise.value_noise` / `noise.fbm`, computed as
`W @ lattice @ W.T` with constant interpolation matrices instead of per-cell lattice gathers.

XLA's gathers are slow on the CPU, and a reset under `AutoReset` runs every step for every world, so a
world generator that calls fBm pays for its gathers on every step. The matrices depend only on the
(static) resolution and lattice size, so they are NumPy constants built once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def interpolation_matrix(resolution: int, cells: int) -> np.ndarray:
    """f32[resolution, cells + 1]: smoothstep blend weights of `noise.value_noise` along one axis."""
    u = np.linspace(0.0, cells, resolution, endpoint=False) + cells / resolution / 2
    i0 = np.clip(np.floor(u).astype(np.int64), 0, cells - 1)
    f = u - i0
    f = f * f * (3.0 - 2.0 * f)
    w = np.zeros((resolution, cells + 1), np.float32)
    rows = np.arange(resolution)
    w[rows, i0] += 1.0 - f
    w[rows, i0 + 1] += f
    return w


def lattice_sizes(resolution: int, base_cells: int = 4, octaves: int = 4) -> tuple[int, ...]:
    """Cells per side of each octave's lattice in `fbm` (each lattice has `cells + 1` points per side)."""
    return tuple(min(base_cells * 2**o, resolution) for o in range(octaves))


def value_noise_from_lattice(lattice: jax.Array, resolution: int) -> jax.Array:
    """Smooth noise f32[resolution, resolution] from lattice values f32[cells + 1, cells + 1]."""
    w = jnp.asarray(interpolation_matrix(resolution, lattice.shape[0] - 1))
    hi = jax.lax.Precision.HIGHEST
    return jnp.matmul(jnp.matmul(w, lattice, precision=hi), w.T, precision=hi)


def fbm_from_lattices(lattices: list[jax.Array], resolution: int, persistence: float = 0.5) -> jax.Array:
    """fBm f32[resolution, resolution] in [0, 1] from one uniform lattice per octave (coarsest first)."""
    total = jnp.zeros((resolution, resolution))
    amplitude, norm = 1.0, 0.0
    for lattice in lattices:
        total = total + amplitude * value_noise_from_lattice(lattice, resolution)
        norm += amplitude
        amplitude *= persistence
    total = total / norm
    lo, hi = jnp.min(total), jnp.max(total)
    return (total - lo) / jnp.maximum(hi - lo, 1e-6)


def value_noise(key: jax.Array, resolution: int, cells: int) -> jax.Array:
    """Same as `noise.value_noise(key, resolution, cells)`: f32[resolution, resolution] in [0, 1]."""
    return value_noise_from_lattice(jax.random.uniform(key, (cells + 1, cells + 1)), resolution)


def fbm(
    key: jax.Array, resolution: int, base_cells: int = 4, octaves: int = 4, persistence: float = 0.5
) -> jax.Array:
    """Same as `noise.fbm` (same keys, same values up to rounding): f32[resolution, resolution] in [0, 1]."""
    keys = jax.random.split(key, octaves)
    lattices = [
        jax.random.uniform(keys[o], (c + 1, c + 1))
        for o, c in enumerate(lattice_sizes(resolution, base_cells, octaves))
    ]
    return fbm_from_lattices(lattices, resolution, persistence)
