"""World generation for Aerial Wildfire Suppression: island terrain, lakes, forest, village, ignition,
weather and the planes' spawn, all from the reset key (reference §2.5; the generator is designed).

The terrain is a coarse fBm elevation lattice (one value per 4 x 4-cell block corner). The island grid is
its bilinear upsampling (lakes below `lake_level`, no trees above `treeline`), and the fire model uses the
per-block slope. Only the uint8 cell grid is full resolution, so a reset writes one byte per cell.

Every random number of a world comes from one `jax.random.bits` call (`WorldDraws`): each separate
`jax.random` call inlines a threefry hash, and thirty of them made the reset slow to compile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BARE,
    BURNING,
    BURNT,
    HEALTHY,
    IGNITION_CANDIDATES,
    LAKE,
    MAX_IGNITIONS,
    VILLAGE,
    WET,
    AerialWildfireParams,
)
from hivex_jax.envs.aerial_wildfire_suppression.types import Weather
from hivex_jax.procgen.fields import FourierField
from hivex_jax.procgen.noise import fbm_from_lattices, hash_uniform, lattice_sizes

WEATHER_WAVES = 8
#: weather channels: wind direction drift, wind speed, temperature, humidity, overcast
WEATHER_CHANNELS = 5
#: elevation fBm: lattice cells of the coarsest octave, octaves
TERRAIN_BASE_CELLS, TERRAIN_OCTAVES = 3, 4


class WorldDraws:
    """Consecutive slices of one array of uniforms in [0, 1) (one threefry call per world)."""

    def __init__(self, key: jax.Array, count: int):
        bits = jax.random.bits(key, (count,), jnp.uint32)
        self.bits = bits
        self.uniforms = (bits >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
        self.used = 0

    def take(self, shape: tuple[int, ...]) -> jax.Array:
        """The next uniforms, reshaped to `shape`."""
        n = int(np.prod(shape))
        out = self.uniforms[self.used : self.used + n].reshape(shape)
        self.used += n
        if self.used > self.uniforms.shape[0]:
            raise ValueError("WorldDraws: not enough uniforms drawn")
        return out

    def take_bits(self) -> jax.Array:
        """The next raw uint32 (e.g. a hash seed)."""
        out = self.bits[self.used]
        self.take((1,))
        return out

    def take_normal(self, shape: tuple[int, ...]) -> jax.Array:
        """Standard normals (Box-Muller on two uniforms each)."""
        u1, u2 = self.take(shape), self.take(shape)
        return jnp.sqrt(-2.0 * jnp.log1p(-u1)) * jnp.cos(2.0 * jnp.pi * u2)


def episode_draws_needed(num_agents: int) -> int:
    """How many uniforms a new episode on an existing world takes (ignition, weather, spawn)."""
    weather = 5 + WEATHER_CHANNELS * WEATHER_WAVES * (2 * 2 + 2 + 1)
    return MAX_IGNITIONS * IGNITION_CANDIDATES * 2 + weather + 3 * num_agents


def draws_needed(num_agents: int, blocks: int) -> int:
    """How many uniforms one world's generation takes (terrain, village, forest seed and an episode)."""
    lattice = sum((c + 1) ** 2 for c in lattice_sizes(blocks + 1, TERRAIN_BASE_CELLS, TERRAIN_OCTAVES))
    return lattice + 2 + 1 + episode_draws_needed(num_agents)


def island_half_extent(params: AerialWildfireParams) -> jax.Array:
    """Half-extent of the square island (m): border minus the water girdle."""
    return params.border_half_extent - params.water_girdle_width


def cell_size(params: AerialWildfireParams, grid_size: int) -> jax.Array:
    """Side of one island cell (m)."""
    return 2.0 * island_half_extent(params) / grid_size


def cell_centres(params: AerialWildfireParams, grid_size: int) -> tuple[jax.Array, jax.Array]:
    """World x of each column f32[G] and z of each row f32[G] (row 0 is the north edge)."""
    half = island_half_extent(params)
    c = (jnp.arange(grid_size, dtype=jnp.float32) + 0.5) * (2.0 * half / grid_size) - half
    return c, -c


