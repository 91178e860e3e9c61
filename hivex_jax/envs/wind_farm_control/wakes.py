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
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

#: the wake model sets; "none" = HIVEX (no wakes)
WAKE_MODELS = ("none", "gauss", "jensen")

# --- NREL 5 MW reference turbine, as FLORIS 4.7 ships it (floris/turbine_library/nrel_5MW.yaml)
ROTOR_DIAMETER = 125.88  # m
HUB_HEIGHT = 90.0  # m
RATED_POWER_W = 5.0e6
COSINE_LOSS_EXPONENT_YAW = 1.88
REF_AIR_DENSITY = 1.225
#: cut-in and cut-out: the power table is zero outside [3, 25] m/s
CUT_IN_WIND_SPEED, CUT_OUT_WIND_SPEED = 3.0, 25.0
ROTOR_GRID_POINTS = 3  # FLORIS's default turbine_grid_points
NUM_EPS = 0.001  # FLORIS BaseModel.NUM_EPS
NREL5MW_WIND_SPEED = (
    0.0,
    2.9,
    3.0,
    4.0,
    5.0,
    6.0,
    7.0,
    7.1,
    7.2,
    7.3,
    7.4,
    7.5,
    7.6,
    7.7,
    7.8,
    7.9,
    8.0,
    9.0,
    10.0,
    10.1,
    10.2,
    10.3,
    10.4,
    10.5,
    10.6,
    10.7,
    10.8,
    10.9,
    11.0,
    11.1,
    11.2,
    11.3,
    11.4,
    11.5,
    11.6,
    11.7,
    11.8,
    11.9,
    12.0,
    13.0,
    14.0,
    15.0,
    16.0,
    17.0,
    18.0,
    19.0,
    20.0,
    21.0,
    22.0,
    23.0,
    24.0,
    25.0,
    25.1,
    50.0,
)
NREL5MW_POWER_KW = (
    0.0,
    0.0,
    40.518011517569214,
    177.67162506419703,
    403.900880943964,
    737.5889584824021,
    1187.1774030611875,
    1239.245945375778,
    1292.5184293723503,
    1347.3213147477102,
    1403.2573725578948,
    1460.7011898730707,
    1519.6419125979983,
    1580.174365096404,
    1642.1103166918167,
    1705.758292831,
    1771.1659528893977,
    2518.553107505315,
    3448.381605840943,
    3552.140809000129,
    3657.9545431794127,
    3765.121299313842,
    3873.928844315059,
    3984.4800226955504,
    4096.582833096852,
    4210.721306623712,
    4326.154305853405,
    4443.395565353604,
    4562.497934188341,
    4683.419890251577,
    4806.164748311019,
    4929.931918769215,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    5000.0,
    0.0,
    0.0,
)
NREL5MW_THRUST_COEFFICIENT = (
    0.0,
    0.0,
    1.132034888,
    0.999470963,
    0.917697381,
    0.860849503,
    0.815371198,
    0.811614904,
    0.807939328,
    0.80443352,
    0.800993851,
    0.79768116,
    0.794529244,
    0.791495834,
    0.788560434,
    0.787217182,
    0.787127977,
    0.785839257,
    0.783812219,
    0.783568108,
    0.783328285,
    0.781194418,
    0.777292539,
    0.773464375,
    0.769690236,
    0.766001924,
    0.762348072,
    0.758760824,
    0.755242872,
    0.751792927,
    0.748434131,
    0.745113997,
    0.717806682,
    0.672204789,
    0.63831272,
    0.610176496,
    0.585456847,
    0.563222111,
    0.542912273,
    0.399312061,
    0.310517829,
    0.248633226,
    0.203543725,
    0.169616419,
    0.143478955,
    0.122938861,
    0.106515296,
    0.093026095,
    0.081648606,
    0.072197368,
    0.064388275,
    0.057782745,
    0.0,
    0.0,
)


