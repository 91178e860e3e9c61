"""A scripted policy for the main task that reads only the observation (vector + camera)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.reductions import first_argmax
from hivex_jax.envs.drone_based_reforestation.observations import (
    GRAY_BAND,
    GRAY_BAND_RANGE,
    LAYOUT,
    VECTOR_SIZE,
)
from hivex_jax.envs.drone_based_reforestation.params import DroneParams

CRUISE_HEIGHT = 20.0  # m above ground while searching (camera half-width 6 + 20 = 26 m)
DROP_POTENTIAL = 0.75  # drop where the camera shows at least this potential (d_et <= ~20 m)
ENERGY_MARGIN = 0.05
ASSUMED_SUBSTEPS = 5


def _steer_towards(angle: jax.Array) -> jax.Array:
    """Steer command for a target `angle` rad to the right of the heading (steer +1 turns right)."""
    return jnp.clip(angle / (jnp.pi / 4), -1.0, 1.0)


def scripted_policy(obs: dict[str, jax.Array], params: DroneParams) -> dict[str, jax.Array]:
    """Fly out at cruise height, follow the brightest reforestation-band pixel of the camera, drop the
    seed where the potential is high, fly home (also when the battery would not last the way back),
    recharge to full and take a new seed. Works on stacked (20) or single (10) vector observations."""
    v = obs["vector"][:, -VECTOR_SIZE:]
    height_above_ground = v[:, LAYOUT["distance_to_ground"]][:, 0] * params.height_scale
    pos = v[:, LAYOUT["position"]]
    rel = jnp.stack([pos[:, 0], pos[:, 2]], -1) * params.position_scale  # from the station (x, z)
    y = pos[:, 1] * params.height_scale
    fwd = v[:, LAYOUT["forward"]][:, (0, 2)]
    right = jnp.stack([fwd[:, 1], -fwd[:, 0]], -1)
    station_y = v[:, LAYOUT["station_height"]][:, 0] * params.height_scale
    holding = v[:, LAYOUT["holding_seed"]][:, 0] > 0.5
    energy = v[:, LAYOUT["energy"]][:, 0]

    home_distance = jnp.linalg.norm(rel, axis=-1)
    metres_per_decision = params.max_speed * params.substep_seconds * ASSUMED_SUBSTEPS
    drain = params.battery_drain_holding_seed * ASSUMED_SUBSTEPS
    energy_needed = 1.5 * drain * home_distance / metres_per_decision + ENERGY_MARGIN
    going_home = ~holding | (energy < energy_needed)
    at_home = home_distance < 0.5 * params.charge_radius
    charging = at_home & ((energy < 0.98) | ~holding)

    # --- camera: potential per pixel, the best pixel and the potential under the drone
    gray = obs["visual"][..., -1].astype(jnp.float32) / 255.0  # [A, S, S]
    s = gray.shape[-1]
    in_band = (gray >= GRAY_BAND - 0.01) & (gray <= GRAY_BAND + GRAY_BAND_RANGE + 0.01)
    pot = jnp.where(in_band, (gray - GRAY_BAND) / GRAY_BAND_RANGE, -1.0)
    mid = s // 2
    here = jnp.min(pot[:, mid - 1 : mid + 1, mid - 1 : mid + 1], axis=(1, 2))
    flat = pot.reshape(pot.shape[0], -1)
    best = first_argmax(flat)
    best_pot = jnp.max(flat, axis=-1)
    unit = (2.0 * jnp.arange(s, dtype=jnp.float32) + 1.0) / s - 1.0
    ahead = -unit[best // s]
    to_right = unit[best % s]
    band_angle = jnp.arctan2(to_right, ahead)

    # --- search: follow the band, else keep flying away from home
    away_angle = jnp.arctan2(jnp.sum(rel * right, -1), jnp.sum(rel * fwd, -1))
    search_angle = jnp.where(
        best_pot > here + 0.02, band_angle, jnp.where(home_distance > 1.0, away_angle, 0.0)
    )
    drop = holding & ~going_home & (here >= DROP_POTENTIAL) & (home_distance > params.charge_radius + 2.0)

    # --- home: steer to the station, slow down and descend to the station point near it
    home_angle = jnp.arctan2(-jnp.sum(rel * right, -1), -jnp.sum(rel * fwd, -1))
    angle = jnp.where(going_home, home_angle, search_angle)
    steer = _steer_towards(angle)
    turning = jnp.abs(angle) > jnp.pi / 3
    throttle = jnp.where(turning, 0.2, 1.0)
    throttle = jnp.where(going_home, jnp.minimum(throttle, jnp.clip(home_distance / 8.0, 0.1, 1.0)), throttle)
    target_y = jnp.where(
        going_home & (home_distance < 25.0),
        station_y,
        jnp.maximum(y - height_above_ground + CRUISE_HEIGHT, station_y),
    )
    climb = jnp.clip((target_y - y) / 2.0, -1.0, 1.0)

    # --- at home: hover until charged and holding a seed
    throttle = jnp.where(charging, 0.0, throttle)
    steer = jnp.where(charging, 0.0, steer)
    climb = jnp.where(charging, jnp.clip((station_y - y) / 2.0, -1.0, 1.0), climb)
    return {
        "continuous": jnp.stack([throttle, steer, climb], -1).astype(jnp.float32),
        "discrete": drop.astype(jnp.int32)[:, None],
    }
