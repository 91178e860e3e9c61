"""Wind Farm Control worlds: the turbine layout and the wind draw (main direction, swing, noise field).

`hivex_jax.worlds` reads and writes these fields; `apply_world` puts them into a reset state and
recomputes what depends on them (each turbine's noise phases, its first local wind, the observation).
The generated wind over an episode is main direction + swing + noise (dynamics.wind_angle). A world
may instead give a farm-wide wind-direction schedule, `wind_direction_schedule` (f32[64] knots evenly
spread over steps 0..max_steps, linear in between; a file gives any length, resampled): it replaces main
direction + swing while `wind_schedule_given` is set (import sets it when a file gives a schedule);
the noise field is still added (`wind_noise_degrees=0` for none). Generated worlds export the flag
unset and a zero schedule.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.world_spec import ARRAY, POINTS, SERIES, FieldSpec
from hivex_jax.envs.wind_farm_control.dynamics import wind_angle
from hivex_jax.envs.wind_farm_control.observations import observe

ANGLE = (-10.0, 10.0)  # radians: generated angles lie in [-2 pi, 2 pi]; wider is accepted, still finite

FIELDS = (
    FieldSpec(
        "positions",
        POINTS,
        (-10_000.0, 10_000.0),
        doc="f32[A, 2] turbine (x, z), metres; an image's A brightest pixels over the default farm "
        "(+-1000 m)",
        image_range=(-1000.0, 1000.0),
    ),
    FieldSpec("main_wind_angle", ARRAY, ANGLE, doc="f32[] main direction the wind blows towards, rad"),
    FieldSpec("swing_phase", ARRAY, ANGLE, doc="f32[] phase of the main wind's slow swing, rad"),
    FieldSpec("wind_wave_vectors", ARRAY, (-100.0, 100.0), doc="f32[K, 2] noise waves, rad per metre"),
    FieldSpec("wind_angular_speeds", ARRAY, (-100.0, 100.0), doc="f32[K] noise waves' speeds, rad per step"),
    FieldSpec("wind_phases", ARRAY, ANGLE, doc="f32[K] noise waves' phases, rad"),
    FieldSpec(
        "wind_direction_schedule",
        SERIES,
        (-100.0, 100.0),
        doc="f32[64] farm-wide direction the wind blows towards, rad, at 64 knots over steps "
        "0..max_steps (linear between; a .npy of any length is resampled); replaces main direction + "
        "swing when given; unwrapped (350 -> 370 degrees, not 350 -> 10)",
    ),
    FieldSpec(
        "wind_schedule_given",
        ARRAY,
        (0, 1),
        doc="bool[] use wind_direction_schedule (set on import when a file gives the schedule)",
    ),
)
#: a single image or .npy file is a turbine layout
PRIMARY_FIELD = "positions"
#: what the world seed changes in an episode on a file world that gives every field (docs/worlds.md)
SEED_ON_FILE_WORLD = (
    "the turbines' initial facing (yaw) angles; the wind (layout, noise waves, schedule) is the "
    "file's and a step draws no randomness"
)
#: True: two seeds on such a file world play the same episode under the same actions, so an
#: evaluation plays each such file world once (tests/eval/test_eval_distinct_episodes.py)
FILE_WORLD_SEED_FREE = False


def world_fields(state) -> dict[str, jax.Array]:
    """The world of a Wind Farm Control state: `{name: array}` per `FIELDS`."""
    return {
        "positions": state.positions,
        "main_wind_angle": state.main_wind_angle,
        "swing_phase": state.swing_phase,
        "wind_wave_vectors": state.wind_noise.wave_vectors,
        "wind_angular_speeds": state.wind_noise.angular_speeds,
        "wind_phases": state.wind_noise.phases,
        "wind_direction_schedule": state.wind_schedule,
        "wind_schedule_given": state.wind_scheduled,
    }


def complete_world(env, params, world: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """A loaded world whose schedule, if a file gives one, is used (flag set unless a file gives it)."""
    if "wind_direction_schedule" in world and "wind_schedule_given" not in world:
        world = {**world, "wind_schedule_given": np.asarray(True)}
    return world


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` with `world`'s layout and wind (facing angles keep the key's draw)."""
    noise = state.wind_noise.replace(
        wave_vectors=world["wind_wave_vectors"],
        angular_speeds=world["wind_angular_speeds"],
        phases=world["wind_phases"],
    )
    positions = world["positions"]
    wave_phase = noise.spatial_phase(positions)
    t0 = state.step.astype(jnp.float32)
    schedule = jnp.asarray(world["wind_direction_schedule"], jnp.float32)
    scheduled = jnp.asarray(world["wind_schedule_given"], bool)
    local = wind_angle(
        world["main_wind_angle"],
        world["swing_phase"],
        noise,
        positions,
        t0,
        params,
        wave_phase,
        schedule,
        scheduled,
    )
    state = state.replace(
        positions=positions,
        main_wind_angle=world["main_wind_angle"],
        swing_phase=world["swing_phase"],
        wind_noise=noise,
        turbine_wave_phase=wave_phase,
        local_wind_angle=local,
        wind_schedule=schedule,
        wind_scheduled=scheduled,
    )
    return observe(positions, state.facing_angle, local, params), state
