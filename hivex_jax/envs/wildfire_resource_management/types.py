"""The pytree type Wildfire Resource Management's modules share: the state. Its own module, below
everything that reads it (dynamics, render, worlds, env), so no import goes in a circle."""

from __future__ import annotations

import jax
from flax import struct

from hivex_jax.core.environment import EnvState


@struct.dataclass
class WildfireState(EnvState):
    """The world drawn at reset (terrain, towers, wind, weather) and the fire and allocations it moves."""

    # World, fixed at reset.
    heights: jax.Array  # f32[R, R], metres; row 0 north
    flammability: jax.Array  # f32[R, R], hazard per burning neighbour at the reference weather
    tower_xyz: jax.Array  # f32[A, 3], (x, elevation, z) of each tower's base
    tower_weather: jax.Array  # f32[A, 3], local (temperature, humidity, overcast) before the cycle
    fire_seed: jax.Array  # u32[], per-world seed of the fire's hash RNG
    wind_angle: jax.Array  # f32[], main direction the wind blows towards (rad)
    wind_speed: jax.Array  # f32[], m/s
    wind_phase: jax.Array  # f32[], phase of the wind's swing
    weather_phase: jax.Array  # f32[], phase of the weather cycle
    # Changing.
    fire: jax.Array  # u8[R, R], FUEL / BURNING / BURNT or land cover (generator.py)
    allocation: jax.Array  # f32[A, 4], resources each tower hands to self and neighbours 1-3
    fire_position: jax.Array  # f32[A, 3], closest observed burning cell (x, y, z)
    fire_found: jax.Array  # bool[A], whether the tower sees any fire
    distance: jax.Array  # f32[A], distance to it now (NO_FIRE_DISTANCE if none)
    previous_distance: jax.Array  # f32[A], at the previous step
