"""Grid noise for terrain and maps: value noise, fractal (fBm) noise, and a cheap per-cell hash RNG.

`hash_uniform` gives per-cell uniforms from integer hashing (a few integer ops per cell) instead of
threefry: fire grids that draw one random number per cell per step are limited by the RNG otherwise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def value_noise(key: jax.Array, resolution: int, cells: int) -> jax.Array:
    """Smooth noise f32[resolution, resolution] in [0, 1]: a `cells`^2 lattice, bicubic-smoothstep blended."""
    lattice = jax.random.uniform(key, (cells + 1, cells + 1))
    u = jnp.linspace(0.0, cells, resolution, endpoint=False) + cells / resolution / 2
    i0 = jnp.clip(jnp.floor(u).astype(jnp.int32), 0, cells - 1)
    f = u - i0
    f = f * f * (3.0 - 2.0 * f)  # smoothstep
    r0, c0 = i0[:, None], i0[None, :]
    fr, fc = f[:, None], f[None, :]
    top = lattice[r0, c0] * (1 - fc) + lattice[r0, c0 + 1] * fc
    bottom = lattice[r0 + 1, c0] * (1 - fc) + lattice[r0 + 1, c0 + 1] * fc
    return top * (1 - fr) + bottom * fr


def fbm(
    key: jax.Array, resolution: int, base_cells: int = 4, octaves: int = 4, persistence: float = 0.5
) -> jax.Array:
    """Fractal value noise f32[resolution, resolution] normalised to [0, 1]."""
    keys = jax.random.split(key, octaves)
    total = jnp.zeros((resolution, resolution))
    amplitude, norm = 1.0, 0.0
    for o in range(octaves):
        cells = min(base_cells * 2**o, resolution)
        total = total + amplitude * value_noise(keys[o], resolution, cells)
        norm += amplitude
        amplitude *= persistence
    total = total / norm
    lo, hi = jnp.min(total), jnp.max(total)
    return (total - lo) / jnp.maximum(hi - lo, 1e-6)


def island_mask(resolution: int, island_fraction: float, falloff: float = 0.08) -> jax.Array:
    """f32[R, R] in [0, 1]: 1 inside a centred square of half-width `island_fraction` (of the map's
    half-extent), falling smoothly to 0 over `falloff` (fraction of the half-extent) outside it."""
    c = (jnp.arange(resolution) + 0.5) / resolution * 2.0 - 1.0
    d = jnp.maximum(jnp.abs(c)[:, None], jnp.abs(c)[None, :])  # square (Chebyshev) distance
    return jnp.clip(1.0 - (d - island_fraction) / falloff, 0.0, 1.0)


def _mix32(x: jax.Array) -> jax.Array:
    """A 32-bit integer finaliser (lowbias32): good avalanche in 6 integer ops."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def hash_uniform(seed: jax.Array, step: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Per-cell uniforms f32[shape] in [0, 1) from (seed u32, step, cell index) by integer hashing.

    Deterministic, vmappable and far cheaper than `jax.random.uniform` for a large grid every step.
    Draw `seed` once per world (e.g. `jax.random.bits(key, (), jnp.uint32)`) and keep it in the state.
    """
    n = 1
    for s in shape:
        n *= s
    idx = jnp.arange(n, dtype=jnp.uint32).reshape(shape)
    s = _mix32(jnp.asarray(seed, jnp.uint32) ^ (jnp.asarray(step, jnp.uint32) * jnp.uint32(0x9E3779B9)))
    bits = _mix32(idx * jnp.uint32(0x85EBCA6B) + s)
    return (bits >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