def elevation_lattice(draws: WorldDraws, blocks: int) -> jax.Array:
    """Normalised elevation f32[blocks + 1, blocks + 1] in [0, 1] at the block corners (fBm, computed
    without gathers by `procgen.noise`)."""
    sizes = lattice_sizes(blocks + 1, TERRAIN_BASE_CELLS, TERRAIN_OCTAVES)
    return fbm_from_lattices([draws.take((c + 1, c + 1)) for c in sizes], blocks + 1, 0.5)


def upsample_bilinear(lattice: jax.Array, factor: int) -> jax.Array:
    """Bilinear interpolation of corner values f32[B + 1, B + 1] to cell centres f32[B * f, B * f]."""
    b = lattice.shape[0] - 1
    w = (jnp.arange(factor, dtype=jnp.float32) + 0.5) / factor
    wr = w[None, :, None, None]
    wc = w[None, None, None, :]
    c00 = lattice[:-1, :-1][:, None, :, None]
    c01 = lattice[:-1, 1:][:, None, :, None]
    c10 = lattice[1:, :-1][:, None, :, None]
    c11 = lattice[1:, 1:][:, None, :, None]
    top = c00 * (1.0 - wc) + c01 * wc
    bottom = c10 * (1.0 - wc) + c11 * wc
    return (top * (1.0 - wr) + bottom * wr).reshape(b * factor, b * factor)


def block_slope(lattice: jax.Array, params: AerialWildfireParams, grid_size: int) -> jax.Array:
    """Mean terrain gradient per block f32[B, B, 2] (dh/dx, dh/dz; rise per metre).

    Heights are `terrain_level * relief_per_level * elevation`: the level scales elevation.
    """
    b = lattice.shape[0] - 1
    heights = lattice * params.terrain_level.astype(jnp.float32) * params.relief_per_level
    block = 2.0 * island_half_extent(params) / b
    c00, c01 = heights[:-1, :-1], heights[:-1, 1:]
    c10, c11 = heights[1:, :-1], heights[1:, 1:]
    dx = ((c01 + c11) - (c00 + c10)) / (2.0 * block)
    dz = ((c00 + c01) - (c10 + c11)) / (2.0 * block)  # rows grow towards -z
    return jnp.stack([dx, dz], axis=-1)


def village_position(draws: WorldDraws, params: AerialWildfireParams) -> jax.Array:
    """Village centre f32[2]: fixed (default) or uniform away from the coast."""
    inner = island_half_extent(params) - 200.0
    random = (2.0 * draws.take((2,)) - 1.0) * inner
    fixed = jnp.stack([params.village_x, params.village_z])
    return jnp.where(params.random_village_location > 0, random, fixed)


