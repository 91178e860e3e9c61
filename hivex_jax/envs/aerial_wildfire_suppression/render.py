"""Top-down picture of the whole border square: island grid, sea, village, planes and their cameras."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core import draw
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import forward
from hivex_jax.envs.aerial_wildfire_suppression.observations import colours, hill_shade, sample_ground
from hivex_jax.envs.aerial_wildfire_suppression.params import AerialWildfireParams
from hivex_jax.envs.aerial_wildfire_suppression.types import AerialWildfireState
from hivex_jax.procgen.fields import grid_points


def render_world(state: AerialWildfireState, params: AerialWildfireParams, size: int) -> jax.Array:
    """uint8[size, size, 3]. Island cells as the cameras see them (green trees, orange fire, dark burnt,
    teal wet, blue lakes, light village), sea, the village's 150 m danger ring (red), each plane's camera
    footprint (thin white square) and the planes (white disc = holding water, yellow = empty, grey = out),
    with a tick along the heading."""
    e = params.border_half_extent
    pts = grid_points(size, e)
    code, row, col = sample_ground(state.cells, pts[..., 0], pts[..., 1], params)
    shade = hill_shade(state.slope, code, row, col, state.cells.shape[0], params)
    image = colours(code) * shade[..., None] / 255.0

    # Village danger ring.
    ring = draw.world_to_pixel(state.village, e, size)
    pix = draw.pixel_centres(size, size)
    radius_px = params.village_danger_distance / (2 * e) * size
    d = jnp.linalg.norm(pix - ring, axis=-1)
    image = draw.blend(image, jnp.clip(1.0 - jnp.abs(d - radius_px), 0.0, 1.0), jnp.asarray([0.9, 0.15, 0.1]))

    # Camera footprints (heading-aligned squares).
    fwd = forward(state.heading)
    right = jnp.stack([fwd[:, 1], -fwd[:, 0]], axis=-1)
    h = params.camera_ground_size / 2
    corners = jnp.stack(
        [state.position + h * (s1 * fwd + s2 * right) for s1, s2 in ((1, 1), (1, -1), (-1, -1), (-1, 1))],
        axis=1,
    )  # [A, 4, 2]
    starts = draw.world_to_pixel(corners, e, size).reshape(-1, 2)
    ends = draw.world_to_pixel(jnp.roll(corners, -1, axis=1), e, size).reshape(-1, 2)
    visible = jnp.repeat(state.alive, 4).astype(jnp.float32)
    image = draw.segments(image, starts, ends, 1.0, jnp.asarray([0.95, 0.95, 0.95]), visible)

    # Planes.
    centres = draw.world_to_pixel(state.position, e, size)
    radius = max(size / 80.0, 2.0)
    plane_rgb = jnp.where(state.holding[:, None], jnp.asarray([1.0, 1.0, 1.0]), jnp.asarray([1.0, 0.85, 0.1]))
    plane_rgb = jnp.where(state.alive[:, None], plane_rgb, 0.45)
    image = draw.discs(image, centres, radius, plane_rgb, jnp.ones(centres.shape[0]))
    nose = draw.world_to_pixel(state.position + fwd * (2.5 * radius / size * 2 * e), e, size)
    image = draw.segments(image, centres, nose, max(size / 160.0, 1.0), jnp.zeros(3))
    return draw.to_uint8(image)
