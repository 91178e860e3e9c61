"""Wildfire Resource Management dynamics: resource allocation, wind, fire spread, fire sighting.

Fire model (designed; HIVEX's is NOT FOUND). Each cell is unburnt fuel, burning, burnt or bare. A
burning neighbour d exerts an ignition hazard on an unburnt cell
    lambda_d = F(cell) * g(t) * w_d(t) * exp(slope_factor * rise_d / run_d)
with F the cell's flammability (fuel density x weather, fixed at reset), g(t) the island-wide weather
cycle, w_d = exp(wind_factor * wind_speed * cos(spread direction, wind)) (x `diagonal_weight` for the
diagonals), and rise/run the slope from the neighbour up to the cell. The cell ignites with
probability 1 - exp(-sum_d lambda_d) (independent competing hazards) and a burning cell burns out
with probability 1 / burn_duration per step. This is the model of `procgen.fire.ignition_probability`
(same wind and slope factors) written in hazard form, which factorises: exp(s (h_c - h_n)) =
exp(s h_c) exp(-s h_n), so a step costs 2 exponentials per cell (not 8) plus one for the
probability, and the wind is 8 scalars per step. Per-cell randomness comes from `hash_uniform`
(no threefry in the step); a cell needs a draw either to ignite or to burn out, never both, so one
uniform per cell suffices. The fire does not depend on the step key: the same world burns the same
way under any policy (as HIVEX's episode lengths, identical across tasks, suggest), unless
`resource_suppression` > 0 couples it to the allocation.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.wildfire_resource_management.generator import (
    BURNING,
    BURNT,
    FUEL,
    cycle_gain,
    weather_offsets,
)
from hivex_jax.envs.wildfire_resource_management.params import NUM_TOWERS, TOWER_GRID, WildfireParams
from hivex_jax.envs.wildfire_resource_management.types import WildfireState
from hivex_jax.procgen.fire import NEIGHBOUR_OFFSETS
from hivex_jax.procgen.noise import hash_uniform

NOOP, ADD, REMOVE = 0, 1, 2
NO_FIRE_DISTANCE = 1.0e9  # distance reported when a tower sees no fire (reads as "far, not approaching")
MAX_SLOPE_EXPONENT = 30.0  # exp() arguments are clipped here so extreme params cannot overflow


def allocate(allocation: jax.Array, action: jax.Array, params: WildfireParams) -> jax.Array:
    """Apply the 4 branches' actions to `allocation` f32[A, 4] (resources handed to self, nb 1-3).

    Removes act first (never below 0) and free budget; then adds are granted in branch order (self,
    neighbour 1, 2, 3), each up to `resource_step`, while the tower's total stays within its budget.
    So a tower out of resources must remove some before it can re-distribute (reference §2.2).
    """
    step = params.resource_step
    removed = jnp.maximum(allocation - step * (action == REMOVE), 0.0)
    free = params.resource_budget - jnp.sum(removed, axis=-1, keepdims=True)
    request = step * (action == ADD).astype(jnp.float32)
    before = jnp.cumsum(request, axis=-1) - request
    granted = jnp.clip(free - before, 0.0, request)
    return removed + granted


def received_support(allocation: jax.Array, target_onehot: jax.Array) -> jax.Array:
    """f32[A] resources supporting each tower (from itself and from the towers that list it)."""
    return jnp.einsum("ib,ibj->j", allocation, target_onehot)


def wind_now(wind_angle: jax.Array, wind_phase: jax.Array, t: jax.Array, params: WildfireParams) -> jax.Array:
    """Direction (rad, counter-clockwise from +x) the wind blows towards at step `t`."""
    swing = jnp.deg2rad(params.wind_swing_degrees) * jnp.sin(
        2.0 * jnp.pi * t / params.wind_swing_period + wind_phase
    )
    return wind_angle + swing


# Per neighbour offset (NEIGHBOUR_OFFSETS order): the unit direction fire travels from that neighbour
# to the cell in world (x, z) (columns are +x, rows are -z), and whether the neighbour is diagonal.
_SPREAD_DIRECTIONS = np.asarray(
    [[-dc / math.hypot(dr, dc), dr / math.hypot(dr, dc)] for dr, dc in NEIGHBOUR_OFFSETS], np.float32
)
_DIAGONAL = np.asarray([dr != 0 and dc != 0 for dr, dc in NEIGHBOUR_OFFSETS])


def direction_weights(angle: jax.Array, speed: jax.Array, params: WildfireParams) -> jax.Array:
    """f32[8] hazard multipliers for fire spreading from each neighbour offset (NEIGHBOUR_OFFSETS)."""
    along = _SPREAD_DIRECTIONS[:, 0] * jnp.cos(angle) + _SPREAD_DIRECTIONS[:, 1] * jnp.sin(angle)
    w = jnp.exp(params.wind_factor * speed * along)
    return jnp.where(_DIAGONAL, params.diagonal_weight * w, w)


def _neighbour_sum(source: jax.Array, weights: jax.Array, offsets: list[tuple[int, int, int]]) -> jax.Array:
    """sum_i weights[i] * source[r + dr_i, c + dc_i] (zero outside the grid), one pad for all offsets."""
    h, w = source.shape
    padded = jnp.pad(source, 1)
    total = jnp.zeros_like(source)
    for i, dr, dc in offsets:
        total = total + weights[i] * jax.lax.slice(padded, (1 + dr, 1 + dc), (1 + dr + h, 1 + dc + w))
    return total


_ORTHOGONAL_OFFSETS = [(i, dr, dc) for i, (dr, dc) in enumerate(NEIGHBOUR_OFFSETS) if dr == 0 or dc == 0]
_DIAGONAL_OFFSETS = [(i, dr, dc) for i, (dr, dc) in enumerate(NEIGHBOUR_OFFSETS) if dr != 0 and dc != 0]


def ignition_hazard(
    burning: jax.Array,
    heights: jax.Array,
    flammability: jax.Array,
    weights: jax.Array,
    slope_factor: jax.Array,
    cell_size: jax.Array | float,
    height_reference: jax.Array | float = 0.0,
) -> jax.Array:
    """Total ignition hazard f32[H, W] on each cell from its burning neighbours (before `g(t)`).

    burning f32[H, W] in {0, 1}; heights (m) and flammability f32[H, W]; weights f32[8] per offset.
    `height_reference` (m, mid-range of the heights) keeps the factorised exponentials small; the
    result does not depend on it unless the clip at MAX_SLOPE_EXPONENT is reached.
    """
    h_ref = height_reference
    orth_exp = jnp.clip(slope_factor * (heights - h_ref) / cell_size, -MAX_SLOPE_EXPONENT, MAX_SLOPE_EXPONENT)
    up_orth = jnp.exp(orth_exp)  # exp(s h / run) for orthogonal neighbours
    up_diag = jnp.exp(orth_exp / math.sqrt(2.0))  # run is sqrt(2) cells on the diagonals
    sum_orth = _neighbour_sum(burning / up_orth, weights, _ORTHOGONAL_OFFSETS)
    sum_diag = _neighbour_sum(burning / up_diag, weights, _DIAGONAL_OFFSETS)
    return flammability * (up_orth * sum_orth + up_diag * sum_diag)


def spread_fire(
    fire: jax.Array,
    heights: jax.Array,
    flammability: jax.Array,
    weights: jax.Array,
    weather_gain: jax.Array,
    suppression: jax.Array,
    seed: jax.Array,
    t: jax.Array,
    params: WildfireParams,
) -> jax.Array:
    """One fire step: new cell phases uint8[H, W] (fuel -> burning -> burnt; bare cells never burn).

    weather_gain f32[] is g(t); suppression f32[H, W] divides the hazard (1 where nothing is held).
    """
    resolution = fire.shape[0]
    cell_size = 2.0 * params.island_half_extent / resolution
    burning = fire == BURNING
    relief = params.terrain_level.astype(jnp.float32) * params.elevation_per_level
    hazard = ignition_hazard(
        burning.astype(jnp.float32),
        heights,
        flammability,
        weights,
        params.slope_factor,
        cell_size,
        0.5 * (1.0 + relief),
    )
    p_ignite = -jnp.expm1(-hazard * weather_gain / suppression)
    u = hash_uniform(seed, t, fire.shape)
    ignite = (fire == FUEL) & (u < p_ignite)
    burn_out = burning & (u < 1.0 / params.burn_duration)
    return jnp.where(ignite, BURNING, jnp.where(burn_out, BURNT, fire)).astype(jnp.uint8)


def region_suppression(support: jax.Array, resolution: int, params: WildfireParams) -> jax.Array:
    """f32[R, R] hazard divisor: 1 + resource_suppression * support of the tower whose region
    (nearest tower, i.e. the 3 x 3 Voronoi cells of the grid) contains the cell."""
    half = params.island_half_extent
    c = (jnp.arange(resolution, dtype=jnp.float32) + 0.5) / resolution * 2.0 - 1.0
    x = c * half
    edge = 0.5 * params.tower_spacing
    col = (x > -edge).astype(jnp.int32) + (x > edge).astype(jnp.int32)  # west -> east
    row = (-x < edge).astype(jnp.int32) + (-x < -edge).astype(jnp.int32)  # rows go north -> south
    region = row[:, None] * 3 + col[None, :]
    return 1.0 + params.resource_suppression * support[region]


def _packed_min(values: jax.Array, valid: jax.Array, bits: int) -> tuple[jax.Array, jax.Array]:
    """Min and argmin of `values` (>= 0) over the last axis as ONE integer min: the float's bits
    (monotone for non-negative floats) with the low `bits` bits replaced by the index (ties -> lowest
    index). Returns (min value, truncated to the kept bits, or inf; argmin)."""
    low = (1 << bits) - 1
    index = jnp.arange(values.shape[-1], dtype=jnp.int32)
    key = (jax.lax.bitcast_convert_type(values, jnp.int32) & ~low) | index
    best = jnp.min(jnp.where(valid, key, jnp.iinfo(jnp.int32).max), axis=-1)
    value = jax.lax.bitcast_convert_type(best & ~low, jnp.float32)
    return jnp.where(best == jnp.iinfo(jnp.int32).max, jnp.inf, value), best & low


def nearest_fire(
    burning: jax.Array, heights: jax.Array, tower_xyz: jax.Array, params: WildfireParams
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Each tower's closest observed burning cell: (position f32[A, 3] (x, y, z), distance f32[A],
    found bool[A]).

    The cell is the horizontally nearest burning cell (towers scan the horizon); it counts as seen
    within `observation_radius`; the distance is 3-D, tower base to cell centre on the terrain.
    For speed the search uses the 3 x 3 layout: towers in a grid column share x, so the nearest
    burning cell of each row is found once per column (3 R^2 work, not 9 R^2), then each tower picks
    the best row (9 R). Both mins carry their argmin in the low bits (`_packed_min`); d^2 keeps
    >= 16 significant bits up to a 128 x 128 grid.
    """
    resolution = burning.shape[0]
    bits = max(1, math.ceil(math.log2(resolution)))
    half = params.island_half_extent
    centres = ((jnp.arange(resolution, dtype=jnp.float32) + 0.5) / resolution * 2.0 - 1.0) * half
    column_x = tower_xyz[:TOWER_GRID, 0]  # x of grid columns 0-2 (towers 0, 1, 2)
    row_z = tower_xyz[::TOWER_GRID, 2]  # z of grid rows 0-2 (towers 0, 3, 6)
    dx2 = (centres[None, :] - column_x[:, None]) ** 2  # [3, R] by cell column
    dz2 = (-centres[None, :] - row_z[:, None]) ** 2  # [3, R] by cell row (row 0 is north, +z)
    # Per tower column and cell row: the closest burning cell of that row.
    row_dx2, row_col = _packed_min(
        jnp.broadcast_to(dx2[:, None, :], (TOWER_GRID, resolution, resolution)), burning[None], bits
    )  # [3, R]
    tower_col = np.arange(NUM_TOWERS) % TOWER_GRID
    tower_row = np.arange(NUM_TOWERS) // TOWER_GRID
    d2 = dz2[tower_row] + row_dx2[tower_col]  # [A, R], inf where the row has no fire
    best_d2, r = _packed_min(jnp.where(jnp.isfinite(d2), d2, 0.0), jnp.isfinite(d2), bits)
    c = row_col[tower_col, r]
    found = jnp.isfinite(best_d2) & (best_d2 <= params.observation_radius**2)
    position = jnp.stack([centres[c], heights[r, c], -centres[r]], axis=-1)
    tx, ty, tz = tower_xyz[:, 0], tower_xyz[:, 1], tower_xyz[:, 2]
    dist = jnp.sqrt((position[:, 0] - tx) ** 2 + (position[:, 1] - ty) ** 2 + (position[:, 2] - tz) ** 2)
    return position, jnp.where(found, dist, NO_FIRE_DISTANCE), found


def advance_fire(
    state: WildfireState, support: jax.Array, resolution: int, params: WildfireParams
) -> jax.Array:
    """u8[R, R]: `state`'s fire one step later, under this step's wind and weather and the towers'
    `support` f32[A] (which suppresses the fire in their regions when `resource_suppression` > 0)."""
    t = state.step.astype(jnp.float32)
    offsets = weather_offsets(state.weather_phase, t, params)
    angle = wind_now(state.wind_angle, state.wind_phase, t, params)
    return spread_fire(
        state.fire,
        state.heights,
        state.flammability,
        direction_weights(angle, state.wind_speed, params),
        cycle_gain(offsets, params),
        region_suppression(support, resolution, params),
        state.fire_seed,
        state.step,
        params,
    )
