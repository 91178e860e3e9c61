"""Steady-state wake model for Wind Farm Control: FLORIS 4's equations as pure JAX functions.

HIVEX has no wake model (reference §2.1); this module is the optional one behind the env's static
`wake_model` switch. It re-implements, equation for equation, FLORIS 4.x's sequential solver on its
3 x 3 rotor-point grid (`TurbineGrid`, points at ±D/4) for two model sets:

- "gauss":  `gauss` velocity deficit (Bastankhah & Porté-Agel with a near-wake ramp), `gauss` yaw
  deflection (Bastankhah 2016 / King 2019), `crespo_hernandez` added turbulence, `sosfs` combination;
- "jensen": `jensen` top-hat deficit, `jimenez` deflection, the same turbulence and combination.

FLORIS's default "GCH" extras (secondary steering, yaw-added recovery, transverse velocities) are off:
the matched FLORIS configuration is the plain Gaussian model (see `floris_configuration`). The
turbine is FLORIS's NREL 5 MW (`cosine-loss` operation model, tilt at its reference 5 deg, so tilt
cancels). Power-law shear `wind_shear` with the hub as reference height, no veer.

Conventions (the env's): positions f32[A, 2] in metres (x, z on the sea plane); `wind_angle` is the
direction the wind blows towards, radians counter-clockwise from +x; `yaw_offset` f32[A] is the
rotor's angle from facing straight into the wind, radians, positive counter-clockwise seen from above.
FLORIS's meteorological direction is 270 - deg(wind_angle) and its yaw angle is -deg(yaw_offset).
Everything is pure, vmappable over worlds and differentiable in yaw (the masks are piecewise constant).

This module is the farm: the sequential solver, the hub-height field for pictures, the checks, the
matched FLORIS configuration and the env's waked power. The turbine (NREL 5 MW tables and rotor points)
is turbine.py's, the wake models' equations wake_models.py's; their public names are importable from
here as well (`__all__`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hivex_jax.envs.wind_farm_control.turbine import (
    CUT_IN_WIND_SPEED,
    CUT_OUT_WIND_SPEED,
    HUB_HEIGHT,
    NREL5MW_POWER_KW,
    NREL5MW_THRUST_COEFFICIENT,
    NREL5MW_WIND_SPEED,
    RATED_POWER_W,
    ROTOR_DIAMETER,
    ROTOR_GRID_POINTS,
    axial_induction_of,
    cubic_mean,
    power_of,
    rotor_offsets,
    thrust_coefficient_of,
)
from hivex_jax.envs.wind_farm_control.wake_models import (
    WakeConstants,
    crespo_hernandez,
    gauss_deficit,
    gauss_deflection,
    jensen_deficit,
    jimenez_deflection,
    safe_sqrt,
)

__all__ = [
    "CUT_IN_WIND_SPEED",
    "CUT_OUT_WIND_SPEED",
    "HUB_HEIGHT",
    "NREL5MW_POWER_KW",
    "NREL5MW_THRUST_COEFFICIENT",
    "NREL5MW_WIND_SPEED",
    "RATED_POWER_W",
    "ROTOR_DIAMETER",
    "WAKE_MODELS",
    "FarmFlow",
    "WakeConstants",
    "constants_from_params",
    "floris_configuration",
    "free_stream_power",
    "hub_height_field",
    "mean_direction",
    "signed_yaw_offset",
    "solve_farm",
    "to_wind_frame",
    "validate_farm",
    "waked_power",
]

#: the wake model sets; "none" = HIVEX (no wakes)
WAKE_MODELS = ("none", "gauss", "jensen")


@struct.dataclass
class FarmFlow:
    """Solved farm: per-turbine quantities in the caller's turbine order."""

    rotor_velocities: jax.Array  # f32[A, 3, 3], m/s at the rotor points (spanwise, vertical)
    effective_velocity: jax.Array  # f32[A], cubic mean over the rotor points (FLORIS's average)
    power: jax.Array  # f32[A], W (yaw cosine loss and air density applied)
    thrust_coefficient: jax.Array  # f32[A], Ct with FLORIS's cos(yaw) factor
    axial_induction: jax.Array  # f32[A]
    turbulence_intensity: jax.Array  # f32[A], mean over the rotor points


