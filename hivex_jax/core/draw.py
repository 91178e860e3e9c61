"""Pure-JAX raster drawing helpers shared by the environments' `render` functions.

All functions take and return float32 images f32[H, W, 3] in [0, 1]; callers convert to uint8 once.
Pixel coordinates are (column, row) floats; `world_to_pixel` maps world (x, z) with z up.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def pixel_centres(height: int, width: int) -> jax.Array:
    """f32[H, W, 2] of (column, row) pixel centres."""
    rows, cols = jnp.meshgrid(
        jnp.arange(height, dtype=jnp.float32) + 0.5,
        jnp.arange(width, dtype=jnp.float32) + 0.5,
        indexing="ij",
    )
    return jnp.stack([cols, rows], axis=-1)


def world_to_pixel(points: jax.Array, half_extent: jax.Array | float, size: int) -> jax.Array:
    """World (x, z) in [-half_extent, half_extent]^2 -> (column, row) with row 0 at the top."""
    u = (points[..., 0] / half_extent + 1.0) * 0.5 * size
    v = (1.0 - points[..., 1] / half_extent) * 0.5 * size
    return jnp.stack([u, v], axis=-1)


def blend(image: jax.Array, mask: jax.Array, colour: jax.Array) -> jax.Array:
    """Paint `colour` f32[3] (or f32[H, W, 3]) where `mask` f32[H, W] in [0, 1] (alpha)."""
    return image * (1.0 - mask[..., None]) + jnp.asarray(colour) * mask[..., None]


def discs(
    image: jax.Array, centres: jax.Array, radius: float, colours: jax.Array, visible: jax.Array
) -> jax.Array:
    """Draw filled discs at `centres` f32[N, 2] (pixels) with per-disc `colours` f32[N, 3]."""
    pix = pixel_centres(image.shape[0], image.shape[1])
    d = jnp.linalg.norm(pix[None] - centres[:, None, None, :], axis=-1)  # [N, H, W]
    cover = jnp.clip(radius + 0.5 - d, 0.0, 1.0) * visible[:, None, None]
    # Topmost disc wins where discs overlap.
    weight = cover / jnp.maximum(jnp.sum(cover, axis=0, keepdims=True), 1.0)
    paint = jnp.einsum("nhw,nc->hwc", weight, colours)
    alpha = jnp.clip(jnp.sum(cover, axis=0), 0.0, 1.0)
    return image * (1.0 - alpha[..., None]) + paint


def segments(
    image: jax.Array,
    starts: jax.Array,
    ends: jax.Array,
    width: float,
    colour: jax.Array,
    visible: jax.Array | None = None,
) -> jax.Array:
    """Draw line segments `starts` -> `ends` f32[N, 2] (pixels) of the given width and colour."""
    pix = pixel_centres(image.shape[0], image.shape[1])[None]  # [1, H, W, 2]
    a = starts[:, None, None, :]
    b = ends[:, None, None, :]
    ab = b - a
    t = jnp.clip(jnp.sum((pix - a) * ab, -1) / jnp.maximum(jnp.sum(ab * ab, -1), 1e-6), 0.0, 1.0)
    d = jnp.linalg.norm(pix - (a + t[..., None] * ab), axis=-1)
    cover = jnp.clip(width / 2 + 0.5 - d, 0.0, 1.0)
    if visible is not None:
        cover = cover * visible[:, None, None]
    return blend(image, jnp.max(cover, axis=0), colour)


def to_uint8(image: jax.Array) -> jax.Array:
    """f32 [0, 1] -> uint8 [0, 255]."""
    return jnp.round(jnp.clip(image, 0.0, 1.0) * 255.0).astype(jnp.uint8)
