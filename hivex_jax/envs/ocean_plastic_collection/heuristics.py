"""A scripted policy for the main task (Plastic Collection), reading only the observations."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from hivex_jax.core.reductions import first_argmin
from hivex_jax.envs.ocean_plastic_collection.dynamics import STEER_LEFT, STEER_NOOP, STEER_RIGHT
from hivex_jax.envs.ocean_plastic_collection.observations import VECTOR_SIZE, VISUAL_SIZE
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams

BORDER_LOOKAHEAD = 30.0  # m ahead that must stay inside the sea
BORDER_MARGIN = 15.0  # m kept from the border
CPA_DISTANCE = 20.0  # m: avoid a vessel predicted to pass closer than this ...
CPA_HORIZON = 10.0  # decisions: ... within this many decisions
NEIGHBOUR_COAST = 10.0  # m: cut the throttle when another vessel is this close
TOP_SPEED_GUESS = 4.0  # m per decision, assumed closing speed with a single frame
TURN_COST = 10.0  # m of detour charged per radian of heading change when choosing a pebble
ALIGNED = jnp.deg2rad(5.0)  # heading error below which the policy goes straight


def _heading_error(forward: jax.Array, direction: jax.Array) -> jax.Array:
    """Signed angle (rad, + = to the left) from `forward` to `direction`, both f32[A, 2]."""
    cross = forward[:, 0] * direction[:, 1] - forward[:, 1] * direction[:, 0]
    return jnp.arctan2(cross, jnp.sum(forward * direction, axis=-1))


def standard_frames(vector: jax.Array, frame_width: int = VECTOR_SIZE) -> tuple[jax.Array, jax.Array | None]:
    """(newest, previous or None) f32[A, 6]: the standard 6 floats of the newest and the previous frame of a
    (stacked) `vector` whose frames are `frame_width` floats each (12 with `approach_features`)."""
    width = vector.shape[-1]
    newest = vector[:, width - frame_width : width - frame_width + VECTOR_SIZE]
    if width < 2 * frame_width:
        return newest, None
    return newest, vector[:, width - 2 * frame_width : width - 2 * frame_width + VECTOR_SIZE]


def safety_rules(
    obs: dict[str, jax.Array], params: OceanPlasticParams, frame_width: int = VECTOR_SIZE
) -> tuple[jax.Array, jax.Array]:
    """(near_border, vessel_threat) bool[A]: where the scripted controller's border rule and its
    vessel-avoidance rule take over the steering (`scripted_policy`'s priorities 1 and 2)."""
    near_border, _, threat, _, _ = _safety_rules(obs, params, frame_width)
    return near_border, threat


def safety_mask(
    obs: dict[str, jax.Array], params: OceanPlasticParams, frame_width: int = VECTOR_SIZE
) -> jax.Array:
    """bool[A]: the decisions where either safety rule (border or vessel) takes over the steering."""
    near_border, threat = safety_rules(obs, params, frame_width)
    return near_border | threat


def _safety_rules(
    obs: dict[str, jax.Array], params: OceanPlasticParams, frame_width: int
) -> tuple[jax.Array, ...]:
    """(near_border, border_error, threat, avoid_error, gap) f32/bool[A] of the border and vessel rules."""
    e = params.sea_half_extent
    vector, previous = standard_frames(obs["vector"], frame_width)
    position, forward, neighbour = vector[:, 0:2] * e, vector[:, 2:4], vector[:, 4:6] * e

    # Border: the point ahead must stay inside the sea, else head for the centre.
    probe = position + forward * BORDER_LOOKAHEAD
    near_border = jnp.any(jnp.abs(probe) > e - BORDER_MARGIN, axis=-1)
    border_error = _heading_error(forward, -position)

    # Nearest vessel: predict the closest point of approach from the two stacked frames (straight-line
    # motion) and, if it comes within CPA_DISTANCE soon, turn away from the side it will pass on.
    offset = neighbour - position
    if previous is not None:
        had_previous = jnp.any(previous != 0.0, axis=-1)  # the older frame is zeros right after reset
        own_velocity = position - previous[:, 0:2] * e
        neighbour_velocity = neighbour - previous[:, 4:6] * e
        relative_velocity = jnp.where(had_previous[:, None], neighbour_velocity - own_velocity, 0.0)
    else:
        relative_velocity = -forward * TOP_SPEED_GUESS
    speed2 = jnp.maximum(jnp.sum(relative_velocity**2, axis=-1), 1e-6)
    t_cpa = jnp.clip(-jnp.sum(offset * relative_velocity, axis=-1) / speed2, 0.0, CPA_HORIZON)
    miss = offset + t_cpa[:, None] * relative_velocity
    gap = jnp.linalg.norm(offset, axis=-1)
    threat = (gap > 1e-3) & ((jnp.linalg.norm(miss, axis=-1) < CPA_DISTANCE) | (gap < CPA_DISTANCE))
    passes_left = (forward[:, 0] * miss[:, 1] - forward[:, 1] * miss[:, 0]) > 0
    avoid_error = jnp.where(passes_left, -1.0, 1.0)  # turn away from the side it passes on
    return near_border, border_error, threat, avoid_error, gap


def scripted_policy(obs: dict[str, jax.Array], params: OceanPlasticParams) -> dict[str, jax.Array]:
    """The scripted controller on the standard observation (`_scripted_policy`)."""
    return _scripted_policy(obs, params, VECTOR_SIZE)


def for_frame_width(frame_width: int) -> tuple[Callable, Callable]:
    """`(scripted_policy, safety_mask)` for vectors of `frame_width` floats per frame (the observation
    options add floats after the standard 6): what the env binds when an option is on."""
    return (
        functools.partial(_scripted_policy, frame_width=frame_width),
        functools.partial(safety_mask, frame_width=frame_width),
    )


def _scripted_policy(
    obs: dict[str, jax.Array], params: OceanPlasticParams, frame_width: int
) -> dict[str, jax.Array]:
    """Full throttle (coasting when a vessel is close ahead); steer, in priority order, away from the
    border, away from a vessel ahead, towards the cheapest pebble in view (distance + a turning cost),
    else straight on.

    Works on single or stacked frames (it reads the newest frame's standard 6 floats, `frame_width` floats
    per frame, and the last channel).
    """
    vector, _ = standard_frames(obs["vector"], frame_width)
    grid = obs["visual"][..., -1].astype(jnp.float32)  # [A, 25, 25], newest frame
    a = vector.shape[0]

    # Pebble target: the visible cell with the lowest distance + turning cost.
    g = VISUAL_SIZE
    centre = jnp.arange(g, dtype=jnp.float32) - (g - 1) / 2
    ahead = -centre[:, None] * params.visual_cell_size  # row 0 is ahead
    starboard = centre[None, :] * params.visual_cell_size
    distance = jnp.sqrt(ahead**2 + starboard**2)
    bearing = jnp.arctan2(-starboard, ahead)  # + = to the left
    cost = jnp.where(grid > 0, distance + TURN_COST * jnp.abs(bearing), jnp.inf).reshape(a, -1)
    best = first_argmin(cost)
    pebble_error = bearing.reshape(-1)[best]
    sees_pebble = jnp.isfinite(jnp.min(cost, axis=-1))

    near_border, border_error, threat, avoid_error, gap = _safety_rules(obs, params, frame_width)

    error = jnp.where(
        near_border,
        border_error,
        jnp.where(threat, avoid_error, jnp.where(sees_pebble, pebble_error, 0.0)),
    )
    steer = jnp.where(error > ALIGNED, STEER_LEFT, jnp.where(error < -ALIGNED, STEER_RIGHT, STEER_NOOP))
    throttle = jnp.where(gap < NEIGHBOUR_COAST, 0, 1).astype(jnp.int32)
    return {
        "continuous": jnp.zeros((a, 0), jnp.float32),
        "discrete": jnp.stack([throttle, steer.astype(jnp.int32)], axis=-1),
    }
