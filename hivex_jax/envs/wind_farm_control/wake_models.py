"""The wake models of wakes.py, FLORIS 4.x's equations one function each: velocity deficits (`gauss`:
Bastankhah & Porté-Agel with a near-wake ramp; `jensen`: top hat), lateral deflections (`gauss`: Bastankhah
2016 / King 2019; `jimenez`) and added turbulence (`crespo_hernandez`), with their constants
(`WakeConstants`). Positions in the wind frame (x downstream, y crosswind, z up, metres); yaw angles are
FLORIS's (degrees). The solver that combines them over a farm is wakes.py's."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.envs.wind_farm_control.turbine import HUB_HEIGHT, ROTOR_DIAMETER, cosd

NUM_EPS = 0.001  # FLORIS BaseModel.NUM_EPS


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


def safe_sqrt(v: jax.Array) -> jax.Array:
    """sqrt with a zero (not NaN) gradient at 0: the wake sums and clipped terms are often exactly 0."""
    positive = v > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, v, 1.0)), 0.0)


def gauss_deflection(x, x_i, yaw_i, ti_i, ct_i, k: WakeConstants):
    """FLORIS GaussVelocityDeflection.function (ad = bd = 0): lateral wake centre offset (m)."""
    d = ROTOR_DIAMETER
    yaw = -yaw_i  # "opposite sign convention in this model"
    cy = cosd(yaw)
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
    xi = cosd(yaw_i) * jnp.sin(jnp.deg2rad(yaw_i)) * ct_i / 2.0
    grow = 2.0 * k.jimenez_kd * (x - x_i) / d + 1.0
    a = 15.0 * grow**4 + xi**2
    b = (30.0 * k.jimenez_kd / d) * grow**5
    c = xi * d * (15.0 + xi**2)
    return xi * a / b - c / (30.0 * k.jimenez_kd)


def gauss_deficit(x, y, z, x_i, y_i, deflection, yaw_i, ti_i, ct_i, k: WakeConstants):
    """FLORIS GaussVelocityDeficit.function (no veer): fractional deficit at the points."""
    d = ROTOR_DIAMETER
    yaw = -yaw_i
    cy = cosd(yaw)
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
