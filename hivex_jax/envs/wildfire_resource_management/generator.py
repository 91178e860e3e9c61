"""World generation for Wildfire Resource Management: towers, island terrain, forest, weather, ignition.

Everything expensive happens here, once per episode at reset: the step only reads the per-cell
`heights` and `flammability` grids and evaluates a few scalars (weather cycle, wind).

Terrain (designed; HIVEX's generator is NOT FOUND): a square island (`island_mask`) with a coastline
made ragged by fBm noise; relief = fBm scaled by `terrain_level * elevation_per_level`; lakes fill the
inland valleys; a sand band along the coast and the sea carry no fuel; forest where a second fBm field
exceeds `forest_threshold`, with that field as fuel density. Weather: temperature, humidity and
overcast are smooth random fields (value noise) spanning +-variation around per-world means (cloudy ->
cooler and more humid; temperature falls with elevation); towers feel the weather of their cell.
Wind has a per-world main direction and speed. All noise lattices and draws use the hash RNG from
one threefry call (threefry dominated the reset's cost on the CPU).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.wildfire_resource_management.params import (
    NUM_NEIGHBOURS,
    NUM_TOWERS,
    TOWER_GRID,
    WildfireParams,
)
from hivex_jax.procgen.noise import fbm_hashed, hash_uniform, island_mask

# Weather fields: one octave of value noise on a 3 x 3-cell lattice (400 m cells), i.e. smooth fields
# with one or two warm/humid/cloudy patches per island. (A FourierField evaluated on the grid gives the
# same kind of field at ~10x the cost of a reset on the CPU under vmap.)
WEATHER_CELLS = 3

# Fire-grid cell phases (uint8). Cells that cannot burn keep their land cover, for `render`.
FUEL, BURNING, BURNT, SEA, SAND, GRASS, LAKE = 0, 1, 2, 3, 4, 5, 6


def tower_grid_units() -> np.ndarray:
    """f32[9, 2] tower (x, z) in units of the tower spacing; index = row * 3 + column, row 0 north."""
    rows, cols = np.divmod(np.arange(NUM_TOWERS), TOWER_GRID)
    return np.stack([cols - 1.0, 1.0 - rows], axis=-1).astype(np.float32)


def neighbour_table() -> np.ndarray:
    """i32[9, 3]: each tower's 3 nearest towers, nearest first.

    Tie rule: equal distances are ordered by the lower tower index (stable sort). On the 3 x 3 grid
    only the centre tower has a tie (four towers one spacing away): it links to towers 1, 3, 5 (north,
    west, east), not 7 (south). Corners link to their two edge neighbours and the centre; edges to
    their two corners and the centre.
    """
    units = tower_grid_units().astype(np.float64)
    d = np.linalg.norm(units[:, None] - units[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    order = np.argsort(d, axis=1, kind="stable")
    return order[:, :NUM_NEIGHBOURS].astype(np.int32)


def branch_targets() -> np.ndarray:
    """i32[9, 4]: the tower each action branch sends resources to (branch 0 = self)."""
    return np.concatenate([np.arange(NUM_TOWERS, dtype=np.int32)[:, None], neighbour_table()], axis=1)


def in_degree() -> np.ndarray:
    """i32[9]: how many towers list each tower as a neighbour."""
    return np.bincount(neighbour_table().reshape(-1), minlength=NUM_TOWERS).astype(np.int32)


def weather_offsets(cycle_phase: jax.Array, t: jax.Array, params: WildfireParams) -> jax.Array:
    """f32[3] island-wide (temperature, humidity, overcast) offsets of the slow weather cycle at `t`."""
    s = jnp.sin(2.0 * jnp.pi * t / params.weather_cycle_period + cycle_phase)
    c = jnp.cos(2.0 * jnp.pi * t / params.weather_cycle_period + cycle_phase)
    # Warm phase = dry and clear; cool phase = humid and cloudy.
    return jnp.stack(
        [
            params.temperature_cycle_amplitude * s,
            -params.humidity_cycle_amplitude * s,
            -params.overcast_cycle_amplitude * (0.6 * s + 0.8 * c),
        ]
    )


def flammability_exponent(
    temperature: jax.Array, humidity: jax.Array, overcast: jax.Array, params: WildfireParams
) -> jax.Array:
    """log of the weather multiplier of the spread hazard (0 at the reference weather)."""
    return (
        params.temperature_factor * (temperature - params.reference_temperature) / 10.0
        - params.humidity_factor * (humidity - params.reference_humidity) / 10.0
        - params.overcast_factor * (overcast - params.reference_overcast) / 10.0
    )


def cycle_gain(offsets: jax.Array, params: WildfireParams) -> jax.Array:
    """g(t) f32[]: the spread-hazard multiplier of the island-wide weather offsets f32[3] (the hazard is
    log-linear in the weather, so a uniform offset multiplies it)."""
    return jnp.exp(
        flammability_exponent(
            params.reference_temperature + offsets[0],
            params.reference_humidity + offsets[1],
            params.reference_overcast + offsets[2],
            params,
        )
    )


def generate_world(key: jax.Array, params: WildfireParams, resolution: int) -> dict[str, jax.Array]:
    """One world from `key`: a dict of the state's world fields (see `WildfireState`)."""
    # One threefry call; every other draw comes from the hash RNG (threefry is slow on the CPU).
    seeds = jax.random.bits(key, (5,), jnp.uint32)
    u = hash_uniform(seeds[2], jnp.uint32(0), (7,))
    half = params.island_half_extent
    cell = 2.0 * half / resolution

    # --- terrain: island with a ragged coast, relief scaled by the terrain level, valleys as lakes
    island = island_mask(resolution, params.island_fraction, params.island_falloff)
    coast, relief, forest_density = fbm_hashed(seeds[0], resolution, base_cells=4, octaves=3, num_maps=3)
    land_value = island + params.coast_noise * (coast - 0.5)
    land = land_value > 0.5
    amplitude = params.terrain_level.astype(jnp.float32) * params.elevation_per_level
    inland = jnp.clip((land_value - 0.5) / 0.3, 0.0, 1.0)  # 0 at the coast, 1 well inland
    heights = jnp.where(land, 1.0 + amplitude * relief * inland, 0.0)
    lake = land & (relief < params.lake_level) & (inland > 0.5)
    heights = jnp.where(lake, 1.0 + amplitude * params.lake_level * inland, heights)
    beach = land & (land_value < 0.5 + params.beach_width)
    fuel = land & ~lake & ~beach & (forest_density > params.forest_threshold)
    fuel_density = jnp.where(fuel, 0.5 + 0.5 * forest_density, 0.0)

    # --- weather fields around per-world means
    t_mean = params.temperature_min + u[0] * (params.temperature_max - params.temperature_min)
    h_mean = params.humidity_min + u[1] * (params.humidity_max - params.humidity_min)
    o_mean = params.overcast_min + u[2] * (params.overcast_max - params.overcast_min)
    noise = 2.0 * fbm_hashed(seeds[1], resolution, WEATHER_CELLS, octaves=1, num_maps=3) - 1.0
    overcast = o_mean + params.overcast_variation * noise[2]
    humidity = h_mean + params.humidity_variation * noise[1] + 0.2 * (overcast - o_mean)  # cloudy: humid
    temperature = (
        t_mean
        + params.temperature_variation * noise[0]
        - 0.04 * (overcast - o_mean)  # cloudy: cooler
        - params.lapse_rate * heights
    )
    weather_exponent = flammability_exponent(temperature, humidity, overcast, params)
    flammability = fuel_density * params.spread_rate * jnp.exp(weather_exponent)

    # --- towers: fixed 3 x 3 layout, standing on the terrain, feeling the weather of their cell
    tower_xz = jnp.asarray(tower_grid_units()) * params.tower_spacing
    col = jnp.clip(jnp.floor((tower_xz[:, 0] + half) / cell), 0, resolution - 1).astype(jnp.int32)
    row = jnp.clip(jnp.floor((half - tower_xz[:, 1]) / cell), 0, resolution - 1).astype(jnp.int32)
    tower_xyz = jnp.stack([tower_xz[:, 0], heights[row, col], tower_xz[:, 1]], axis=-1)
    tower_weather = jnp.stack([temperature[row, col], humidity[row, col], overcast[row, col]], axis=-1)

    # --- ignition: a uniformly drawn forest cell and the fuel around it
    score = jnp.where(fuel, hash_uniform(seeds[3], jnp.uint32(0), (resolution, resolution)), -1.0)
    start = jnp.argmax(score.reshape(-1))
    cells = jnp.arange(resolution, dtype=jnp.float32)
    row_d2 = (cells - (start // resolution).astype(jnp.float32)) ** 2
    col_d2 = (cells - (start % resolution).astype(jnp.float32)) ** 2
    near = (row_d2[:, None] + col_d2[None, :]) * cell**2 <= params.ignition_radius**2
    cover = jnp.where(~land, SEA, jnp.where(lake, LAKE, jnp.where(beach, SAND, GRASS)))
    phase = jnp.where(fuel, FUEL, cover).astype(jnp.uint8)
    phase = jnp.where(fuel & near, BURNING, phase).astype(jnp.uint8)

    # --- wind and the weather cycle
    return {
        "fire": phase,
        "heights": heights.astype(jnp.float32),
        "flammability": flammability.astype(jnp.float32),
        "tower_xyz": tower_xyz.astype(jnp.float32),
        "tower_weather": tower_weather.astype(jnp.float32),
        "fire_seed": seeds[4],
        "wind_angle": 2.0 * jnp.pi * u[3],
        "wind_speed": params.wind_speed_min + u[4] * (params.wind_speed_max - params.wind_speed_min),
        "wind_phase": 2.0 * jnp.pi * u[5],
        "weather_phase": 2.0 * jnp.pi * u[6],
    }
