"""Aerial Wildfire Suppression dynamics: flight, water, weather and the cellular fire.

Fire model (designed; the reference has none): each burning tree ignites each of its 8 neighbouring trees
with probability `p = clip(base * d * exp(wind_factor * wind . u + slope_factor * slope . u), 0, 1)` per
step, u = unit direction of spread, d = 1 (orthogonal) or `diagonal_spread_weight`,
`base = spread_probability * exp(temperature_factor (T - 25)/10 - humidity_factor (H - 40)/30)`.
This is `procgen.fire.ignition_probability` with the height difference replaced by the terrain block's
slope (identical on planar ground, see the tests); the 8 directional probabilities are computed once per
4 x 4-cell terrain block, so a cell costs 8 multiplies instead of 8 exponentials. Burning trees burn out
with probability 1/burn_duration per step; wet trees dry with probability 1/wet_duration. One hashed
uniform per cell per step serves all three (a cell is in one state at a time).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.reductions import exact_reduce
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_centres, island_half_extent
from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BURNING,
    BURNT,
    EVERY_STEP,
    HEALTHY,
    PICKUP_EQ50_LITERAL,
    WET,
    AerialWildfireParams,
)
from hivex_jax.envs.aerial_wildfire_suppression.types import AerialWildfireState, Weather
from hivex_jax.procgen.fire import NEIGHBOUR_OFFSETS
from hivex_jax.procgen.noise import hash_uniform

#: unit direction (x, z) of spread from each neighbour to the cell, f32[8, 2]
SPREAD_DIRECTIONS = np.asarray(
    [np.asarray([-dc, dr], np.float32) / np.hypot(dr, dc) for dr, dc in NEIGHBOUR_OFFSETS], np.float32
)
IS_DIAGONAL = np.asarray([dr != 0 and dc != 0 for dr, dc in NEIGHBOUR_OFFSETS])


def forward(heading: jax.Array) -> jax.Array:
    """Unit forward vectors f32[..., 2] (x, z) for headings (rad, CCW from +x)."""
    return jnp.stack([jnp.cos(heading), jnp.sin(heading)], axis=-1)


def fly(
    position: jax.Array, heading: jax.Array, steer: jax.Array, alive: jax.Array, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array]:
    """Turn (steer +1 = right, i.e. clockwise seen from above) then fly forward; inactive planes stay."""
    turn = steer * jnp.deg2rad(params.turn_rate_degrees)
    new_heading = jnp.mod(heading - turn + jnp.pi, 2 * jnp.pi) - jnp.pi
    new_position = position + params.plane_speed * forward(new_heading)
    return jnp.where(alive[:, None], new_position, position), jnp.where(alive, new_heading, heading)


def outside_border(position: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """bool[A]: |x| > 750 or |z| > 750 (eq. 49)."""
    return jnp.max(jnp.abs(position), axis=-1) > params.border_half_extent


def in_pickup_zone(position: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """bool[A]: over the water girdle, i.e. inside the border and outside the island (eq. 50).

    `pickup_zone_mode` = 1 evaluates eq. 50 as printed: (|x| < e or |z| < e) and (|x| > i or |z| > i).
    """
    a = jnp.abs(position)
    e, i = params.border_half_extent, island_half_extent(params)
    outside_island = (a[..., 0] > i) | (a[..., 1] > i)
    intended = jnp.all(a <= e, axis=-1) & outside_island
    literal = ((a[..., 0] < e) | (a[..., 1] < e)) & outside_island
    return jnp.where(params.pickup_zone_mode == PICKUP_EQ50_LITERAL, literal, intended)


def weather_now(weather: Weather, t: jax.Array, params: AerialWildfireParams) -> dict[str, jax.Array]:
    """Weather at step `t`: wind unit vector f32[2], wind speed, temperature, humidity, overcast."""
    drift = jax.vmap(lambda f: f(jnp.zeros(2), t))(weather.drift)  # f32[5] ~ N(0, 1)
    angle = weather.wind_angle + jnp.deg2rad(params.wind_swing_degrees) * drift[0]
    overcast = jnp.clip(weather.overcast + 0.2 * drift[4], 0.0, 1.0)
    return {
        "wind": forward(angle),
        "wind_speed": jnp.clip(weather.wind_speed + 0.1 * drift[1], 0.0, 1.0),
        # Cloud cover cools and moistens the air.
        "temperature": weather.temperature + 2.0 * drift[2] - 4.0 * overcast,
        "humidity": jnp.clip(weather.humidity + 6.0 * drift[3] + 10.0 * overcast, 1.0, 100.0),
        "overcast": overcast,
    }


def dryness(temperature: jax.Array, humidity: jax.Array, params: AerialWildfireParams) -> jax.Array:
    """Spread multiplier of hot, dry weather: 1 at 25 deg C and 40 % humidity."""
    x = params.temperature_factor * (temperature - 25.0) / 10.0
    x = x - params.humidity_factor * (humidity - 40.0) / 30.0
    return jnp.exp(jnp.clip(x, -3.0, 3.0))


def block_spread_probabilities(
    slope: jax.Array, now: dict[str, jax.Array], params: AerialWildfireParams
) -> jax.Array:
    """Per-neighbour ignition probability f32[B, B, 8] for each terrain block and spread direction."""
    u = jnp.asarray(SPREAD_DIRECTIONS)
    base = params.spread_probability * dryness(now["temperature"], now["humidity"], params)
    base = base * jnp.where(jnp.asarray(IS_DIAGONAL), params.diagonal_spread_weight, 1.0)  # f32[8]
    along_wind = now["wind_speed"] * (u @ now["wind"])  # f32[8]
    rise = slope[..., 0, None] * u[:, 0] + slope[..., 1, None] * u[:, 1]  # f32[B, B, 8]
    exponent = params.wind_spread_factor * along_wind + params.slope_spread_factor * rise
    return jnp.clip(base * jnp.exp(exponent), 0.0, 1.0)


def materialise_grid(grid: jax.Array, row: jax.Array) -> jax.Array:
    """`grid` [G, ...] unchanged, but computed once: row `row` (clipped) is rewritten with itself.

    XLA fuses an elementwise producer into every consumer: without this the fire update of a cell was
    recomputed by the camera gathers, the tree counts, the sensing windows and the auto-reset select
    (four times per cell under `AutoReset`). A dynamic-update-slice writes into a buffer, so its operand
    is computed once. (`lax.optimization_barrier` is dropped by the CPU compiler.) `row` must not be a
    compile-time constant, or XLA may simplify the rewrite away.
    """
    line = jax.lax.dynamic_slice_in_dim(grid, row, 1, axis=0)
    return jax.lax.dynamic_update_slice_in_dim(grid, line, row, axis=0)


def ignition_probability_fast(burning: jax.Array, block_p: jax.Array) -> jax.Array:
    """P(cell ignites) f32[G, G] = 1 - prod over burning neighbours of (1 - p) (cf. procgen.fire)."""
    g = burning.shape[0]
    b = block_p.shape[0]
    f = g // b
    # One contiguous row of G probabilities per (block row, direction), computed once: the cell loop
    # then reads p[r // f, k, c] with the column innermost (vectorisable), instead of dividing every
    # column index by f to find its block (a gather per cell and direction).
    p_rows = jnp.repeat(jnp.moveaxis(block_p, -1, 1), f, axis=2)  # f32[B, 8, G]
    p_rows = materialise_grid(p_rows, burning[0, 0].astype(jnp.int32))
    burning_pad = jnp.pad(burning, 1)
    not_ignited = jnp.ones((b, f, g), jnp.float32)
    for k, (dr, dc) in enumerate(NEIGHBOUR_OFFSETS):
        source = burning_pad[1 + dr : 1 + dr + g, 1 + dc : 1 + dc + g].reshape(b, f, g)
        not_ignited = not_ignited * jnp.where(source, 1.0 - p_rows[:, None, k, :], 1.0)
    return (1.0 - not_ignited).reshape(g, g)


def drop_cover(
    position: jax.Array, dropping: jax.Array, params: AerialWildfireParams, grid_size: int
) -> jax.Array:
    """bool[G, G]: cells within `drop_radius` of a plane that drops water this step."""
    xs, zs = cell_centres(params, grid_size)
    far = jnp.float32(1e12)
    dx2 = jnp.where(dropping[:, None], (xs[None, :] - position[:, 0, None]) ** 2, far)  # [A, G]
    dz2 = (zs[None, :] - position[:, 1, None]) ** 2  # [A, G]
    # Squared offsets per plane and column / row computed once, not per cell.
    row = jnp.argmax(dropping).astype(jnp.int32)  # any runtime row index will do
    dx2 = materialise_grid(dx2, row)
    dz2 = materialise_grid(dz2, row)
    return jnp.any(dz2[:, :, None] + dx2[:, None, :] <= params.drop_radius**2, axis=0)


def fire_step(
    cells: jax.Array,
    block_p: jax.Array,
    wetted: jax.Array,
    seed: jax.Array,
    t: jax.Array,
    params: AerialWildfireParams,
) -> jax.Array:
    """One step of the island: water lands, then the fire spreads, burns out and wet trees dry.

    Trees under a drop (healthy, burning or wet) become wet and skip this step's fire update. Spread
    uses the burning trees of the previous step (a tree doused this step still heats its neighbours for
    this one step).
    """
    u = hash_uniform(seed, t, cells.shape)
    burning = cells == BURNING
    p_ignite = ignition_probability_fast(burning, block_p)
    p_burn_out = 1.0 / jnp.maximum(params.burn_duration, 1.0)
    p_dry = 1.0 / jnp.maximum(params.wet_duration, 1.0)
    new = jnp.where((cells == HEALTHY) & (u < p_ignite), jnp.uint8(BURNING), cells)
    new = jnp.where(burning & (u < p_burn_out), jnp.uint8(BURNT), new)
    new = jnp.where((cells == WET) & (u < p_dry), jnp.uint8(HEALTHY), new)
    douse = wetted & ((cells == HEALTHY) | burning | (cells == WET))
    return jnp.where(douse, jnp.uint8(WET), new)


def local_windows(
    cells: jax.Array, centres: jax.Array, half: int, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Square windows of cells around `centres` f32[N, 2].

    Returns codes uint8[N, W, W] (W = 2 half + 1) and the world x f32[N, W] of their columns and z
    f32[N, W] of their rows. Windows are shifted to stay on the grid; a disc of radius <= half cells
    around a centre is always inside its window.
    """
    g = cells.shape[0]
    w = 2 * half + 1
    ih = island_half_extent(params)
    cs = 2.0 * ih / g
    col = jnp.floor((centres[:, 0] + ih) / cs).astype(jnp.int32)
    row = jnp.floor((ih - centres[:, 1]) / cs).astype(jnp.int32)
    c0 = jnp.clip(col - half, 0, g - w)
    r0 = jnp.clip(row - half, 0, g - w)
    windows = jax.vmap(lambda r, c: jax.lax.dynamic_slice(cells, (r, c), (w, w)))(r0, c0)
    offsets = jnp.arange(w, dtype=jnp.float32) + 0.5
    xs = -ih + (c0[:, None] + offsets[None, :]) * cs
    zs = ih - (r0[:, None] + offsets[None, :]) * cs
    return windows, xs, zs


