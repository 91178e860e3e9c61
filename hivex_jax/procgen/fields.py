"""Smooth random fields that are cheap to evaluate anywhere, at any time.

A `FourierField` is a sum of `K` random plane waves (random Fourier features). Drawn once per world from
a key (at reset), it is evaluated at any points and time with `K` sines per point: no grid has to be
stored or updated inside `step`, and a field over space-time costs nothing until it is sampled.
Values are approximately standard normal (zero mean, unit variance) for K >= 8.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class FourierField:
    """A smooth random field f(x, t) ~ N(0, 1) over 2-D space and time."""

    wave_vectors: jax.Array  # f32[K, 2], radians per metre
    angular_speeds: jax.Array  # f32[K], radians per step
    phases: jax.Array  # f32[K]

    def __call__(self, points: jax.Array, t: jax.Array | float = 0.0) -> jax.Array:
        """Field value at `points` f32[..., 2] and time `t` (steps); returns f32[...]."""
        return self.from_spatial_phase(self.spatial_phase(points), t)

    def spatial_phase(self, points: jax.Array) -> jax.Array:
        """f32[..., K] per-wave phases at fixed `points` f32[..., 2]: compute once for points that never
        move (e.g. at reset), then `from_spatial_phase` costs K sines per point and step."""
        return points @ self.wave_vectors.T + self.phases

    def from_spatial_phase(self, spatial_phase: jax.Array, t: jax.Array | float) -> jax.Array:
        """Field value f32[...] at time `t` from precomputed `spatial_phase` f32[..., K]."""
        k = self.phases.shape[0]
        return jnp.sqrt(2.0 / k) * jnp.sum(jnp.sin(spatial_phase + self.angular_speeds * t), axis=-1)


def fourier_field(
    key: jax.Array,
    num_waves: int,
    length_scale: jax.Array | float,
    time_scale: jax.Array | float = jnp.inf,
) -> FourierField:
    """Draw a field with spatial correlation length `length_scale` (m) and temporal scale (steps).

    Wave vectors ~ N(0, 1/length_scale^2) give a squared-exponential spatial covariance; angular speeds
    ~ N(0, 1/time_scale^2) make it drift in time (`inf` = static).
    """
    k_dir, k_speed, k_phase = jax.random.split(key, 3)
    wave_vectors = jax.random.normal(k_dir, (num_waves, 2)) / length_scale
    angular_speeds = jax.random.normal(k_speed, (num_waves,)) / time_scale
    phases = jax.random.uniform(k_phase, (num_waves,), minval=0.0, maxval=2 * jnp.pi)
    return FourierField(wave_vectors, angular_speeds, phases)


def grid_points(resolution: int, half_extent: float | jax.Array) -> jax.Array:
    """Cell-centre coordinates of a `resolution`^2 grid over [-half_extent, half_extent]^2.

    Returns f32[resolution, resolution, 2] with `[..., 0]` = x (columns) and `[..., 1]` = z (rows,
    increasing upward in world space, so row 0 is the top / largest z).
    """
    c = (jnp.arange(resolution, dtype=jnp.float32) + 0.5) / resolution * 2.0 - 1.0
    xs = c * half_extent
    zs = -c * half_extent
    zz, xx = jnp.meshgrid(zs, xs, indexing="ij")
    return jnp.stack([xx, zz], axis=-1)
