"""Ocean Plastic Collection observations (reference §2.4).

vector f32[A, 6]: own position / e_h (x, z), own forward vector (x, z), nearest other vessel's
position / e_h (x, z). visual uint8[A, 25, 25, 1]: the trash around the vessel on a grid of 2 m cells
centred on it and rotating with it (row 0 = ahead, column 0 = port/left), each cell the number of
pebbles in it scaled so that `visual_saturation_count` pebbles (or more) read 255. Computed from the
state by binning every pebble into the vessel's local grid with one scatter-add (A*N updates).

With the static options `approach_features` and `border_features` (not in HIVEX) each frame's vector gains,
after those 6, the nearest vessel's closest approach in the vessel's own frame (6 floats, `closest_approach`)
and the distances to the border (2 floats, `border_distances`), in that order (`extra_layout`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams

#: named slices into obs["vector"]
LAYOUT = {"position": slice(0, 2), "forward": slice(2, 4), "neighbour_position": slice(4, 6)}
VECTOR_SIZE = 6
#: the options' floats, in the order they follow the 6 above in each frame: name -> width
APPROACH_NAMES = {
    "neighbour_offset_local": 2,
    "closest_approach_miss_local": 2,
    "closest_approach_time": 1,
    "neighbour_distance": 1,
}
BORDER_NAMES = {"border_distance_ahead": 1, "border_distance": 1}
APPROACH_SIZE, BORDER_SIZE = 6, 2
APPROACH_UNIT = 20.0  # m: offsets, miss vector and distances are read in units of 20 m ...
APPROACH_CLIP = 5.0  # ... clipped to +-5 (100 m); "no other vessel" reads distance 5, the rest 0
APPROACH_HORIZON = 10.0  # decisions: the time to the closest approach is clipped to [0, 10], read / 10
VISUAL_SIZE = 25  # cells per side (exact: 25 x 25 grid)


def _nearest(positions: jax.Array, present: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(index i32[A], found bool[A], squared distances f32[A, A], inf where not a candidate) of each vessel's
    nearest other present vessel."""
    a = positions.shape[0]
    d2 = jnp.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1)
    valid = present[None, :] & ~jnp.eye(a, dtype=bool)
    d2 = jnp.where(valid, d2, jnp.inf)
    return jnp.argmin(d2, axis=-1), jnp.any(valid, axis=-1), d2


def nearest_neighbour(positions: jax.Array, present: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(position f32[A, 2], distance f32[A]) of each vessel's nearest other present vessel.

    With no other vessel present the vessel's own position and an infinite distance are returned (the
    observation then reads "no neighbour" as a neighbour on top of itself; no Close reward is paid).
    """
    j, found, d2 = _nearest(positions, present)
    neighbour = jnp.where(found[:, None], positions[j], positions)
    distance = jnp.where(found, jnp.sqrt(jnp.take_along_axis(d2, j[:, None], axis=-1)[:, 0]), jnp.inf)
    return neighbour, distance


def local_frame(
    pebble_x: jax.Array, pebble_z: jax.Array, positions: jax.Array, forward: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(ahead, starboard) f32[A, N]: every pebble's offset from every vessel in the vessel's frame.

    Written as one small matrix product (rotation rows @ pebble coordinates) rather than elementwise:
    XLA materialises a dot's result, whereas an elementwise chain gets fused into (and, on the CPU,
    recomputed inside) the scatter that bins pebbles into the visual grid, which costs several times
    more. Full f32 precision (no TF32 on GPUs: cells are 2 m on a 400 m sea).
    """
    fx, fz = forward[:, 0], forward[:, 1]
    # rows 0..A-1: forward axes (ahead); rows A..2A-1: starboard axes (forward turned clockwise)
    axes = jnp.concatenate([forward, jnp.stack([fz, -fx], axis=-1)], axis=0)  # [2A, 2]
    pebbles = jnp.stack([pebble_x, pebble_z])  # [2, N]
    local = jnp.matmul(axes, pebbles, precision=jax.lax.Precision.HIGHEST)  # [2A, N]
    origin = jnp.sum(axes * jnp.concatenate([positions, positions], axis=0), axis=-1)  # [2A]
    local = local - origin[:, None]
    a = positions.shape[0]
    return local[:a], local[a:]