@struct.dataclass
class WakeConstants:
    """The wake models' continuous constants (FLORIS 4 default_inputs.yaml values by default)."""

    gauss_alpha: jax.Array | float = 0.58
    gauss_beta: jax.Array | float = 0.077
    gauss_ka: jax.Array | float = 0.38
    gauss_kb: jax.Array | float = 0.004
    deflection_dm: jax.Array | float = 1.0
    ti_initial: jax.Array | float = 0.1
    ti_constant: jax.Array | float = 0.5
    ti_ai: jax.Array | float = 0.8
    ti_downstream: jax.Array | float = -0.32
    jensen_we: jax.Array | float = 0.05
    jimenez_kd: jax.Array | float = 0.05
    wind_shear: jax.Array | float = 0.12
    air_density: jax.Array | float = 1.225


@struct.dataclass
class FarmFlow:
    """Solved farm: per-turbine quantities in the caller's turbine order."""

    rotor_velocities: jax.Array  # f32[A, 3, 3], m/s at the rotor points (spanwise, vertical)
    effective_velocity: jax.Array  # f32[A], cubic mean over the rotor points (FLORIS's average)
    power: jax.Array  # f32[A], W (yaw cosine loss and air density applied)
    thrust_coefficient: jax.Array  # f32[A], Ct with FLORIS's cos(yaw) factor
    axial_induction: jax.Array  # f32[A]
    turbulence_intensity: jax.Array  # f32[A], mean over the rotor points


def _cosd(deg):
    return jnp.cos(jnp.deg2rad(deg))


def _interp(x, xp, fp):
    return jnp.interp(x, jnp.asarray(xp, jnp.float32), jnp.asarray(fp, jnp.float32))


def thrust_coefficient_of(rotor_average: jax.Array, floris_yaw_deg: jax.Array) -> jax.Array:
    """Ct f32[...] of the NREL 5 MW for a rotor-average speed (m/s): table, clip, then x cos(yaw)."""
    ct = jnp.clip(_interp(rotor_average, NREL5MW_WIND_SPEED, NREL5MW_THRUST_COEFFICIENT), 1e-4, 0.9999)
    return ct * _cosd(floris_yaw_deg)


def axial_induction_of(ct: jax.Array, floris_yaw_deg: jax.Array) -> jax.Array:
    """Axial induction f32[...] from the yawed Ct (FLORIS CosineLossTurbine.axial_induction)."""
    loss = _cosd(floris_yaw_deg)
    return 0.5 / loss * (1.0 - jnp.sqrt(1.0 - ct * loss))


def power_of(rotor_average: jax.Array, floris_yaw_deg: jax.Array, air_density) -> jax.Array:
    """Power f32[...] in W: air-density and cos(yaw)^(1.88/3) corrected speed through the power table."""
    speed = rotor_average * (air_density / REF_AIR_DENSITY) ** (1.0 / 3.0)
    # clip: a rotor turned past 90 deg makes no power (FLORIS would give NaN)
    cos_yaw = _cosd(floris_yaw_deg)
    facing = cos_yaw > 0
    loss = jnp.where(facing, jnp.where(facing, cos_yaw, 1.0) ** (COSINE_LOSS_EXPONENT_YAW / 3.0), 0.0)
    speed = speed * loss
    return _interp(speed, NREL5MW_WIND_SPEED, NREL5MW_POWER_KW) * 1e3


def safe_sqrt(v: jax.Array) -> jax.Array:
    """sqrt with a zero (not NaN) gradient at 0: the wake sums and clipped terms are often exactly 0."""
    positive = v > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, v, 1.0)), 0.0)


def cubic_mean(u: jax.Array) -> jax.Array:
    """cbrt(mean(u^3)) over the last two axes (FLORIS's rotor average)."""
    return jnp.cbrt(jnp.mean(u**3, axis=(-2, -1)))


def free_stream_power(wind_speed, constants: WakeConstants) -> jax.Array:
    """Power (W) of a lone turbine facing the wind: the normaliser of the env's waked power term."""
    offsets = _rotor_offsets()
    u = wind_speed * ((HUB_HEIGHT + offsets) / HUB_HEIGHT) ** constants.wind_shear
    u = jnp.broadcast_to(u[None, :], (ROTOR_GRID_POINTS, ROTOR_GRID_POINTS))
    return power_of(cubic_mean(u), jnp.float32(0.0), constants.air_density)