def drop_credits(
    cells: jax.Array,
    position: jax.Array,
    dropping: jax.Array,
    half: int,
    params: AerialWildfireParams,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Trees each plane's drop wets, from the pre-step cells: (prepared, extinguished, re-wetted) f32[A].

    A tree under two drops of the same step is credited to the plane with the lower index, so the
    totals equal the grid's healthy->wet and burning->wet transitions.
    """
    windows, xs, zs = local_windows(cells, position, half, params)
    r2 = params.drop_radius**2
    # d2[a, b, i, j]: squared distance from plane b to cell (i, j) of plane a's window.
    d2 = (xs[:, None, None, :] - position[None, :, 0, None, None]) ** 2 + (
        zs[:, None, :, None] - position[None, :, 1, None, None]
    ) ** 2
    covers = (d2 <= r2) & dropping[None, :, None, None]
    a = position.shape[0]
    earlier = jnp.arange(a)[None, :] < jnp.arange(a)[:, None]  # [a, b]: b < a
    own = jnp.diagonal(covers, axis1=0, axis2=1)  # [W, W, A]
    own = jnp.moveaxis(own, -1, 0)
    taken = jnp.any(covers & earlier[:, :, None, None], axis=1)
    credit = own & ~taken
    count = lambda code: jnp.sum(credit & (windows == code), axis=(1, 2)).astype(jnp.float32)  # noqa: E731
    return count(HEALTHY), count(BURNING), count(WET)


def burning_near(
    cells: jax.Array, centres: jax.Array, radius: jax.Array, half: int, params: AerialWildfireParams
) -> jax.Array:
    """bool[N]: a burning tree within `radius` of each centre f32[N, 2]."""
    windows, xs, zs = local_windows(cells, centres, half, params)
    d2 = (xs[:, None, :] - centres[:, 0, None, None]) ** 2 + (zs[:, :, None] - centres[:, 1, None, None]) ** 2
    return exact_reduce((windows == BURNING) & (d2 <= radius**2), "any", (1, 2))  # sides over 32 cells


def tree_counts(cells: jax.Array) -> jax.Array:
    """i32[2]: unburnt (healthy or wet) and burning trees, in one packed integer reduction (one pass
    over the grid; needs fewer than 65536 cells)."""
    unburnt = (cells == HEALTHY) | (cells == WET)
    packed = exact_reduce(
        (cells == BURNING).astype(jnp.int32) + (unburnt.astype(jnp.int32) << 16), "sum", (0, 1)
    )
    return jnp.stack([packed >> 16, packed & 0xFFFF])


# --------------------------------------------------------------------------------- one decision
# The step's mechanics in order: the planes move, the fire advances, the events are read off. Each hands
# the next a small NamedTuple.


class Planes(NamedTuple):
    """The planes after this step's flight (bool / f32 [A, ...])."""

    position: jax.Array
    heading: jax.Array
    crashed: jax.Array
    dropping: jax.Array
    picked_up: jax.Array
    holding: jax.Array
    in_zone: jax.Array


class Fire(NamedTuple):
    """The island after this step's drops and fire spread."""

    cells: jax.Array  # uint8[G, G]
    counts: jax.Array  # i32[2], (unburnt, burning) trees
    prepared: jax.Array  # f32[A], trees wetted ahead of the fire
    extinguished: jax.Array  # f32[A], burning trees put out


class Events(NamedTuple):
    """This step's reward events (bool[] for the island, bool[A] per plane)."""

    fire_out: jax.Array
    village: jax.Array
    fire_near: jax.Array
    find_fire: jax.Array
    village_near: jax.Array
    find_village: jax.Array


def move_planes(state: AerialWildfireState, action: dict, params: AerialWildfireParams) -> Planes:
    """Planes fly, crash at the border, drop and refill water (inactive planes keep their state)."""
    alive = state.alive
    position, heading = fly(state.position, state.heading, action["continuous"][:, 0], alive, params)
    dropping = alive & (action["discrete"][:, 0] == 1) & state.holding
    zone = in_pickup_zone(position, params)
    kept = state.holding & ~dropping
    picked_up = alive & jnp.where(params.pickup_requires_empty_tank > 0, zone & ~kept, zone & ~state.in_zone)
    return Planes(
        position=position,
        heading=heading,
        crashed=alive & outside_border(position, params),
        dropping=dropping,
        picked_up=picked_up,
        holding=jnp.where(alive, kept | zone, state.holding),
        in_zone=jnp.where(alive, zone, state.in_zone),
    )


def advance_fire(
    key: jax.Array,
    state: AerialWildfireState,
    planes: Planes,
    params: AerialWildfireParams,
    drop_half: int,
    grid_size: int,
) -> Fire:
    """Water lands (trees credited as prepared / extinguished), then the fire evolves one step.
    `drop_half`: the static half-width (cells) of the drop windows."""
    prepared, extinguished, rewetted = drop_credits(
        state.cells, planes.position, planes.dropping, drop_half, params
    )
    prepared = prepared + jnp.where(params.count_rewetting > 0, rewetted, 0.0)
    wetted = drop_cover(planes.position, planes.dropping, params, grid_size)
    now = weather_now(state.weather, state.step.astype(jnp.float32), params)
    block_p = block_spread_probabilities(state.slope, now, params)
    seed = jax.random.bits(key, (), jnp.uint32)
    cells = materialise_grid(fire_step(state.cells, block_p, wetted, seed, state.step, params), state.step)
    return Fire(cells=cells, counts=tree_counts(cells), prepared=prepared, extinguished=extinguished)


def events(
    state: AerialWildfireState, planes: Planes, fire: Fire, params: AerialWildfireParams, sense_half: int
) -> Events:
    """This step's reward events: fire out, fire near the village, a plane finding fire or village.
    `sense_half`: the static half-width (cells) of the sensing windows."""
    alive = state.alive
    fire_is_out = fire.counts[1] == 0
    fire_out_once = fire_is_out & (state.burning_count > 0) & ~state.fire_out_paid
    close = burning_near(fire.cells, state.village[None], params.village_danger_distance, sense_half, params)[
        0
    ]
    fire_near = alive & burning_near(
        fire.cells, planes.position, params.find_fire_distance, sense_half, params
    )
    village_near = alive & (
        jnp.sum((planes.position - state.village) ** 2, axis=-1) <= params.find_village_distance**2
    )
    return Events(
        fire_out=jnp.where(params.fire_out_mode == EVERY_STEP, fire_is_out, fire_out_once),
        village=jnp.where(
            params.village_penalty_mode == EVERY_STEP, close, close & ~state.village_penalty_paid
        ),
        fire_near=fire_near,
        find_fire=fire_near & ~state.found_fire,
        village_near=village_near,
        find_village=village_near & ~state.found_village,
    )
