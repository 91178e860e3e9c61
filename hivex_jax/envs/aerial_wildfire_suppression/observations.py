"""Aerial Wildfire Suppression observations (reference §2.5).

vector f32[A, 8]: own position / 750 (x, z), forward (x, z), holding water, closest observed tree / 750
(x, z) with the (-1, -1) sentinel until something was seen, and whether it burns.
visual uint8[A, 42, 42, 3]: a downward camera, heading-up (forward = image top), one byte gathered from
the island grid per pixel, in flat class colours (no shading): trees, fire, burnt ground, wet trees,
lakes, village, sea and (black) beyond the border.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.reductions import first_argmin
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import forward, materialise_grid
from hivex_jax.envs.aerial_wildfire_suppression.generator import island_half_extent
from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BARE,
    BURNING,
    BURNT,
    HEALTHY,
    LAKE,
    NUM_CODES,
    OUTSIDE,
    SEA,
    VILLAGE,
    WET,
    AerialWildfireParams,
)

#: named slices into obs["vector"]
LAYOUT = {
    "position": slice(0, 2),
    "forward": slice(2, 4),
    "holding_water": slice(4, 5),
    "closest_tree": slice(5, 7),
    "closest_tree_burning": slice(7, 8),
}
VECTOR_SIZE = 8

#: RGB (0-255) of each cell code
PALETTE = np.zeros((NUM_CODES, 3), np.float32)
PALETTE[BARE] = (150, 128, 88)
PALETTE[HEALTHY] = (38, 118, 42)
PALETTE[BURNING] = (245, 96, 20)
PALETTE[BURNT] = (52, 44, 40)
PALETTE[WET] = (70, 160, 175)
PALETTE[LAKE] = (48, 100, 200)
PALETTE[VILLAGE] = (215, 205, 190)
PALETTE[SEA] = (28, 64, 150)
PALETTE[OUTSIDE] = (0, 0, 0)
PALETTE_RGB = PALETTE.astype(np.uint8)
PALETTE_GREY = np.round(PALETTE @ np.asarray([0.299, 0.587, 0.114], np.float32))[:, None].astype(np.uint8)
#: codes that get hill shading (land seen from above)
SHADED = np.zeros(NUM_CODES, bool)
SHADED[[BARE, HEALTHY, BURNT, WET, VILLAGE]] = True
LIGHT = np.asarray([-1.0, 1.0], np.float32) / np.sqrt(2.0)  # from the north-west
UNSEEN = -1.0  # sentinel of the closest-tree slot [C]


def _cell_lookup(
    x: jax.Array, z: jax.Array, grid_size: int, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The cell under world points (`x`, `z` f32[...]): row and column i32[...] (unclipped), whether
    that is on the island and whether the point is inside the border, bool[...]."""
    ih = island_half_extent(params)
    cs = 2.0 * ih / grid_size
    col = jnp.floor((x + ih) / cs).astype(jnp.int32)
    row = jnp.floor((ih - z) / cs).astype(jnp.int32)
    on_island = (col >= 0) & (col < grid_size) & (row >= 0) & (row < grid_size)
    e = params.border_half_extent
    inside = (jnp.abs(x) <= e) & (jnp.abs(z) <= e)
    return row, col, on_island, inside


