"""World generation for Ocean Plastic Collection: the trash population map, pebbles and vessel spawns.

The trash population map (NOT FOUND in the reference; designed) is a mixture density over the sea:

* a share `hotspot_fraction` of the trash sits in `num_hotspots` hot spots (the blob-like garbage
  patches of HIVEX's figure): per axis an Irwin-Hall offset (sum of three uniforms, a near-Gaussian of
  std `radius` with support +-3 radius) around a random centre, spots chosen with random weights;
* the rest follows a smooth background: an 8 x 8 lattice of 50 m cells with log-normal weights
  `exp(contrast * (2 v - 1))`, `v` uniform per cell; a draw picks a cell by weight and adds a
  triangular (tent) offset of +-1 cell per axis, so the density is the bilinear interpolation of the
  lattice weights: value noise with a 50 m lattice.

Coordinates that leave the sea are mirrored back at the border. Every draw is arithmetic on 8
uniforms from `hash_uniform` (integer hashing; no transcendental functions, no threefry), so the same
sampler serves `reset` (all pebbles, every auto-reset) and `step` (the few respawns) cheaply. Arrays are
stored per coordinate (x and z rows) because interleaved (N, 2) layouts vectorise badly on the CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.seeding import seed_from_key
from hivex_jax.envs.ocean_plastic_collection.dynamics import on_obstacle
from hivex_jax.envs.ocean_plastic_collection.params import (
    BACKGROUND_LATTICE,
    MAX_HOTSPOTS,
    PARKED,
    RESPAWN_SLOTS,
    OceanPlasticParams,
)
from hivex_jax.envs.ocean_plastic_collection.types import TrashMap
from hivex_jax.procgen.noise import hash_uniform

#: uniforms one trash draw consumes: mixture choice, spot/cell choice, 3 offsets per axis
UNIFORMS_PER_DRAW = 8


#: salts of the hash streams drawn at reset (the respawn draws of step t use salt t + 1, far below)
SALT_PEBBLES, SALT_RESPAWN, SALT_HOTSPOTS, SALT_SPAWN, SALT_BACKGROUND = (0xA0000000 + i for i in range(5))


def world_noise_seed(key: jax.Array) -> jax.Array:
    """The u32 hash seed of a world: its only threefry draw. Every other draw of the world comes from
    `hash_uniform(seed, salt, ...)`, which keeps reset cheap to run and to compile. Not the integer
    world seed that names the world: this one is drawn from its key (`hivex_jax.core.seeding`)."""
    return seed_from_key(key)


def draw_trash_map(seed: jax.Array, params: OceanPlasticParams) -> TrashMap:
    """Draw the hot spots and the background lattice of one world from its hash seed."""
    u = hash_uniform(seed, jnp.uint32(SALT_HOTSPOTS), (4, MAX_HOTSPOTS))
    r = params.hotspot_centre_range
    centres = (2.0 * u[:2] - 1.0) * r
    radii = params.hotspot_radius_min + u[2] * (params.hotspot_radius_max - params.hotspot_radius_min)
    used = jnp.arange(MAX_HOTSPOTS) < params.num_hotspots
    raw = (0.5 + u[3]) * used  # relative weights uniform in [0.5, 1.5)
    weights = raw / jnp.maximum(jnp.sum(raw), 1e-6)
    cells = BACKGROUND_LATTICE * BACKGROUND_LATTICE  # index = row (z, top first) * L + column (x)
    noise = hash_uniform(seed, jnp.uint32(SALT_BACKGROUND), (cells,))
    lattice = jnp.exp(params.background_contrast * (2.0 * noise - 1.0))
    lattice = lattice / jnp.sum(lattice)
    return TrashMap(
        hotspot_x=centres[0],
        hotspot_z=centres[1],
        hotspot_radii=radii,
        hotspot_weights=weights,
        hotspot_cumulative=jnp.cumsum(weights),
        background_weights=lattice,
        background_cumulative=jnp.cumsum(lattice),
    )


def _reflect(x: jax.Array, half: jax.Array) -> jax.Array:
    """Fold coordinates that left [-half, half] back inside (mirror at the border)."""
    x = jnp.where(x > half, 2 * half - x, x)
    x = jnp.where(x < -half, -2 * half - x, x)
    return jnp.clip(x, -half, half)


def sample_trash(
    uniforms: jax.Array, trash_map: TrashMap, params: OceanPlasticParams
) -> tuple[jax.Array, jax.Array]:
    """Positions (x f32[n], z f32[n]) drawn from the trash map, from `uniforms` f32[UNIFORMS_PER_DRAW, n]."""
    e = params.sea_half_extent
    u = uniforms
    # Hot spots: choose one by weight, near-Gaussian offset.
    spot = jnp.sum(u[1][:, None] >= trash_map.hotspot_cumulative[None, :], axis=-1)
    spot = jnp.clip(spot, 0, jnp.maximum(params.num_hotspots - 1, 0))
    radius = trash_map.hotspot_radii[spot]
    hot_x = trash_map.hotspot_x[spot] + radius * 2.0 * (u[2] + u[3] + u[4] - 1.5)
    hot_z = trash_map.hotspot_z[spot] + radius * 2.0 * (u[5] + u[6] + u[7] - 1.5)
    # Background: a lattice cell by weight, then a tent offset of +-1 cell per axis.
    n_cells = BACKGROUND_LATTICE * BACKGROUND_LATTICE
    cell = jnp.clip(jnp.searchsorted(trash_map.background_cumulative, u[1], side="right"), 0, n_cells - 1)
    size = 2.0 * e / BACKGROUND_LATTICE
    column = (cell % BACKGROUND_LATTICE).astype(jnp.float32)
    row = (cell // BACKGROUND_LATTICE).astype(jnp.float32)
    back_x = -e + (column + 0.5) * size + (u[2] + u[3] - 1.0) * size
    back_z = e - (row + 0.5) * size + (u[5] + u[6] - 1.0) * size  # row 0 is the top (largest z)
    use_hot = (u[0] < params.hotspot_fraction) & (params.num_hotspots > 0)
    x = _reflect(jnp.where(use_hot, hot_x, back_x), e)
    z = _reflect(jnp.where(use_hot, hot_z, back_z), e)
    return x, z


def trash_draw_uniforms(seed: jax.Array, salt: jax.Array, count: int) -> jax.Array:
    """f32[UNIFORMS_PER_DRAW, count] uniforms for `count` trash draws (cheap hash RNG)."""
    return hash_uniform(seed, salt, (UNIFORMS_PER_DRAW, count))


def _tent(x: jax.Array) -> jax.Array:
    return jnp.maximum(1.0 - jnp.abs(x), 0.0)


def trash_density(points: jax.Array, trash_map: TrashMap, params: OceanPlasticParams) -> jax.Array:
    """Pebble density f32[...] per m^2 (integrating to ~1 over the sea) at `points` f32[..., 2].

    For pictures and analysis: hot spots are drawn as Gaussians (the Irwin-Hall offsets are close to
    one) and the mirroring at the border is ignored.
    """
    x, z = points[..., 0:1], points[..., 1:2]
    var = trash_map.hotspot_radii**2
    d2 = (x - trash_map.hotspot_x) ** 2 + (z - trash_map.hotspot_z) ** 2
    hot = jnp.sum(trash_map.hotspot_weights * jnp.exp(-0.5 * d2 / var) / (2 * jnp.pi * var), axis=-1)
    e = params.sea_half_extent
    size = 2.0 * e / BACKGROUND_LATTICE
    centres = -e + (jnp.arange(BACKGROUND_LATTICE) + 0.5) * size
    wx = _tent((x - centres) / size)  # [..., L] over columns
    wz = _tent((z - centres[::-1]) / size)  # [..., L] over rows (row 0 = largest z)
    lattice = trash_map.background_weights.reshape(BACKGROUND_LATTICE, BACKGROUND_LATTICE)
    background = jnp.einsum("...r,rc,...c->...", wz, lattice, wx) / (size * size)
    frac = jnp.where(params.num_hotspots > 0, params.hotspot_fraction, 0.0)
    return frac * hot + (1.0 - frac) * background


def spawn_vessels(
    seed: jax.Array, num_agents: int, params: OceanPlasticParams
) -> tuple[jax.Array, jax.Array]:
    """Start positions f32[A, 2] on a ring around a random centre, and random unit headings f32[A, 2].

    The ring keeps neighbours at least 2 * radius * sin(pi / A) apart (69 m for 3 vessels), so nobody
    starts in contact; a jitter of +-2 m breaks the symmetry.
    """
    u = hash_uniform(seed, jnp.uint32(SALT_SPAWN), (3, num_agents + 1))
    centre = (2.0 * u[:2, num_agents] - 1.0) * params.spawn_centre_range
    phase = 2 * jnp.pi * u[2, num_agents]
    angles = phase + 2 * jnp.pi * jnp.arange(num_agents) / num_agents
    ring = jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=-1) * params.spawn_ring_radius
    ring = jnp.where(num_agents == 1, 0.0, ring)
    jitter = (4.0 * u[:2, :num_agents] - 2.0).T
    heading = 2 * jnp.pi * u[2, :num_agents]
    return centre + ring + jitter, jnp.stack([jnp.cos(heading), jnp.sin(heading)], axis=-1)


def park_on_obstacles(
    x: jax.Array, z: jax.Array, obstacles: jax.Array | None, params: OceanPlasticParams
) -> tuple[jax.Array, jax.Array]:
    """Trash draws (x, z f32[n]) with those landing on an obstacle cell parked (never afloat): no trash
    on islands. A select, so without obstacles the draws are bit-identical; `obstacles` None: unchanged."""
    if obstacles is None:
        return x, z
    hit = on_obstacle(jnp.stack([x, z], axis=-1), obstacles, params)
    return jnp.where(hit, PARKED, x), jnp.where(hit, PARKED, z)


def respawn_queue(
    rng_seed: jax.Array, step: jax.Array, trash_map: TrashMap, obstacles: jax.Array | None, params
) -> tuple[jax.Array, jax.Array]:
    """The RESPAWN_SLOTS draws (x, z f32[R]) that pebbles collected at step `step` + 1 take (drawn one
    step ahead: a state input, so XLA does not fuse the sampler into the per-pebble selection and redo it
    N times per world on the CPU); draws on an obstacle parked."""
    x, z = sample_trash(
        trash_draw_uniforms(rng_seed, step.astype(jnp.uint32) + 1, RESPAWN_SLOTS), trash_map, params
    )
    return park_on_obstacles(x, z, obstacles, params)
