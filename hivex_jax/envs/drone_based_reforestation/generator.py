"""World generation for Drone-Based Reforestation: terrain, lakes, forest and the drone station.

The reference gives only the ingredients (a height map up to 40 over 400 x 400 m, a forest-noise layer,
lakes, a station; §2.3, generators NOT FOUND). Ours is analytic, so that a world is a few hundred numbers
(no grids) and a reset is cheap enough to run every step under auto-reset:

* terrain shape s(x, z) = 0.5 + 0.5 tanh(sharpness * F(x, z)) in (0, 1), F a sum of plane waves ~N(0, 1);
  height = amplitude(level) * max(s, water_level). With `terrain_level_mode` = 0 (default) the amplitude
  is terrain_max_height (40) at levels 2-10 and 1.18x that at level 1, and the hills' length scale
  shrinks from terrain_length_scale (70 m) at level 1 to half of it at level 10, so peaks stay near
  40 m while the terrain gets more rugged (HIVEX's logged highest points: 45.9 at level 1, 37.7-39.6 at
  levels 2-10, flat); mode 1 scales the amplitude as terrain_max_height * level / 10 on one shape;
* lakes where s < water_level (flat water surface at amplitude * water_level);
* forest = union of up to `max_forest_patches` discs, centred on the highest values of a forest-noise
  layer (another plane-wave field) among uniform candidates, never in a lake, kept
  `station_forest_clearance` away from the station (so distances to the closest tree are exact);
* the station on dry land within `station_max_offset` of the arena centre.

With the env's static option `terrain_grid`, a file world may replace the analytic shape by a gridded
one (`World.terrain_grid`, TERRAIN_GRID x TERRAIN_GRID cells over the arena, bilinear between cell
centres, clamped at the edges) while `World.terrain_gridded` is set (without the option both are None
and no grid code is compiled: the default env's program is unchanged; the lookups cost ~5x on a step
without observations, within noise with the camera, docs/worlds.md);
`terrain_shape` is the one function every reader of the terrain calls (flight, station, spawn, forest
placement, picture; the camera selects the same grid), so both kinds serve all of them.

With mode 1 the world's shape does not depend on the level (a level only scales elevation); with mode 0
the same hash draws give the same wave directions and phases at every level, only their wavelength scales.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.seeding import seed_from_key
from hivex_jax.envs.drone_based_reforestation.params import (
    TASK_GROUP_UP,
    TASK_PICK_UP_SEED,
    TERRAIN_LEVELS_LINEAR,
    DroneParams,
)
from hivex_jax.envs.drone_based_reforestation.types import World
from hivex_jax.procgen.terrain import hashed_uniform, plane_wave_field, random_plane_waves

TERRAIN_WAVES = 12
FOREST_NOISE_WAVES = 6
FOREST_CANDIDATES = 48
STATION_CANDIDATES = 8
ABSENT_RADIUS = -1.0e4  # a disabled forest patch: its distance is never the minimum
#: cells per side of a file world's gridded terrain shape, over the arena (docs/worlds.md)
TERRAIN_GRID = 64

# hash streams (one per independent draw)
_S_TERRAIN, _S_FOREST_NOISE, _S_CANDIDATES, _S_RADII, _S_STATION, _S_SPAWN = 1, 2, 3, 4, 5, 6


def level_amplitude(params: DroneParams) -> jax.Array:
    """Terrain amplitude (m) of the params' terrain level (f32[]; see the module doc for the two modes)."""
    level = params.terrain_level.astype(jnp.float32)
    linear = params.terrain_max_height * level / 10.0
    logged = params.terrain_max_height * jnp.where(level <= 1.0, params.terrain_level1_height_factor, 1.0)
    return jnp.where(params.terrain_level_mode == TERRAIN_LEVELS_LINEAR, linear, logged)


def level_length_scale(params: DroneParams) -> jax.Array:
    """Correlation length (m) of the hills at the params' level: geometric from level 1 to level 10."""
    level = params.terrain_level.astype(jnp.float32)
    shrink = params.terrain_level10_length_factor ** ((level - 1.0) / 9.0)
    linear = params.terrain_level_mode == TERRAIN_LEVELS_LINEAR
    return params.terrain_length_scale * jnp.where(linear, 1.0, shrink)


def shape_from_field(field: jax.Array, params: DroneParams) -> jax.Array:
    """Terrain shape in (0, 1) from the plane-wave field value."""
    return 0.5 + 0.5 * jnp.tanh(params.terrain_sharpness * field)


