"""The pytree types Aerial Wildfire Suppression's modules share: the state and its weather. Their own
module, below everything that reads them (dynamics, observations, render, worlds, env), so no import
goes in a circle."""

from __future__ import annotations

import jax
from flax import struct

from hivex_jax.core.environment import EnvState
from hivex_jax.procgen.fields import FourierField


@struct.dataclass
class Weather:
    """Per-world weather: base values and slow time variations (time-only Fourier fields)."""

    wind_angle: jax.Array  # f32[], rad, direction the wind blows towards (CCW from +x)
    wind_speed: jax.Array  # f32[], 0..1
    temperature: jax.Array  # f32[], deg C
    humidity: jax.Array  # f32[], percent
    overcast: jax.Array  # f32[], 0..1
    drift: FourierField  # leaves with a leading [WEATHER_CHANNELS] axis (generator.py)


@struct.dataclass
class AerialWildfireState(EnvState):
    """Everything that changes or was drawn at reset: the island's cells, the weather, the planes."""

    cells: jax.Array  # uint8[G, G], island cell codes (params.py)
    slope: jax.Array  # f32[B, B, 2], terrain gradient per 4 x 4-cell block
    village: jax.Array  # f32[2], village centre (m)
    weather: Weather
    position: jax.Array  # f32[A, 2], metres (x, z)
    heading: jax.Array  # f32[A], rad, CCW from +x
    holding: jax.Array  # bool[A], holding water
    in_zone: jax.Array  # bool[A], over the pick-up water at the previous step
    target: jax.Array  # f32[A, 3], closest observed tree memory (x / 750, z / 750, burning)
    found_fire: jax.Array  # bool[A]
    found_village: jax.Array  # bool[A]
    burning_count: jax.Array  # i32[]
    num_trees: jax.Array  # i32[], trees on the island (constant: trees only change state)
    fire_out_paid: jax.Array  # bool[]
    village_penalty_paid: jax.Array  # bool[]
