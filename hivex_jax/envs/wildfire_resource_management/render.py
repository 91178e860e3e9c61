"""Top-down picture of the island: land cover, the fire, towers, their resource links and sightings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core import draw
from hivex_jax.envs.wildfire_resource_management import dynamics, rewards
from hivex_jax.envs.wildfire_resource_management.params import WildfireParams
from hivex_jax.envs.wildfire_resource_management.types import WildfireState

# Colour of each cell phase (generator.py order: FUEL, BURNING, BURNT, SEA, SAND, GRASS, LAKE).
PHASE_COLOURS = np.asarray(
    [
        [0.13, 0.42, 0.17],  # forest (unburnt fuel)
        [1.00, 0.45, 0.05],  # burning
        [0.22, 0.19, 0.17],  # burnt
        [0.09, 0.27, 0.50],  # sea
        [0.86, 0.80, 0.56],  # sand
        [0.55, 0.68, 0.36],  # grass
        [0.22, 0.47, 0.72],  # lake
    ],
    np.float32,
)


def render_world(
    state: WildfireState, params: WildfireParams, neighbours: np.ndarray, size: int
) -> jax.Array:
    """uint8[size, size, 3]. Cells: forest (darker = higher), fire (orange), burnt, grass, sand, water.
    Towers: discs coloured by performance p (dark blue ~0 -> yellow 1), white halo = resources kept;
    white links to neighbours, opacity = resources sent; red lines = each tower's fire sighting;
    thin yellow lines = the towers' influence regions; arrow (top left) = wind."""
    res = state.fire.shape[0]
    half = params.island_half_extent
    pix = (jnp.arange(size, dtype=jnp.float32) + 0.5) / size * res
    idx = jnp.clip(pix.astype(jnp.int32), 0, res - 1)
    phase = state.fire[idx[:, None], idx[None, :]].astype(jnp.int32)
    heights = state.heights[idx[:, None], idx[None, :]]
    image = jnp.asarray(PHASE_COLOURS)[phase]
    top = jnp.maximum(jnp.max(state.heights), 1.0)
    shade = jnp.where(phase == 3, 1.0, 1.08 - 0.35 * heights / top)  # hill-tops drawn darker
    image = image * shade[..., None]

    # Influence regions (Voronoi cells of the 3 x 3 tower grid).
    e = 0.5 * params.tower_spacing
    starts = jnp.asarray([[-e, -half], [e, -half], [-half, -e], [-half, e]])
    ends = jnp.asarray([[-e, half], [e, half], [half, -e], [half, e]])
    image = draw.segments(
        image,
        draw.world_to_pixel(starts, half, size),
        draw.world_to_pixel(ends, half, size),
        1.0,
        jnp.asarray([0.95, 0.85, 0.2]),
        jnp.full((4,), 0.5),
    )

    towers = state.tower_xyz[:, jnp.asarray([0, 2])]
    centres = draw.world_to_pixel(towers, half, size)
    # Resource links: tower -> neighbour, opacity = resources sent.
    nb = jnp.asarray(neighbours)
    link_start = jnp.repeat(centres, nb.shape[1], axis=0)
    link_end = centres[nb.reshape(-1)]
    mid = 0.5 * (link_start + link_end)  # draw half the link from each side, so both directions show
    sent = (state.allocation[:, 1:] / params.resource_budget).reshape(-1)
    image = draw.segments(image, link_start, mid, max(size / 80.0, 1.5), jnp.ones(3), sent)
    # Sightings.
    fire_pix = draw.world_to_pixel(state.fire_position[:, jnp.asarray([0, 2])], half, size)
    image = draw.segments(
        image, centres, fire_pix, 1.0, jnp.asarray([0.9, 0.1, 0.1]), state.fire_found.astype(jnp.float32)
    )
    # Towers.
    radius = max(size / 40.0, 2.5)
    kept = state.allocation[:, 0] / params.resource_budget
    image = draw.discs(image, centres, radius * 1.6, jnp.ones((centres.shape[0], 3)), kept)
    p = rewards.tower_performance(state.previous_distance, state.distance, params)[:, None]
    colours = (1 - p) * jnp.asarray([0.1, 0.1, 0.45]) + p * jnp.asarray([1.0, 0.9, 0.1])
    image = draw.discs(image, centres, radius, colours, jnp.ones(centres.shape[0]))

    # Wind arrow.
    angle = dynamics.wind_now(state.wind_angle, state.wind_phase, state.step.astype(jnp.float32), params)
    direction = jnp.stack([jnp.cos(angle), -jnp.sin(angle)])  # pixel rows grow downward
    anchor = jnp.asarray([size * 0.1, size * 0.1])
    length = size * 0.06 * (0.4 + 0.6 * state.wind_speed / jnp.maximum(params.wind_speed_max, 1e-6))
    tail = (anchor - direction * length)[None]
    head = (anchor + direction * length)[None]
    image = draw.segments(image, tail, head, max(size / 100.0, 1.0), jnp.ones(3))
    image = draw.discs(image, head, max(size / 90.0, 1.5), jnp.ones((1, 3)), jnp.ones(1))
    return draw.to_uint8(image)