def forest_cells(
    lattice: jax.Array,
    village: jax.Array,
    seed: jax.Array,
    params: AerialWildfireParams,
    grid_size: int,
) -> jax.Array:
    """Island cells uint8[G, G] before ignition: lakes, bare ground, healthy trees, village."""
    elevation = upsample_bilinear(lattice, grid_size // (lattice.shape[0] - 1))
    u = hash_uniform(seed, jnp.uint32(0), (grid_size, grid_size))
    tree_chance = params.forest_density * jnp.clip((params.treeline - elevation) / 0.08, 0.0, 1.0)
    xs, zs = cell_centres(params, grid_size)
    d2_village = (xs[None, :] - village[0]) ** 2 + (zs[:, None] - village[1]) ** 2
    cells = jnp.where(u < tree_chance, jnp.uint8(HEALTHY), jnp.uint8(BARE))
    cells = jnp.where(elevation < params.lake_level, jnp.uint8(LAKE), cells)
    return jnp.where(d2_village <= params.village_radius**2, jnp.uint8(VILLAGE), cells)


def regrow(cells: jax.Array) -> jax.Array:
    """The world's unburnt forest: every tree (burning, burnt, wet) healthy again. Trees never appear or
    vanish during an episode, so this is exactly the forest the world was generated with."""
    tree = (cells == HEALTHY) | (cells == BURNING) | (cells == BURNT) | (cells == WET)
    return jnp.where(tree, jnp.uint8(HEALTHY), cells)


def ignite(
    draws: WorldDraws, cells: jax.Array, village: jax.Array, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array]:
    """Light `num_ignitions` fires on trees at least `min_ignition_village_distance` from the village.

    Returns the cells with the fires and the ignition points f32[MAX_IGNITIONS, 2]. Each point is the
    first valid one of IGNITION_CANDIDATES uniform draws (the first draw if none is valid).
    """
    g = cells.shape[0]
    half = island_half_extent(params)
    cs = 2.0 * half / g
    cand = (1.8 * draws.take((MAX_IGNITIONS, IGNITION_CANDIDATES, 2)) - 0.9) * half
    col = jnp.clip(jnp.floor((cand[..., 0] + half) / cs).astype(jnp.int32), 0, g - 1)
    row = jnp.clip(jnp.floor((half - cand[..., 1]) / cs).astype(jnp.int32), 0, g - 1)
    on_tree = cells[row, col] == HEALTHY
    far = jnp.sum((cand - village) ** 2, axis=-1) >= params.min_ignition_village_distance**2
    pick = jnp.argmax(on_tree & far, axis=-1)  # first valid candidate (0 if none)
    points = jnp.take_along_axis(cand, pick[:, None, None], axis=1)[:, 0]
    lit = jnp.arange(MAX_IGNITIONS) < params.num_ignitions
    xs, zs = cell_centres(params, g)
    d2 = (xs[None, None, :] - points[:, 0, None, None]) ** 2 + (
        zs[None, :, None] - points[:, 1, None, None]
    ) ** 2
    near = jnp.any((d2 <= params.ignition_radius**2) & lit[:, None, None], axis=0)
    return jnp.where(near & (cells == HEALTHY), jnp.uint8(BURNING), cells), points


def draw_weather(draws: WorldDraws, params: AerialWildfireParams) -> Weather:
    """Per-world weather: uniform base values and slow drifts (std-normal Fourier fields in time, as
    `procgen.fields.fourier_field` draws them)."""
    u = draws.take((5,))
    lerp = lambda x, lo, hi: lo + (hi - lo) * x  # noqa: E731
    shape = (WEATHER_CHANNELS, WEATHER_WAVES)
    drift = FourierField(
        wave_vectors=draws.take_normal(shape + (2,)),  # unused: weather is uniform in space
        angular_speeds=draws.take_normal(shape) / params.weather_time_scale,
        phases=2.0 * jnp.pi * draws.take(shape),
    )
    return Weather(
        wind_angle=lerp(u[0], -jnp.pi, jnp.pi),
        wind_speed=lerp(u[1], params.wind_speed_min, params.wind_speed_max),
        temperature=lerp(u[2], params.temperature_min, params.temperature_max),
        humidity=lerp(u[3], params.humidity_min, params.humidity_max),
        overcast=u[4],
        drift=drift,
    )


def spawn_planes(
    draws: WorldDraws, num_agents: int, params: AerialWildfireParams
) -> tuple[jax.Array, jax.Array]:
    """Positions f32[A, 2] over the south water girdle and headings f32[A] (rad) roughly north.

    The reset observation printed in the LLM-guidance code has the plane at z = -632, over the water
    south of the island (reference §2.5), so planes start there, holding water.
    """
    u = draws.take((3, num_agents))
    half = island_half_extent(params)
    x = (2.0 * u[0] - 1.0) * params.spawn_half_width
    z = -(half + params.water_girdle_width * (0.2 + 0.4 * u[1]))
    spread = jnp.deg2rad(params.spawn_heading_spread_degrees)
    heading = jnp.pi / 2 + (2.0 * u[2] - 1.0) * spread
    return jnp.stack([x, z], axis=-1), heading