def grid_shape(grid: jax.Array, points: jax.Array, half_extent: jax.Array) -> jax.Array:
    """Bilinear value f32[...] of `grid` f32[G, G] (cells over [-half, half]^2, row 0 north) at `points`
    f32[..., 2] (x, z), between cell centres, clamped at the edges."""
    g = grid.shape[0]
    cell = 2.0 * half_extent / g
    col = jnp.clip((points[..., 0] + half_extent) / cell - 0.5, 0.0, g - 1.0)
    row = jnp.clip((half_extent - points[..., 1]) / cell - 0.5, 0.0, g - 1.0)
    c0 = jnp.minimum(jnp.floor(col).astype(jnp.int32), g - 2)
    r0 = jnp.minimum(jnp.floor(row).astype(jnp.int32), g - 2)
    fc, fr = col - c0, row - r0
    top = grid[r0, c0] * (1.0 - fc) + grid[r0, c0 + 1] * fc
    bottom = grid[r0 + 1, c0] * (1.0 - fc) + grid[r0 + 1, c0 + 1] * fc
    return top * (1.0 - fr) + bottom * fr


def select_shape(world: World, analytic: jax.Array, points: jax.Array, params: DroneParams) -> jax.Array:
    """The world's terrain shape at `points` given the analytic one there: the grid's where gridded (a
    select, so the analytic terrain stays bit-identical); the analytic one when the world has no grid."""
    if world.terrain_grid is None or world.terrain_gridded is None:  # set together (a file world) or neither
        return analytic
    gridded = grid_shape(world.terrain_grid, points, params.arena_half_extent)
    return jnp.where(world.terrain_gridded, gridded, analytic)


def terrain_shape(world: World, points: jax.Array, params: DroneParams) -> jax.Array:
    """Terrain shape s f32[...] in (0, 1) at `points` f32[..., 2] (analytic, or the world's grid)."""
    field = plane_wave_field(world.terrain_waves, world.terrain_phases, points)
    return select_shape(world, shape_from_field(field, params), points, params)


def analytic_grid(world: World, params: DroneParams) -> jax.Array:
    """f32[TERRAIN_GRID, TERRAIN_GRID] the analytic terrain shape at the grid's cell centres."""
    e = params.arena_half_extent
    c = (jnp.arange(TERRAIN_GRID, dtype=jnp.float32) + 0.5) * (2.0 * e / TERRAIN_GRID) - e
    points = jnp.stack(jnp.meshgrid(c, -c, indexing="xy"), axis=-1)  # [row, col, (x, z)], row 0 north
    return shape_from_field(plane_wave_field(world.terrain_waves, world.terrain_phases, points), params)


def ground_height(shape: jax.Array, params: DroneParams) -> jax.Array:
    """Height (m) of the ground or lake surface for terrain shape `shape`."""
    return level_amplitude(params) * jnp.maximum(shape, params.water_level)


def station_point(world: World, params: DroneParams) -> jax.Array:
    """f32[3] (x, y, z): the station's hover point (pad on the ground + station_hover_height)."""
    pad = ground_height(terrain_shape(world, world.station_xz, params), params)
    return jnp.stack([world.station_xz[0], pad + params.station_hover_height, world.station_xz[1]])


def world_noise_seed(key: jax.Array) -> jax.Array:
    """The world's 32-bit hash seed u32[] (the only threefry draw of a reset). Not the integer world
    seed that names the world: this one is drawn from its key (`hivex_jax.core.seeding`)."""
    return seed_from_key(key)


def spawn_uniforms(key: jax.Array, num_agents: int) -> jax.Array:
    """f32[4, A] uniforms for the drones' start (heading, ring angle, random-start radius and angle)."""
    return hashed_uniform(world_noise_seed(key), _S_SPAWN, (4, num_agents))


