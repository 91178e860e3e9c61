"""The pytree type Wind Farm Control's modules share: the state. Its own module, below everything that
reads it (render, worlds, env), so no import goes in a circle."""

from __future__ import annotations

import jax
from flax import struct

from hivex_jax.core.environment import EnvState
from hivex_jax.procgen.fields import FourierField


@struct.dataclass
class WindFarmState(EnvState):
    """The turbines (where, facing, performance) and the wind they stand in."""

    positions: jax.Array  # f32[A, 2], metres
    facing_angle: jax.Array  # f32[A], rad, direction the rotor faces
    performance: jax.Array  # f32[A], persistent P of eq. 1-4
    local_wind_angle: jax.Array  # f32[A], rad, wind at each turbine at the current step
    main_wind_angle: jax.Array  # f32[], rad
    swing_phase: jax.Array  # f32[]
    wind_noise: FourierField
    turbine_wave_phase: jax.Array  # f32[A, K], the noise waves' phases at each (fixed) turbine
    # f32[WIND_SCHEDULE_KNOTS] (params.py), a file world's farm-wide wind direction, rad
    wind_schedule: jax.Array
    wind_scheduled: jax.Array  # bool[], use `wind_schedule` instead of main direction + swing