def _rotor_offsets() -> jax.Array:
    radius = 0.5 * ROTOR_DIAMETER / 2  # FLORIS radius_ratio 0.5
    return jnp.linspace(-radius, radius, ROTOR_GRID_POINTS, dtype=jnp.float32)


def to_wind_frame(positions: jax.Array, wind_angle: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Rotate f32[..., 2] positions so the wind blows along +x: returns (downstream x, crosswind y)."""
    c, s = jnp.cos(wind_angle), jnp.sin(wind_angle)
    px, py = positions[..., 0], positions[..., 1]
    return px * c + py * s, -px * s + py * c


# ------------------------------------------------------------------------------------- wake models
def gauss_deflection(x, x_i, yaw_i, ti_i, ct_i, k: WakeConstants):
    """FLORIS GaussVelocityDeflection.function (ad = bd = 0): lateral wake centre offset (m)."""
    d = ROTOR_DIAMETER
    yaw = -yaw_i  # "opposite sign convention in this model"
    cy = _cosd(yaw)
    uR_over_U = ct_i * cy / (2.0 * (1.0 - jnp.sqrt(1.0 - ct_i * cy)))
    u0_over_U = jnp.sqrt(1.0 - ct_i)
    x0 = (
        d
        * (cy * (1.0 + jnp.sqrt(1.0 - ct_i * cy)))
        / (math.sqrt(2.0) * (4.0 * k.gauss_alpha * ti_i + 2.0 * k.gauss_beta * (1.0 - jnp.sqrt(1.0 - ct_i))))
        + x_i
    )
    ky = k.gauss_ka * ti_i + k.gauss_kb
    c0 = 1.0 - u0_over_U
    m0 = c0 * (2.0 - c0)
    e0 = c0**2 - 3.0 * math.exp(1.0 / 12.0) * c0 + 3.0 * math.exp(1.0 / 3.0)
    sigma_z0 = d * 0.5 * jnp.sqrt(uR_over_U / (1.0 + u0_over_U))
    sigma_y0 = sigma_z0 * cy
    theta_c0 = k.deflection_dm * (0.3 * jnp.deg2rad(yaw) / cy) * (1.0 - jnp.sqrt(1.0 - ct_i * cy))
    delta0 = jnp.tan(theta_c0) * (x0 - x_i)
    near = ((x - x_i) / (x0 - x_i)) * delta0 * ((x >= x_i) & (x <= x0))
    far_zone = x >= x0
    sigma_y = jnp.where(far_zone, ky * (x - x0) + sigma_y0, sigma_y0)
    sigma_z = jnp.where(far_zone, ky * (x - x0) + sigma_z0, sigma_z0)
    sqrt_m0 = jnp.sqrt(m0)
    middle = jnp.sqrt(sigma_y * sigma_z / (sigma_y0 * sigma_z0))
    log_ratio = jnp.log(
        (1.6 + sqrt_m0) * (1.6 * middle - sqrt_m0) / ((1.6 - sqrt_m0) * (1.6 * middle + sqrt_m0))
    )
    far = delta0 + theta_c0 * e0 / 5.2 * jnp.sqrt(sigma_y0 * sigma_z0 / (ky * ky * m0)) * log_ratio
    return near + far * (x > x0)


def jimenez_deflection(x, x_i, yaw_i, ct_i, k: WakeConstants):
    """FLORIS JimenezVelocityDeflection.function (ad = bd = 0): lateral wake centre offset (m)."""
    d = ROTOR_DIAMETER
    xi = _cosd(yaw_i) * jnp.sin(jnp.deg2rad(yaw_i)) * ct_i / 2.0
    grow = 2.0 * k.jimenez_kd * (x - x_i) / d + 1.0
    a = 15.0 * grow**4 + xi**2
    b = (30.0 * k.jimenez_kd / d) * grow**5
    c = xi * d * (15.0 + xi**2)
    return xi * a / b - c / (30.0 * k.jimenez_kd)


def gauss_deficit(x, y, z, x_i, y_i, deflection, yaw_i, ti_i, ct_i, k: WakeConstants):
    """FLORIS GaussVelocityDeficit.function (no veer): fractional deficit at the points."""
    d = ROTOR_DIAMETER
    yaw = -yaw_i
    cy = _cosd(yaw)
    sq = jnp.sqrt(1.0 - ct_i)
    uR_over_U = ct_i / (2.0 * (1.0 - sq))
    sigma_z0 = d * 0.5 * jnp.sqrt(uR_over_U / (1.0 + sq))
    sigma_y0 = sigma_z0 * cy
    x0 = x_i + d * cy * (1.0 + sq) / (
        math.sqrt(2.0) * (4.0 * k.gauss_alpha * ti_i + 2.0 * k.gauss_beta * (1.0 - sq))
    )

    def shape(sigma_y, sigma_z):
        r2 = (y - y_i - deflection) ** 2 / (2.0 * sigma_y**2) + (z - HUB_HEIGHT) ** 2 / (2.0 * sigma_z**2)
        c = 1.0 - safe_sqrt(jnp.clip(1.0 - ct_i * cy / (8.0 * sigma_y * sigma_z / (d * d)), 0.0, 1.0))
        return c * jnp.exp(-r2)  # FLORIS gaussian_function(C, r2, 1, sqrt(0.5))

    near_mask = (x > x_i + 0.1) & (x < x0)
    ramp_up = (x - x_i) / (x0 - x_i)
    ramp_down = (x0 - x) / (x0 - x_i)
    near_sigma = ramp_down * 0.501 * d * jnp.sqrt(ct_i / 2.0) + ramp_up * sigma_y0
    near_sigma_z = ramp_down * 0.501 * d * jnp.sqrt(ct_i / 2.0) + ramp_up * sigma_z0
    # outside the near wake the sigmas are unused: keep them positive so gradients stay finite
    near_sigma = jnp.where(near_mask, near_sigma, sigma_y0)
    near_sigma_z = jnp.where(near_mask, near_sigma_z, sigma_z0)
    near = shape(near_sigma, near_sigma_z) * near_mask

    far_mask = x >= x0
    ky = k.gauss_ka * ti_i + k.gauss_kb
    far_sigma_y = jnp.where(far_mask, ky * (x - x0) + sigma_y0, sigma_y0)
    far_sigma_z = jnp.where(far_mask, ky * (x - x0) + sigma_z0, sigma_z0)
    far = shape(far_sigma_y, far_sigma_z) * far_mask
    return near + far


def jensen_deficit(x, y, z, x_i, y_i, deflection, ai_i, k: WakeConstants):
    """FLORIS JensenVelocityDeficit.function: top-hat fractional deficit at the points."""
    radius = ROTOR_DIAMETER / 2.0
    dx = x - x_i
    dy = y - y_i - deflection
    dz = z - HUB_HEIGHT
    inside = (dx > NUM_EPS) & (jnp.sqrt(dy**2 + dz**2) < k.jensen_we * dx + radius)
    c = (radius / (radius + k.jensen_we * jnp.maximum(dx, 0.0) + NUM_EPS)) ** 2
    return 2.0 * ai_i * jnp.where(inside, c, 0.0)


def crespo_hernandez(ambient_ti, x, x_i, ai_i, k: WakeConstants):
    """FLORIS CrespoHernandez.function: wake-added turbulence intensity at the points."""
    dx = x - x_i
    # FLORIS sets dx to (dx + 1) within 0.1 m of the source and zeroes the upstream side; the solver
    # then keeps only x > x_i, so any positive stand-in is equivalent and keeps the power finite.
    dx = jnp.where(dx > 0.1, dx, 1.0)
    ti = k.ti_constant * ai_i**k.ti_ai * ambient_ti**k.ti_initial * (dx / ROTOR_DIAMETER) ** k.ti_downstream
    return ti * (x - x_i > -0.1)


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

    offsets = _rotor_offsets()
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
