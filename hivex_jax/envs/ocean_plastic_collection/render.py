"""Top-down picture of the sea: trash population map, pebbles, vessels and their 50 m sensor windows."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core import draw
from hivex_jax.envs.ocean_plastic_collection.generator import trash_density
from hivex_jax.envs.ocean_plastic_collection.observations import VISUAL_SIZE
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams
from hivex_jax.envs.ocean_plastic_collection.types import OceanPlasticState
from hivex_jax.procgen.fields import grid_points

#: vessel colours (cycled): orange, magenta, yellow, cyan, ...
VESSEL_COLOURS = jnp.asarray(
    [[1.0, 0.55, 0.1], [0.9, 0.3, 0.8], [1.0, 0.9, 0.2], [0.3, 0.95, 0.95], [0.6, 1.0, 0.4], [1.0, 0.4, 0.4]]
)


def render_sea(state: OceanPlasticState, params: OceanPlasticParams, size: int) -> jax.Array:
    """uint8[size, size, 3]. Sea shade = trash population map (lighter = more trash); white dots =
    pebbles; red square = the border; discs = vessels (grey once out) with a heading tick and their
    rotating 25 x 25 sensor window."""
    half = params.sea_half_extent * 1.06  # a margin so the border line is visible
    # Background: the trash population map relative to a uniform spread.
    pts = grid_points(size, half)
    area = (2.0 * params.sea_half_extent) ** 2
    shade = jnp.clip(jnp.log1p(trash_density(pts, state.trash_map, params) * area) / 2.5, 0.0, 1.0)
    deep, light = jnp.asarray([0.04, 0.16, 0.35]), jnp.asarray([0.25, 0.45, 0.55])
    image = deep + shade[..., None] * (light - deep)
    outside = jnp.any(jnp.abs(pts) > params.sea_half_extent, axis=-1)
    image = jnp.where(outside[..., None], jnp.asarray([0.02, 0.05, 0.1]), image)

    # Border.
    e = params.sea_half_extent
    corners = jnp.asarray([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]) * e
    c_pix = draw.world_to_pixel(corners, half, size)
    image = draw.segments(image, c_pix, jnp.roll(c_pix, -1, axis=0), 1.5, jnp.asarray([0.85, 0.2, 0.2]))

    # Pebbles: scatter into a pixel mask and thicken to 2 x 2 pixels.
    pebbles = jnp.stack([state.pebble_x, state.pebble_z], axis=-1)
    pix = jnp.floor(draw.world_to_pixel(pebbles, half, size)).astype(jnp.int32)
    ok = jnp.all((pix >= 0) & (pix < size), axis=-1)
    flat = jnp.where(ok, pix[:, 1] * size + pix[:, 0], size * size)
    mask = jnp.zeros(size * size + 1).at[flat].max(1.0)[: size * size].reshape(size, size)
    mask = jax.lax.reduce_window(mask, 0.0, jax.lax.max, (2, 2), (1, 1), "SAME")
    image = draw.blend(image, mask, jnp.asarray([0.95, 0.95, 0.9]))

    # Sensor windows (rotated squares of 25 cells) and vessels.
    a = state.positions.shape[0]
    colours = VESSEL_COLOURS[jnp.arange(a) % VESSEL_COLOURS.shape[0]]
    colours = jnp.where(state.alive[:, None], colours, 0.55)
    forward = state.forward
    left = jnp.stack([-forward[:, 1], forward[:, 0]], axis=-1)
    w = 0.5 * VISUAL_SIZE * params.visual_cell_size
    offsets = jnp.asarray([[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0]]) * w  # (ahead, left)
    window = (
        state.positions[:, None, :]
        + offsets[None, :, :1] * forward[:, None]
        + offsets[None, :, 1:] * left[:, None]
    )
    w_pix = draw.world_to_pixel(window, half, size)  # [A, 4, 2]
    starts = w_pix.reshape(-1, 2)
    ends = jnp.roll(w_pix, -1, axis=1).reshape(-1, 2)
    image = draw.segments(
        image, starts, ends, 1.0, jnp.asarray([0.8, 0.9, 1.0]), jnp.repeat(state.alive, 4) * 0.6
    )
    centres = draw.world_to_pixel(state.positions, half, size)
    radius = max(size / 80.0, 2.0)
    image = draw.discs(image, centres, radius, colours, jnp.ones(a))
    bow = draw.world_to_pixel(state.positions + forward * (2.2 * radius * 2 * half / size), half, size)
    image = draw.segments(image, centres, bow, max(size / 160.0, 1.0), jnp.zeros(3))
    return draw.to_uint8(image)
