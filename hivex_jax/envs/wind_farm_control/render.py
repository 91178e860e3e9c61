"""Top-down picture of the wind farm: the wind field, turbines coloured by output, their facing."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core import draw
from hivex_jax.envs.wind_farm_control.dynamics import unit, wind_angle
from hivex_jax.envs.wind_farm_control.params import WindFarmParams
from hivex_jax.envs.wind_farm_control.types import WindFarmState
from hivex_jax.procgen.fields import grid_points

ARROW_GRID = 8


def render_farm(state: WindFarmState, params: WindFarmParams, size: int) -> jax.Array:
    """uint8[size, size, 3]. Sea shade = local wind deviation; white arrows = local wind; discs =
    turbines (green = full output, red = none; grey when inactive); dark ticks = rotor facing."""
    spread = jnp.max(jnp.abs(state.positions)) + 1.5 * params.turbine_spacing
    half = jnp.maximum(spread, 2.0 * params.turbine_spacing)
    t = state.step.astype(jnp.float32)

    # Background: the wind field. Shade by deviation from the farm-wide mean direction.
    pts = grid_points(size, half)
    schedule = (state.wind_schedule, state.wind_scheduled)
    ang = wind_angle(
        state.main_wind_angle, state.swing_phase, state.wind_noise, pts, t, params, None, *schedule
    )
    mean = jnp.arctan2(jnp.mean(jnp.sin(ang)), jnp.mean(jnp.cos(ang)))
    dev = jnp.sin(ang - mean)  # -1 .. 1
    base = jnp.asarray([0.10, 0.30, 0.55])
    tint = jnp.asarray([0.08, 0.10, 0.05])
    image = base + dev[..., None] * tint
    image = jnp.broadcast_to(image, (size, size, 3))

    # Wind arrows on a coarse lattice.
    lattice = grid_points(ARROW_GRID, half).reshape(-1, 2)
    lat_ang = wind_angle(
        state.main_wind_angle, state.swing_phase, state.wind_noise, lattice, t, params, None, *schedule
    )
    length = half / ARROW_GRID * 0.8
    tails = draw.world_to_pixel(lattice - 0.5 * length * unit(lat_ang), half, size)
    heads = draw.world_to_pixel(lattice + 0.5 * length * unit(lat_ang), half, size)
    image = draw.segments(image, tails, heads, 1.0, jnp.asarray([0.75, 0.85, 0.95]))
    tips = draw.world_to_pixel(lattice + 0.5 * length * unit(lat_ang), half, size)
    image = draw.discs(
        image,
        tips,
        1.2,
        jnp.tile(jnp.asarray([[0.9, 0.95, 1.0]]), (tips.shape[0], 1)),
        jnp.ones(tips.shape[0]),
    )

    # Turbines.
    centres = draw.world_to_pixel(state.positions, half, size)
    radius = max(size / 48.0, 2.0)
    out = jnp.clip(state.performance, 0.0, 1.0)[:, None]
    colours = out * jnp.asarray([0.2, 0.85, 0.3]) + (1 - out) * jnp.asarray([0.9, 0.2, 0.15])
    colours = jnp.where(state.alive[:, None], colours, 0.5)
    image = draw.discs(image, centres, radius, colours, jnp.ones(centres.shape[0]))
    rotor = draw.world_to_pixel(
        state.positions + unit(state.facing_angle) * half * (2.5 * radius / size), half, size
    )
    image = draw.segments(image, centres, rotor, max(size / 128.0, 1.0), jnp.zeros(3))
    return draw.to_uint8(image)