def sample_ground(
    cells: jax.Array, x: jax.Array, z: jax.Array, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """What lies at world points (`x`, `z` f32[...]), nearest cell: code i32[...] (sea / outside beyond
    the island) and the sampled cell's row and column i32[...] (clipped).

    Coordinates travel as separate arrays: XLA reduces a trailing axis of 2 slowly on the CPU.
    """
    g = cells.shape[0]
    row, col, on_island, inside = _cell_lookup(x, z, g, params)
    cc = jnp.clip(col, 0, g - 1)
    rc = jnp.clip(row, 0, g - 1)
    # One byte gathered per point (flat index: a single gather, cheap on CPU and GPU).
    cell = jnp.take(cells.reshape(-1), rc * g + cc).astype(jnp.int32)
    code = jnp.where(on_island, cell, jnp.where(inside, SEA, OUTSIDE))
    return code, rc, cc


def camera_cells(
    cells: jax.Array, x: jax.Array, z: jax.Array, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array]:
    """The camera's view of points (`x`, `z` f32[A, S, S]), nearest cell, as `sample_ground` sees it:
    codes uint8[A, S, S] and cell keys i32[A, S, S] (the flat cell index on the island, G*G over the
    sea, G*G + 1 beyond the border; `key_centres` turns them into cell centres).

    The keys are computed once, in one vectorised pass, and then drive a plain byte gather: computing
    the indices inside the gather (which XLA's CPU backend runs element by element) cost four times more.
    """
    g = cells.shape[0]
    row, col, on_island, inside = _cell_lookup(x, z, g, params)
    key = jnp.where(on_island, row * g + col, jnp.where(inside, g * g, g * g + 1))
    key = materialise_grid(key, key[0, 0, 0])
    cell = jnp.take(cells.reshape(-1), jnp.minimum(key, g * g - 1))
    code = jnp.where(key < g * g, cell, jnp.where(key == g * g, jnp.uint8(SEA), jnp.uint8(OUTSIDE)))
    return code.astype(jnp.uint8), key


def key_centres(key: jax.Array, grid_size: int, params: AerialWildfireParams) -> tuple[jax.Array, jax.Array]:
    """World x and z f32[...] of the centres of the island cells with flat index `key` (meaningless for
    the sea / border keys)."""
    ih = island_half_extent(params)
    cs = 2.0 * ih / grid_size
    rc, cc = key // grid_size, key % grid_size
    return -ih + (cc + 0.5) * cs, ih - (rc + 0.5) * cs


def hill_shade(
    slope: jax.Array,
    code: jax.Array,
    row: jax.Array,
    col: jax.Array,
    grid_size: int,
    params: AerialWildfireParams,
) -> jax.Array:
    """Brightness factor f32[...] of land cells lit from the north-west (pictures only)."""
    f = grid_size // slope.shape[0]
    grad = slope[row // f, col // f]
    light = jnp.sum(grad * jnp.asarray(LIGHT), axis=-1) / jnp.sqrt(1.0 + jnp.sum(grad * grad, axis=-1))
    lit = jnp.clip(1.0 + params.shade_strength * light, 0.5, 1.4)
    return jnp.where(jnp.asarray(SHADED)[code], lit, 1.0)


def colours(code: jax.Array) -> jax.Array:
    """RGB f32[..., 3] (0-255) of codes."""
    return jnp.take(jnp.asarray(PALETTE), code, axis=0)


def camera_points(
    position: jax.Array, heading: jax.Array, size: int, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array]:
    """World x and z f32[A, S, S] of each camera pixel centre; row 0 is ahead of the plane."""
    pixel = params.camera_ground_size / size
    offsets = (jnp.arange(size, dtype=jnp.float32) + 0.5 - size / 2) * pixel
    pose = materialise_small(
        jnp.stack([position[:, 0], position[:, 1], jnp.cos(heading), jnp.sin(heading)], -1)
    )
    px, pz, fx, fz = (pose[:, i, None, None] for i in range(4))
    ahead = -offsets[None, :, None]  # metres ahead of the plane, per row
    side = offsets[None, None, :]  # metres to its right, per column (right = (fz, -fx))
    x = px + ahead * fx + side * fz
    z = pz + ahead * fz - side * fx
    return x, z


def materialise_small(x: jax.Array) -> jax.Array:
    """`x` f32[..., N] unchanged (an exact product with the identity matrix), but computed once.

    XLA fuses cheap-looking producers into every consumer element: the planes' cosines and sines (and,
    at reset, the spawn draws) were recomputed per camera pixel and colour channel, inside gathers that
    do not vectorise, which made the camera the most expensive part of a step. A dot is never fused into
    its consumers, so its output is computed once per plane. (`lax.optimization_barrier` is dropped by
    the CPU compiler.) `HIGHEST` keeps the product exact on GPUs, whose default f32 matmul is TF32.
    """
    eye = jnp.eye(x.shape[-1], dtype=jnp.float32)
    return jnp.matmul(x.astype(jnp.float32), eye, precision=jax.lax.Precision.HIGHEST)


def camera(code: jax.Array, channels: int) -> jax.Array:
    """uint8[A, S, S, channels] image of sampled codes (RGB, or luminance if 1 channel): a uint8 palette
    lookup, the cheapest form on CPU and GPU alike."""
    palette = PALETTE_RGB if channels == 3 else PALETTE_GREY
    return jnp.take(jnp.asarray(palette), code, axis=0)


def update_closest_tree(
    target: jax.Array,
    code: jax.Array,
    centre_x: jax.Array,
    centre_z: jax.Array,
    position: jax.Array,
    heading: jax.Array,
    alive: jax.Array,
    params: AerialWildfireParams,
) -> jax.Array:
    """New memory f32[A, 3] (x / 750, z / 750, burning) of the closest tree seen by each camera.

    With `observe_fire_first` (default) the nearest burning tree in view wins; with no fire in view a
    remembered fire outside the view is kept (it is still the last fire seen), else the nearest tree in
    view (healthy, wet or burning) is taken. With nothing in view the memory is kept.
    """
    e = params.border_half_extent
    a = code.shape[0]
    code = code.reshape(a, -1)
    cx = centre_x.reshape(a, -1)
    cz = centre_z.reshape(a, -1)
    d2 = (cx - position[:, 0, None]) ** 2 + (cz - position[:, 1, None]) ** 2
    burning = code == BURNING
    tree = burning | (code == HEALTHY) | (code == WET)
    # One argmin: fires rank before every other tree (the offset exceeds any in-view distance^2).
    offset = jnp.float32(16.0) * params.camera_ground_size**2
    fire_first = params.observe_fire_first > 0
    score = jnp.where(tree, d2 + jnp.where(burning & fire_first, 0.0, offset), jnp.inf)
    best = first_argmin(score)
    best_score = jnp.take_along_axis(score, best[:, None], axis=1)[:, 0]
    best_burning = jnp.take_along_axis(burning, best[:, None], axis=1)[:, 0]
    tree_seen = jnp.isfinite(best_score)
    fire_seen = tree_seen & best_burning
    pick = lambda v: jnp.take_along_axis(v, best[:, None], axis=1)[:, 0]  # noqa: E731
    nearest = jnp.stack([pick(cx) / e, pick(cz) / e, best_burning.astype(jnp.float32)], axis=-1)
    # Is the remembered spot in the current view? (plane frame, half the camera footprint)
    rel = target[:, :2] * e - position
    fwd = forward(heading)
    along = jnp.sum(rel * fwd, axis=-1)
    across = rel[:, 0] * fwd[:, 1] - rel[:, 1] * fwd[:, 0]
    in_view = jnp.maximum(jnp.abs(along), jnp.abs(across)) <= params.camera_ground_size / 2
    keep_fire = (target[:, 2] > 0.5) & ~in_view & fire_first & ~fire_seen
    new = jnp.where((tree_seen & ~keep_fire)[:, None], nearest, target)
    return jnp.where(alive[:, None], new, target).astype(jnp.float32)


def vector_obs(
    position: jax.Array,
    heading: jax.Array,
    holding: jax.Array,
    target: jax.Array,
    params: AerialWildfireParams,
    vector_size: int,
    zero_forward: jax.Array | bool = False,
) -> jax.Array:
    """f32[A, vector_size]; a 9th entry (contradiction 16's printed sample) is a constant 0."""
    a = position.shape[0]
    pos = jnp.clip(position / params.border_half_extent, -1.0, 1.0)
    fwd = jnp.where(zero_forward, 0.0, forward(heading))
    parts = [pos, fwd, holding.astype(jnp.float32)[:, None], target]
    if vector_size > VECTOR_SIZE:
        parts.append(jnp.zeros((a, vector_size - VECTOR_SIZE), jnp.float32))
    return jnp.concatenate(parts, axis=-1).astype(jnp.float32)