def free_stream_power(wind_speed, constants: WakeConstants) -> jax.Array:
    """Power (W) of a lone turbine facing the wind: the normaliser of the env's waked power term."""
    offsets = rotor_offsets()
    u = wind_speed * ((HUB_HEIGHT + offsets) / HUB_HEIGHT) ** constants.wind_shear
    u = jnp.broadcast_to(u[None, :], (ROTOR_GRID_POINTS, ROTOR_GRID_POINTS))
    return power_of(cubic_mean(u), jnp.float32(0.0), constants.air_density)


def to_wind_frame(positions: jax.Array, wind_angle: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Rotate f32[..., 2] positions so the wind blows along +x: returns (downstream x, crosswind y)."""
    c, s = jnp.cos(wind_angle), jnp.sin(wind_angle)
    px, py = positions[..., 0], positions[..., 1]
    return px * c + py * s, -px * s + py * c


# ------------------------------------------------------------------------------------------ solver
def solve_farm(
    positions: jax.Array,
    yaw_offset: jax.Array,
    wind_angle: jax.Array,
    wind_speed: jax.Array,
    turbulence_intensity: jax.Array,
    constants: WakeConstants,
    model: str = "gauss",
) -> FarmFlow:
    """Steady flow through the farm: positions f32[A, 2], yaw_offset f32[A] rad -> FarmFlow (f32[A] ...).

    FLORIS's sequential solver: turbines sorted upstream to downstream (a data-dependent permutation,
    static shapes), each turbine's wake added to every rotor point by a `lax.scan` over that order.
    `model` is static ("gauss" or "jensen").
    """
    if model not in ("gauss", "jensen"):
        raise ValueError(f"wake model must be one of {WAKE_MODELS[1:]} here; got {model!r}")
    n = positions.shape[0]
    g = ROTOR_GRID_POINTS
    k = constants
    floris_yaw = -jnp.rad2deg(yaw_offset.astype(jnp.float32))
    xr, yr = to_wind_frame(positions.astype(jnp.float32), wind_angle)
    order = jnp.argsort(xr)
    xs, ys, yaw_s = xr[order], yr[order], floris_yaw[order]

    offsets = rotor_offsets()
    x = jnp.broadcast_to(xs[:, None, None], (n, g, g))
    y = ys[:, None, None] + offsets[None, :, None] * jnp.ones((n, g, g))
    z = HUB_HEIGHT + offsets[None, None, :] * jnp.ones((n, g, g))
    u_initial = wind_speed * (z / HUB_HEIGHT) ** k.wind_shear
    ambient = jnp.asarray(turbulence_intensity, jnp.float32)

    def add_turbine(carry, i):
        wake_field, ti_field = carry
        u_i = u_initial[i] - wake_field[i]
        x_i, y_i, yaw_i = xs[i], ys[i], yaw_s[i]
        ct_i = thrust_coefficient_of(cubic_mean(u_i), yaw_i)
        ai_i = axial_induction_of(ct_i, yaw_i)
        ti_i = ti_field[i]  # f32[g, g]: FLORIS broadcasts the source's per-point TI onto each target
        if model == "gauss":
            deflection = gauss_deflection(x, x_i, yaw_i, ti_i, ct_i, k)
            deficit = gauss_deficit(x, y, z, x_i, y_i, deflection, yaw_i, ti_i, ct_i, k)
        else:
            deflection = jimenez_deflection(x, x_i, yaw_i, ct_i, k)
            deficit = jensen_deficit(x, y, z, x_i, y_i, deflection, ai_i, k)
        wake_velocity = deficit * u_initial
        wake_field = safe_sqrt(wake_field**2 + wake_velocity**2)  # sosfs (hypot)
        added = crespo_hernandez(ambient, x, x_i, ai_i, k)
        overlap = jnp.mean((wake_velocity > 0.05).astype(jnp.float32), axis=(1, 2), keepdims=True)
        reach = (x > x_i) & (jnp.abs(y_i - y) < 2.0 * ROTOR_DIAMETER) & (x <= 15.0 * ROTOR_DIAMETER + x_i)
        ti_added = overlap * added * reach
        ti_field = jnp.maximum(jnp.sqrt(ti_added**2 + ambient**2), ti_field)
        return (wake_field, ti_field), (ct_i, ai_i)

    init = (jnp.zeros((n, g, g), jnp.float32), jnp.full((n, g, g), ambient, jnp.float32))
    (wake_field, ti_field), (ct_sorted, ai_sorted) = jax.lax.scan(add_turbine, init, jnp.arange(n))
    u_sorted = u_initial - wake_field
    inverse = jnp.argsort(order)
    u = u_sorted[inverse]
    average = cubic_mean(u)
    return FarmFlow(
        rotor_velocities=u,
        effective_velocity=average,
        power=power_of(average, floris_yaw, k.air_density),
        thrust_coefficient=ct_sorted[inverse],
        axial_induction=ai_sorted[inverse],
        turbulence_intensity=jnp.mean(ti_field, axis=(1, 2))[inverse],
    )


def hub_height_field(
    points: jax.Array,
    positions: jax.Array,
    yaw_offset: jax.Array,
    wind_angle: jax.Array,
    wind_speed: jax.Array,
    flow: FarmFlow,
    constants: WakeConstants,
    model: str = "gauss",
) -> jax.Array:
    """Wind speed f32[...] (m/s) at hub height at `points` f32[..., 2], given the solved `flow`.

    Each turbine's wake uses its solved Ct, induction and (rotor-mean) turbulence; for pictures.
    """
    k = constants
    floris_yaw = -jnp.rad2deg(yaw_offset.astype(jnp.float32))
    xt, yt = to_wind_frame(positions.astype(jnp.float32), wind_angle)
    xp, yp = to_wind_frame(points.astype(jnp.float32), wind_angle)
    zp = jnp.full_like(xp, HUB_HEIGHT)

    def one(x_i, y_i, yaw_i, ct_i, ai_i, ti_i):
        if model == "gauss":
            deflection = gauss_deflection(xp, x_i, yaw_i, ti_i, ct_i, k)
            return gauss_deficit(xp, yp, zp, x_i, y_i, deflection, yaw_i, ti_i, ct_i, k)
        deflection = jimenez_deflection(xp, x_i, yaw_i, ct_i, k)
        return jensen_deficit(xp, yp, zp, x_i, y_i, deflection, ai_i, k)

    deficits = jax.vmap(one)(
        xt, yt, floris_yaw, flow.thrust_coefficient, flow.axial_induction, flow.turbulence_intensity
    )
    return wind_speed * (1.0 - safe_sqrt(jnp.sum(deficits**2, axis=0)))


# -------------------------------------------------------------------------------- eager validation
def validate_farm(positions, wind_speed, model: str) -> None:
    """Eager checks with clear errors: known model, no overlapping rotors, speed inside the table.

    Under jit nothing raises: the env clips the wind speed to [cut-in, cut-out] (PARAM_BOUNDS) and
    overlapping turbines give finite but meaningless wakes.
    """
    if model not in WAKE_MODELS:
        raise ValueError(f"unknown wake model {model!r}; choose one of {WAKE_MODELS}")
    pos = np.asarray(positions, np.float64)
    if pos.shape[0] > 1:
        gaps = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(pos.shape[0]) * 1e12
        i, j = np.unravel_index(np.argmin(gaps), gaps.shape)
        if gaps[i, j] < ROTOR_DIAMETER:
            raise ValueError(
                f"turbines {i} and {j} are {gaps[i, j]:.1f} m apart, closer than one rotor diameter "
                f"({ROTOR_DIAMETER} m): their rotors overlap"
            )
    speeds = np.asarray(wind_speed, np.float64)
    if np.any(speeds < CUT_IN_WIND_SPEED) or np.any(speeds > CUT_OUT_WIND_SPEED):
        raise ValueError(
            f"wind speed {speeds} m/s is outside the NREL 5 MW curve's producing range "
            f"[{CUT_IN_WIND_SPEED}, {CUT_OUT_WIND_SPEED}] m/s"
        )


def floris_configuration(model: str = "gauss", constants: WakeConstants | None = None) -> dict:
    """The FLORIS 4 input dict (plain Gauss or Jensen-Jimenez, no GCH extras) this module matches."""
    k = constants or WakeConstants()
    velocity, deflection = ("gauss", "gauss") if model == "gauss" else ("jensen", "jimenez")
    return {
        "name": f"hivex_jax {model}",
        "description": "matched by hivex_jax.envs.wind_farm_control.wakes",
        "floris_version": "v4",
        "logging": {
            "console": {"enable": False, "level": "WARNING"},
            "file": {"enable": False, "level": "WARNING"},
        },
        "solver": {"type": "turbine_grid", "turbine_grid_points": ROTOR_GRID_POINTS},
        "farm": {"layout_x": [0.0], "layout_y": [0.0], "turbine_type": ["nrel_5MW"]},
        "flow_field": {
            "air_density": float(k.air_density),
            "reference_wind_height": -1,
            "turbulence_intensities": [],
            "wind_directions": [],
            "wind_shear": float(k.wind_shear),
            "wind_speeds": [],
            "wind_veer": 0.0,
        },
        "wake": {
            "model_strings": {
                "combination_model": "sosfs",
                "deflection_model": deflection,
                "turbulence_model": "crespo_hernandez",
                "velocity_model": velocity,
            },
            "enable_secondary_steering": False,
            "enable_yaw_added_recovery": False,
            "enable_transverse_velocities": False,
            "enable_active_wake_mixing": False,
            "wake_deflection_parameters": {
                "gauss": {
                    "ad": 0.0,
                    "bd": 0.0,
                    "alpha": float(k.gauss_alpha),
                    "beta": float(k.gauss_beta),
                    "ka": float(k.gauss_ka),
                    "kb": float(k.gauss_kb),
                    "dm": float(k.deflection_dm),
                },
                "jimenez": {"ad": 0.0, "bd": 0.0, "kd": float(k.jimenez_kd)},
            },
            "wake_velocity_parameters": {
                "gauss": {
                    "alpha": float(k.gauss_alpha),
                    "beta": float(k.gauss_beta),
                    "ka": float(k.gauss_ka),
                    "kb": float(k.gauss_kb),
                },
                "jensen": {"we": float(k.jensen_we)},
            },
            "wake_turbulence_parameters": {
                "crespo_hernandez": {
                    "initial": float(k.ti_initial),
                    "constant": float(k.ti_constant),
                    "ai": float(k.ti_ai),
                    "downstream": float(k.ti_downstream),
                }
            },
        },
    }


# ------------------------------------------------------------------------------- env integration
def constants_from_params(params) -> WakeConstants:
    """The `WakeConstants` held in a `WindFarmParams`."""
    return WakeConstants(
        gauss_alpha=params.wake_gauss_alpha,
        gauss_beta=params.wake_gauss_beta,
        gauss_ka=params.wake_gauss_ka,
        gauss_kb=params.wake_gauss_kb,
        deflection_dm=params.wake_deflection_dm,
        ti_initial=params.wake_ti_initial,
        ti_constant=params.wake_ti_constant,
        ti_ai=params.wake_ti_ai,
        ti_downstream=params.wake_ti_downstream,
        jensen_we=params.wake_jensen_we,
        jimenez_kd=params.wake_jimenez_kd,
        wind_shear=params.wind_shear,
        air_density=params.air_density,
    )


def signed_yaw_offset(facing_angle: jax.Array, wind_angle: jax.Array) -> jax.Array:
    """f32[A] rad in [-pi, pi): rotor facing minus the direction the wind comes from (CCW positive)."""
    return jnp.mod(facing_angle - (wind_angle + jnp.pi) + jnp.pi, 2 * jnp.pi) - jnp.pi


def mean_direction(angles: jax.Array) -> jax.Array:
    """Circular mean (rad) of f32[A] angles."""
    return jnp.arctan2(jnp.mean(jnp.sin(angles)), jnp.mean(jnp.cos(angles)))


def waked_power(
    positions: jax.Array, facing_angle: jax.Array, local_wind_angle: jax.Array, params, model: str
) -> tuple[jax.Array, jax.Array]:
    """(power term f32[A] in [0, 1], power f32[A] in W) of the turbines with wakes.

    The wakes are advected along the circular mean of the turbines' local winds; each turbine's yaw is
    measured against its own local wind (exactly FLORIS when `wind_noise_degrees` is 0). The power term
    is the turbine's power over a lone aligned turbine's at the same wind speed, mixed with the farm's
    mean by `farm_power_share`. The wind speed is clipped to [cut-in, cut-out] under jit.
    """
    constants = constants_from_params(params)
    speed = jnp.clip(params.wind_speed, CUT_IN_WIND_SPEED, CUT_OUT_WIND_SPEED)
    yaw_offset = signed_yaw_offset(facing_angle, local_wind_angle)
    limit = jnp.deg2rad(params.wake_yaw_limit_degrees)
    flow = solve_farm(
        positions,
        jnp.clip(yaw_offset, -limit, limit),
        mean_direction(local_wind_angle),
        speed,
        params.turbulence_intensity,
        constants,
        model,
    )
    # the power sees the true yaw (zero beyond 90 deg); the wake only the clipped one
    power = power_of(flow.effective_velocity, -jnp.rad2deg(yaw_offset), constants.air_density)
    fraction = power / free_stream_power(speed, constants)
    share = params.farm_power_share
    return (1.0 - share) * fraction + share * jnp.mean(fraction), power
