"""Wind Farm Control: static options, `EnvParams` and the task-weight table (reference §2.1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.envs.wind_farm_control.layouts import REAL_FARM_NAMES

#: HIVEX scalability counts (reference §2.1); the default is 8 turbines.
SUPPORTED_AGENT_COUNTS = (1, 2, 4, 8, 12, 16)
DEFAULT_NUM_AGENTS = 8
#: knots of a world's wind-direction schedule, evenly spread over steps 0..max_steps (docs/worlds.md)
WIND_SCHEDULE_KNOTS = 64

PATTERN_NAMES = (
    "Default",
    "Grid",
    "Chain",
    "Circle",
    "Square",
    "Cross",
    "Two Rows",
    "Field",
    "Random",
)
#: HIVEX's nine patterns (the env's level values) + the real farms of layouts.py (patterns 9, 10), which
#: are reachable through `pattern` but are not HIVEX levels.
ALL_PATTERN_NAMES = PATTERN_NAMES + REAL_FARM_NAMES
FIRST_REAL_FARM = len(PATTERN_NAMES)
#: the real farms' sizes (Lillgrund 48, Horns Rev 1 80), accepted as `num_agents` beside HIVEX's counts
REAL_FARM_SIZES = (48, 80)
TASK_NAMES = ("Generate Energy", "Avoid Damage")
REWARD_TERM_NAMES = ("generate_energy", "avoid_damage")
#: column of each reward term in `reward_terms` (the order of REWARD_TERM_NAMES)
(
    GENERATE_ENERGY,
    AVOID_DAMAGE,
) = range(len(REWARD_TERM_NAMES))

#: Paper Table 8: rows = task (0 Generate Energy, 1 Avoid Damage), columns = reward terms.
TASK_WEIGHTS = ((1.0, 0.0), (0.0, 1.0))

#: How theta in eq. 1 is read (reference contradiction 18).
THETA_COSINE = 0  # theta = cos(misalignment): W > 0 below 60 degrees (default)
THETA_LINEAR = 1  # theta = 1 - misalignment / 90 degrees: W > 0 below 45 degrees


@struct.dataclass
class WindFarmParams:
    """Dynamic parameters: one compiled `step` serves any mix of these under `vmap`.

    Every value the reference marks NOT FOUND or inferred is a field with a documented default
    (see docs/envs/wind_farm_control.md).
    """

    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    pattern: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.asarray(TASK_WEIGHTS, jnp.float32))
    # decisions: HIVEX logs 4999 for its MaxStep 5000 (ML-Agents counts MaxStep / period - 1; §1.2, §3.1)
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(4999))
    # --- turbine control (NOT FOUND; inferred from the MADDPG notebook trace, reference §2.1)
    rotation_step_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(2.4))
    # --- performance state, eq. 1-4: P <- P - drag * P + acceleration * W
    motor_acceleration: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    drag_coefficient: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    performance_updates_per_step: jax.Array = struct.field(default_factory=lambda: jnp.int32(1))
    theta_mode: jax.Array = struct.field(default_factory=lambda: jnp.int32(THETA_COSINE))
    # --- layout (designed; coordinates are not published)
    turbine_spacing: jax.Array = struct.field(default_factory=lambda: jnp.float32(100.0))
    farm_half_extent: jax.Array = struct.field(default_factory=lambda: jnp.float32(1000.0))
    field_jitter: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.3))
    # --- wind model (designed): main direction + slow swing + smooth space-time noise
    main_wind_direction_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.0))
    main_wind_direction_range_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(360.0))
    main_wind_swing_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(30.0))
    main_wind_swing_period: jax.Array = struct.field(default_factory=lambda: jnp.float32(2500.0))
    wind_noise_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(20.0))
    wind_noise_length_scale: jax.Array = struct.field(default_factory=lambda: jnp.float32(500.0))
    wind_noise_time_scale: jax.Array = struct.field(default_factory=lambda: jnp.float32(400.0))
    # --- wake model (designed; used only when the static `wake_model` is not "none", wakes.py).
    # FLORIS 4 default_inputs.yaml constants; wind speed / TI are not modelled by HIVEX.
    wind_speed: jax.Array = struct.field(default_factory=lambda: jnp.float32(8.0))  # m/s at hub height
    turbulence_intensity: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.06))
    wind_shear: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.12))
    air_density: jax.Array = struct.field(default_factory=lambda: jnp.float32(1.225))
    wake_gauss_alpha: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.58))
    wake_gauss_beta: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.077))
    wake_gauss_ka: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.38))
    wake_gauss_kb: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.004))
    wake_deflection_dm: jax.Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    wake_ti_initial: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.1))
    wake_ti_constant: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.5))
    wake_ti_ai: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.8))
    wake_ti_downstream: jax.Array = struct.field(default_factory=lambda: jnp.float32(-0.32))
    wake_jensen_we: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.05))
    wake_jimenez_kd: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.05))
    # the wake model sees yaw clipped to +-this (cos(yaw) -> 0 makes FLORIS's induction blow up)
    wake_yaw_limit_degrees: jax.Array = struct.field(default_factory=lambda: jnp.float32(80.0))
    # power term = (1 - share) * own waked power fraction + share * the farm's mean (cooperation)
    farm_power_share: jax.Array = struct.field(default_factory=lambda: jnp.float32(0.0))


#: Documented bounds of every `WindFarmParams` field, inclusive and elementwise (hivex_jax.core.bounds):
#: `make` and `env.validate_params` reject values outside them; `reset`/`step` clamp traced values.
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    "task": (0, len(TASK_NAMES) - 1),
    "pattern": (0, len(ALL_PATTERN_NAMES) - 1),
    "task_weights": (-1000.0, 1000.0),
    "max_steps": (1, 1_000_000),
    "rotation_step_degrees": (0.0, 180.0),
    "motor_acceleration": (0.0, 1.0),
    "drag_coefficient": (1e-3, 1.0),  # > 0: the closed-form update divides by it
    "performance_updates_per_step": (0, 100),
    "theta_mode": (THETA_COSINE, THETA_LINEAR),
    "turbine_spacing": (10.0, 5000.0),
    "farm_half_extent": (100.0, 10_000.0),
    "field_jitter": (0.0, 1.0),
    "main_wind_direction_degrees": (-360.0, 360.0),
    "main_wind_direction_range_degrees": (0.0, 360.0),
    "main_wind_swing_degrees": (0.0, 180.0),
    "main_wind_swing_period": (1.0, 1_000_000.0),
    "wind_noise_degrees": (0.0, 180.0),
    "wind_noise_length_scale": (1.0, 100_000.0),
    "wind_noise_time_scale": (1.0, 1_000_000.0),
    "wind_speed": (3.0, 25.0),  # the NREL 5 MW curve's producing range (cut-in, cut-out)
    "turbulence_intensity": (0.01, 0.5),
    "wind_shear": (0.0, 0.5),
    "air_density": (0.5, 2.0),
    "wake_gauss_alpha": (0.01, 5.0),
    "wake_gauss_beta": (0.001, 1.0),
    "wake_gauss_ka": (0.0, 2.0),
    "wake_gauss_kb": (1e-4, 0.1),  # > 0: the deflection divides by ka * TI + kb
    "wake_deflection_dm": (0.0, 5.0),
    "wake_ti_initial": (-1.0, 1.0),
    "wake_ti_constant": (0.0, 5.0),
    "wake_ti_ai": (0.0, 5.0),
    "wake_ti_downstream": (-2.0, 0.0),
    "wake_jensen_we": (0.001, 1.0),
    "wake_jimenez_kd": (0.001, 1.0),
    "wake_yaw_limit_degrees": (0.0, 85.0),
    "farm_power_share": (0.0, 1.0),
}


#: Documented bounds of the numeric static options (constructor / `make` kwargs), inclusive: `make` and the
#: constructor refuse a value outside them before anything is allocated or traced (hivex_jax.core.bounds).
#: `num_agents` must also be one of SUPPORTED_AGENT_COUNTS or REAL_FARM_SIZES (env.py).
STATIC_BOUNDS: dict[str, tuple[float, float]] = {
    "num_agents": (1, max(REAL_FARM_SIZES)),
    "render_size": (16, 512),  # pixels per side of env.render's picture
}
