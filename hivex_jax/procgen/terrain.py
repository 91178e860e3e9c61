"""Analytic worlds: sine-sum terrain and disc-union forests that cost nothing to store.

A terrain drawn here is a sum of `K` random plane waves (the same model as `fields.FourierField`, static in
time) whose parameters come from integer hashing (`noise.hash_uniform`), so generating a world at reset is
a few hundred hashes and no grid at all: under an auto-reset wrapper, which computes a reset every step,
world generation stays cheap. Any point is evaluated with `K` sines; a whole camera image on a rotated
pixel grid with `4 * size * K` sines instead of `size^2 * K` (the angle-addition identity separates rows
from columns). A forest is a union of discs, so the distance from any point to the closest tree is exact
and costs one square root per disc.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.procgen.noise import hash_uniform

_HALF_ULP = 0.5 / (1 << 24)  # keeps hashed uniforms strictly inside (0, 1) for logarithms


def _dot2(vectors: jax.Array, v: jax.Array) -> jax.Array:
    """vectors f32[N, 2] . v f32[2] -> f32[N], written elementwise (tiny dots fuse better than gemms)."""
    return vectors[:, 0] * v[0] + vectors[:, 1] * v[1]


def hashed_uniform(seed: jax.Array, stream: int, shape: tuple[int, ...]) -> jax.Array:
    """Uniforms f32[shape] in (0, 1) from a per-world seed (u32) and a stream id (one per draw)."""
    return hash_uniform(seed, jnp.uint32(stream), shape) + _HALF_ULP


def random_plane_waves(
    seed: jax.Array, stream: int, num_waves: int, length_scale: jax.Array | float
) -> tuple[jax.Array, jax.Array]:
    """Wave vectors f32[K, 2] ~ N(0, 1/length_scale^2) (Box-Muller on hashed uniforms) and phases f32[K]."""
    u = hashed_uniform(seed, stream, (3, num_waves))
    radius = jnp.sqrt(-2.0 * jnp.log(u[0])) / length_scale
    angle = 2.0 * jnp.pi * u[1]
    waves = jnp.stack([radius * jnp.cos(angle), radius * jnp.sin(angle)], axis=-1)
    return waves, 2.0 * jnp.pi * u[2]


def plane_wave_field(waves: jax.Array, phases: jax.Array, points: jax.Array) -> jax.Array:
    """sqrt(2/K) * sum_k sin(k . p + phi_k) at `points` f32[..., 2] (x, z); ~N(0, 1). Returns f32[...]."""
    arg = points[..., 0:1] * waves[:, 0] + points[..., 1:2] * waves[:, 1] + phases
    return jnp.sqrt(2.0 / phases.shape[0]) * jnp.sum(jnp.sin(arg), axis=-1)


def plane_wave_field_on_grid(
    waves: jax.Array,
    phases: jax.Array,
    centre: jax.Array,
    axis_rows: jax.Array,
    axis_cols: jax.Array,
    offsets_rows: jax.Array,
    offsets_cols: jax.Array,
) -> jax.Array:
    """The field on the grid `centre + r * axis_rows + c * axis_cols` for r in `offsets_rows` f32[R] and
    c in `offsets_cols` f32[C]; returns f32[R, C].

    sin(a + b) = sin(a)cos(b) + cos(a)sin(b) with a from the row and b from the column: 4(R + C)K
    transcendentals instead of R*C*K.
    """
    # waves on the leading axis: reductions over it vectorise well on CPU and coalesce on GPU
    base = _dot2(waves, centre) + phases  # [K]
    row_arg = base[:, None] + _dot2(waves, axis_rows)[:, None] * offsets_rows[None, :]  # [K, R]
    col_arg = _dot2(waves, axis_cols)[:, None] * offsets_cols[None, :]  # [K, C]
    sin_r, cos_r = jnp.sin(row_arg), jnp.cos(row_arg)
    sin_c, cos_c = jnp.sin(col_arg), jnp.cos(col_arg)
    total = jnp.sum(sin_r[:, :, None] * cos_c[:, None, :] + cos_r[:, :, None] * sin_c[:, None, :], axis=0)
    return jnp.sqrt(2.0 / phases.shape[0]) * total


def disc_union_distance(points: jax.Array, centres: jax.Array, radii: jax.Array) -> jax.Array:
    """Distance f32[...] from `points` f32[..., 2] to the union of discs (0 inside a disc).

    Discs with a very negative radius are effectively absent (their distance is huge).
    """
    d = jnp.sqrt((points[..., None, 0] - centres[:, 0]) ** 2 + (points[..., None, 1] - centres[:, 1]) ** 2)
    return jnp.maximum(jnp.min(d - radii, axis=-1), 0.0)


def disc_union_distance_on_grid(
    centres: jax.Array,
    radii: jax.Array,
    centre: jax.Array,
    axis_rows: jax.Array,
    axis_cols: jax.Array,
    offsets_rows: jax.Array,
    offsets_cols: jax.Array,
) -> jax.Array:
    """`disc_union_distance` on the same rotated grid as `plane_wave_field_on_grid`; f32[R, C].

    Squared distances come from `grid_squared_distances`, so only the square root and the minimum run
    per pixel and disc.
    """
    sq = grid_squared_distances(centres, centre, axis_rows, axis_cols, offsets_rows, offsets_cols)
    d = jnp.sqrt(jnp.maximum(sq, 0.0)) - radii[:, None, None]
    return jnp.maximum(jnp.min(d, axis=0), 0.0)


def grid_squared_distances(
    points: jax.Array,
    centre: jax.Array,
    axis_rows: jax.Array,
    axis_cols: jax.Array,
    offsets_rows: jax.Array,
    offsets_cols: jax.Array,
) -> jax.Array:
    """Squared distances f32[N, R, C] from `points` f32[N, 2] to every pixel of the rotated grid.

    |p - q|^2 = |centre - q|^2 + 2 r (centre - q) . axis_rows + r^2 + (same for columns), because the
    axes are orthonormal: a per-point constant plus a row term plus a column term.
    """
    delta = centre - points  # [N, 2]
    const = jnp.sum(delta * delta, axis=-1)
    row = (
        const[:, None]
        + offsets_rows[None, :] ** 2
        + 2.0 * offsets_rows[None, :] * _dot2(delta, axis_rows)[:, None]
    )  # [N, R]
    col = offsets_cols[None, :] ** 2 + 2.0 * offsets_cols[None, :] * _dot2(delta, axis_cols)[:, None]
    return row[:, :, None] + col[:, None, :]