def generate_world(
    key: jax.Array, params: DroneParams, max_forest_patches: int, gridded: bool = False
) -> World:
    """Draw a world from `key` (all randomness from one 32-bit seed and integer hashing); `gridded`
    (static): the world carries an (unused) terrain grid a file world may fill."""
    seed = world_noise_seed(key)
    e = params.arena_half_extent
    waves, phases = random_plane_waves(seed, _S_TERRAIN, TERRAIN_WAVES, level_length_scale(params))
    world = World(
        terrain_waves=waves,
        terrain_phases=phases,
        forest_centres=jnp.zeros((max_forest_patches, 2)),
        forest_radii=jnp.zeros((max_forest_patches,)),
        station_xz=jnp.zeros(2),
        station=jnp.zeros(3),
        terrain_grid=jnp.zeros((TERRAIN_GRID, TERRAIN_GRID), jnp.float32) if gridded else None,
        terrain_gridded=jnp.asarray(False) if gridded else None,  # generated: analytic
    )

    # Station: the first candidate on dry land (candidate 0 if there is none).
    st = (hashed_uniform(seed, _S_STATION, (STATION_CANDIDATES, 2)) * 2.0 - 1.0) * params.station_max_offset
    dry = terrain_shape(world, st, params) >= params.water_level + 0.05
    station = st[jnp.argmax(dry)]

    # Forest: top-N candidates by the forest-noise layer, so patches cluster into forests.
    f_waves, f_phases = random_plane_waves(
        seed, _S_FOREST_NOISE, FOREST_NOISE_WAVES, params.forest_length_scale
    )
    cand = (hashed_uniform(seed, _S_CANDIDATES, (FOREST_CANDIDATES, 2)) * 2.0 - 1.0) * (0.95 * e)
    score = plane_wave_field(f_waves, f_phases, cand)
    _, idx = jax.lax.top_k(score, max_forest_patches)
    centres = cand[idx]
    u = hashed_uniform(seed, _S_RADII, (max_forest_patches,))
    radii = params.forest_radius_min + u * (params.forest_radius_max - params.forest_radius_min)
    to_station = jnp.sqrt(jnp.sum((centres - station) ** 2, axis=-1))
    radii = jnp.minimum(radii, to_station - params.station_forest_clearance)
    in_lake = terrain_shape(world, centres, params) < params.water_level + 0.03
    used = jnp.arange(max_forest_patches) < params.forest_patches
    keep = used & ~in_lake & (radii >= 2.0)
    radii = jnp.where(keep, radii, ABSENT_RADIUS)
    # flax.struct.dataclass adds `replace` at run time; type checkers do not see it
    world = world.replace(forest_centres=centres, forest_radii=radii, station_xz=station)  # pyright: ignore[reportAttributeAccessIssue]
    return world.replace(station=station_point(world, params))


def spawn_drones(key: jax.Array, world: World, params: DroneParams, num_agents: int) -> dict[str, jax.Array]:
    """The drones' start on `world` from `key` (reset and world import share it): `position` f32[A, 3],
    `ground` f32[A], `shape_below` f32[A] and `at_station` bool[A]."""
    station = world.station
    u = spawn_uniforms(key, num_agents)
    # Default start: a small ring around the station point (inside the charging radius).
    ring = 2.0 * jnp.pi * (jnp.arange(num_agents) / num_agents + u[1])
    ring_radius = params.spawn_ring_radius
    # Group-up: evenly spaced on a wider ring, neighbours beyond the group-up distance (params.py)
    apart = (params.task == TASK_GROUP_UP) & (params.group_up_spawn_radius > 0)
    ring = jnp.where(apart, 2.0 * jnp.pi * (jnp.arange(num_agents) / num_agents + u[1, 0]), ring)
    ring_radius = jnp.where(apart, params.group_up_spawn_radius, ring_radius)
    ring_xz = station[jnp.asarray([0, 2])] + ring_radius * jnp.stack([jnp.cos(ring), jnp.sin(ring)], -1)
    # Pick-up Seed at Base: a random start within random_spawn_radius of the station.
    r = params.random_spawn_radius * jnp.sqrt(u[2])
    ang = 2.0 * jnp.pi * u[3]
    far_xz = station[jnp.asarray([0, 2])] + r[:, None] * jnp.stack([jnp.cos(ang), jnp.sin(ang)], -1)
    random_start = params.task == TASK_PICK_UP_SEED
    e = params.arena_half_extent
    xz = jnp.clip(jnp.where(random_start, far_xz, ring_xz), -e, e)
    shape_below = terrain_shape(world, xz, params)
    ground = ground_height(shape_below, params)
    y = jnp.where(random_start, ground + params.random_spawn_height, station[1])
    y = jnp.clip(y, ground + params.ground_clearance, params.flight_ceiling)
    position = jnp.stack([xz[:, 0], y, xz[:, 1]], axis=-1)
    at_station = jnp.linalg.norm(position - station, axis=-1) <= params.charge_radius
    return {"position": position, "ground": ground, "shape_below": shape_below, "at_station": at_station}
