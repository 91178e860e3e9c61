"""Wildfire Resource Management worlds: terrain heights, flammability, land cover + ignition, weather, wind.

`hivex_jax.worlds` reads and writes these fields; `apply_world` puts them into a reset state and
recomputes what depends on them: the towers' elevations (from `heights`), each tower's nearest
observed fire and the first observation. Towers stand on the fixed 3 x 3 grid (params.tower_spacing).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import ARRAY, CODES, GRID, FieldSpec
from hivex_jax.envs.wildfire_resource_management import dynamics
from hivex_jax.envs.wildfire_resource_management.generator import (
    BURNING,
    BURNT,
    FUEL,
    GRASS,
    LAKE,
    SAND,
    SEA,
)

FIELDS = (
    FieldSpec(
        "heights",
        GRID,
        (0.0, 2000.0),
        doc="f32[R, R] ground height, metres (0 = sea); an image's grey 0..1 maps to 0..130 m",
        image_range=(0.0, 130.0),
    ),
    FieldSpec(
        "flammability",
        GRID,
        (0.0, 100.0),
        doc="f32[R, R] ignition hazard per burning neighbour per step (0 = no fuel); an image's grey 0..1 "
        "maps to 0..0.2",
        image_range=(0.0, 0.2),
    ),
    FieldSpec(
        "fire",
        CODES,
        codes=(FUEL, BURNING, BURNT, SEA, SAND, GRASS, LAKE),
        doc="u8[R, R] cell codes: 0 forest, 1 burning (the ignition), 2 burnt, 3 sea, 4 sand, 5 grass, "
        "6 lake (image pixel value = code)",
    ),
    FieldSpec("tower_weather", ARRAY, (-100.0, 200.0), doc="f32[9, 3] (temperature, humidity, overcast)"),
    FieldSpec("fire_seed", ARRAY, (0, 2**32 - 1), doc="u32[] seed of the fire's hash RNG"),
    FieldSpec("wind_angle", ARRAY, (-10.0, 10.0), doc="f32[] main wind direction, rad"),
    FieldSpec("wind_speed", ARRAY, (0.0, 100.0), doc="f32[] m/s"),
    FieldSpec("wind_phase", ARRAY, (-10.0, 10.0), doc="f32[] phase of the wind's swing, rad"),
    FieldSpec("weather_phase", ARRAY, (-10.0, 10.0), doc="f32[] phase of the weather cycle, rad"),
)
#: a single image or .npy file is a height map
PRIMARY_FIELD = "heights"
#: what the world seed changes in an episode on a file world that gives every field (docs/worlds.md)
SEED_ON_FILE_WORLD = (
    "nothing: the episode depends only on the world and the actions (the fire's chance draws "
    "are hashed from the world's fire_seed, not from the step key)"
)
#: True: two seeds on such a file world play the same episode under the same actions, so an
#: evaluation plays each such file world once (tests/eval/test_eval_distinct_episodes.py)
FILE_WORLD_SEED_FREE = True


def world_fields(state) -> dict[str, jax.Array]:
    """The world of a Wildfire Resource Management state: `{name: array}` per `FIELDS`."""
    return {spec.name: getattr(state, spec.name) for spec in FIELDS}


def tower_cells(state, params, resolution: int) -> tuple[jax.Array, jax.Array]:
    """(row i32[A], column i32[A]) of the cell under each tower (as the generator places them)."""
    half = params.island_half_extent
    cell = 2.0 * half / resolution
    xz = state.tower_xyz[:, jnp.asarray([0, 2])]
    col = jnp.clip(jnp.floor((xz[:, 0] + half) / cell), 0, resolution - 1).astype(jnp.int32)
    row = jnp.clip(jnp.floor((half - xz[:, 1]) / cell), 0, resolution - 1).astype(jnp.int32)
    return row, col


def refresh(env, state, params):
    """`(obs, state)` of a step-0 `state` after its world fields changed: towers' elevations, nearest
    fire and the observation recomputed."""
    row, col = tower_cells(state, params, env.fire_resolution)
    tower_xyz = state.tower_xyz.at[:, 1].set(state.heights[row, col])
    position, distance, found = dynamics.nearest_fire(state.fire == BURNING, state.heights, tower_xyz, params)
    state = state.replace(
        tower_xyz=tower_xyz,
        fire_position=position,
        fire_found=found,
        distance=distance,
        previous_distance=distance,
    )
    return env._observe(state, jnp.zeros(env.num_agents, jnp.float32), params), state


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` with `world`'s fields (the key's draws are not used)."""
    state = state.replace(**{name: world[name] for name in world_fields(state)})
    return refresh(env, state, params)