def trash_grid(ahead: jax.Array, starboard: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """uint8[A, 25, 25, 1]: local trash counts around each vessel from `local_frame` offsets f32[A, N]."""
    a, n = ahead.shape
    g = VISUAL_SIZE
    row = jnp.floor(g / 2 - ahead / params.visual_cell_size).astype(jnp.int32)
    col = jnp.floor(g / 2 + starboard / params.visual_cell_size).astype(jnp.int32)
    inside = (row >= 0) & (row < g) & (col >= 0) & (col < g)
    # One flat scatter-add: agent a's cells are a*(g*g+1) + cell; the extra cell per agent collects
    # the pebbles out of view.
    cell = jnp.where(inside, row * g + col, g * g) + (g * g + 1) * jnp.arange(a)[:, None]
    counts = jnp.zeros(a * (g * g + 1), jnp.float32).at[cell.reshape(-1)].add(1.0)
    counts = counts.reshape(a, g * g + 1)[:, : g * g]
    scaled = jnp.minimum(counts * (255.0 / params.visual_saturation_count), 255.0)
    return jnp.round(scaled).astype(jnp.uint8).reshape(a, g, g, 1)


def closest_approach(
    positions: jax.Array, velocities: jax.Array, forward: jax.Array, present: jax.Array, substeps: int
) -> jax.Array:
    """f32[A, 6]: the nearest other present vessel's offset (ahead, starboard), the miss vector at the
    closest approach if both keep their velocities (ahead, starboard), the decisions until it, and the
    distance; in the vessel's own frame, lengths / 20 m and time / 10 decisions, clipped to +-5.

    What a vessel needs to see a collision coming in one frame: the standard observation gives the
    neighbour's position only in sea coordinates, and its velocity only as a difference of two frames
    (docs/envs/ocean_plastic_collection.md, "Known limitations").
    """
    j, found, _ = _nearest(positions, present)
    offset = positions[j] - positions
    closing = (velocities[j] - velocities) * substeps  # m per decision (velocities are per sub-step)
    speed2 = jnp.maximum(jnp.sum(closing**2, axis=-1), 1e-6)
    t_closest = jnp.clip(-jnp.sum(offset * closing, axis=-1) / speed2, 0.0, APPROACH_HORIZON)
    miss = offset + t_closest[:, None] * closing

    def own_frame(v: jax.Array) -> jax.Array:  # (ahead, starboard): starboard is forward turned clockwise
        fx, fz = forward[:, 0], forward[:, 1]
        return jnp.stack([v[:, 0] * fx + v[:, 1] * fz, v[:, 0] * fz - v[:, 1] * fx], axis=-1)

    gap = jnp.sqrt(jnp.sum(offset**2, axis=-1))
    features = jnp.concatenate(
        [
            own_frame(offset) / APPROACH_UNIT,
            own_frame(miss) / APPROACH_UNIT,
            (t_closest / APPROACH_HORIZON)[:, None],
            (gap / APPROACH_UNIT)[:, None],
        ],
        axis=-1,
    )
    features = jnp.clip(features, -APPROACH_CLIP, APPROACH_CLIP)
    alone = jnp.zeros(APPROACH_SIZE, jnp.float32).at[-1].set(APPROACH_CLIP)
    return jnp.where(found[:, None], features, alone).astype(jnp.float32)


def border_distances(positions: jax.Array, forward: jax.Array, params: OceanPlasticParams) -> jax.Array:
    """f32[A, 2]: the distance to the border straight ahead (along the heading) and to the nearest border,
    / 20 m, clipped to [0, 5] (100 m)."""
    e = params.sea_half_extent
    # per axis, how far along the heading the vessel reaches the side it is heading for
    heading_for = jnp.where(forward >= 0, e, -e)
    moving = jnp.abs(forward) > 1e-6  # along that axis; else the heading never reaches that side
    reach = jnp.where(moving, (heading_for - positions) / jnp.where(moving, forward, 1.0), jnp.inf)
    ahead = jnp.min(reach, axis=-1)
    nearest = e - jnp.max(jnp.abs(positions), axis=-1)
    distances = jnp.stack([ahead, nearest], axis=-1) / APPROACH_UNIT
    return jnp.clip(distances, 0.0, APPROACH_CLIP).astype(jnp.float32)


def extra_layout(approach: bool, border: bool) -> dict[str, slice]:
    """Named slices of the options' floats in a frame (after the standard 6)."""
    names = {**(APPROACH_NAMES if approach else {}), **(BORDER_NAMES if border else {})}
    layout, start = {}, VECTOR_SIZE
    for name, width in names.items():
        layout[name] = slice(start, start + width)
        start += width
    return layout


def observe(
    positions: jax.Array,
    forward: jax.Array,
    neighbour_positions: jax.Array,
    ahead: jax.Array,
    starboard: jax.Array,
    params: OceanPlasticParams,
    extra: jax.Array | None = None,
) -> dict[str, jax.Array]:
    """`{"vector": f32[A, 6 (+ E)], "visual": uint8[A, 25, 25, 1]}`; (ahead, starboard) from
    `local_frame`; `extra` f32[A, E] (the options' floats, `extra_layout`) follows the 6 floats."""
    e = params.sea_half_extent
    parts = [positions / e, forward, neighbour_positions / e] + ([] if extra is None else [extra])
    vector = jnp.concatenate(parts, axis=-1)
    return {
        "vector": vector.astype(jnp.float32),
        "visual": trash_grid(ahead, starboard, params),
    }
