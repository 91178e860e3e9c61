"""The NREL 5 MW reference turbine of the wake models (wakes.py), as FLORIS 4.7 ships it
(floris/turbine_library/nrel_5MW.yaml, `cosine-loss` operation model): size, power and thrust tables, and
the rotor's 3 x 3 point grid (FLORIS's `TurbineGrid`, points at ±D/4). Pure JAX, vmappable and
differentiable in yaw; the yaw angles here are FLORIS's (degrees, -deg(yaw_offset))."""

from __future__ import annotations

import jax
import jax.numpy as jnp

ROTOR_DIAMETER = 125.88  # m
HUB_HEIGHT = 90.0  # m
RATED_POWER_W = 5.0e6
COSINE_LOSS_EXPONENT_YAW = 1.88
REF_AIR_DENSITY = 1.225
#: cut-in and cut-out: the power table is zero outside [3, 25] m/s
CUT_IN_WIND_SPEED, CUT_OUT_WIND_SPEED = 3.0, 25.0
ROTOR_GRID_POINTS = 3  # FLORIS's default turbine_grid_points
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


def cosd(deg: jax.Array) -> jax.Array:
    """cos of an angle in degrees."""
    return jnp.cos(jnp.deg2rad(deg))


def _interp(x, xp, fp):
    return jnp.interp(x, jnp.asarray(xp, jnp.float32), jnp.asarray(fp, jnp.float32))


def thrust_coefficient_of(rotor_average: jax.Array, floris_yaw_deg: jax.Array) -> jax.Array:
    """Ct f32[...] of the NREL 5 MW for a rotor-average speed (m/s): table, clip, then x cos(yaw)."""
    ct = jnp.clip(_interp(rotor_average, NREL5MW_WIND_SPEED, NREL5MW_THRUST_COEFFICIENT), 1e-4, 0.9999)
    return ct * cosd(floris_yaw_deg)


def axial_induction_of(ct: jax.Array, floris_yaw_deg: jax.Array) -> jax.Array:
    """Axial induction f32[...] from the yawed Ct (FLORIS CosineLossTurbine.axial_induction)."""
    loss = cosd(floris_yaw_deg)
    return 0.5 / loss * (1.0 - jnp.sqrt(1.0 - ct * loss))


def power_of(rotor_average: jax.Array, floris_yaw_deg: jax.Array, air_density) -> jax.Array:
    """Power f32[...] in W: air-density and cos(yaw)^(1.88/3) corrected speed through the power table."""
    speed = rotor_average * (air_density / REF_AIR_DENSITY) ** (1.0 / 3.0)
    # clip: a rotor turned past 90 deg makes no power (FLORIS would give NaN)
    cos_yaw = cosd(floris_yaw_deg)
    facing = cos_yaw > 0
    loss = jnp.where(facing, jnp.where(facing, cos_yaw, 1.0) ** (COSINE_LOSS_EXPONENT_YAW / 3.0), 0.0)
    speed = speed * loss
    return _interp(speed, NREL5MW_WIND_SPEED, NREL5MW_POWER_KW) * 1e3


def cubic_mean(u: jax.Array) -> jax.Array:
    """cbrt(mean(u^3)) over the last two axes (FLORIS's rotor average)."""
    return jnp.cbrt(jnp.mean(u**3, axis=(-2, -1)))


def rotor_offsets() -> jax.Array:
    """Offsets f32[ROTOR_GRID_POINTS] (m) of the rotor points from the hub, spanwise and vertically."""
    radius = 0.5 * ROTOR_DIAMETER / 2  # FLORIS radius_ratio 0.5
    return jnp.linspace(-radius, radius, ROTOR_GRID_POINTS, dtype=jnp.float32)
