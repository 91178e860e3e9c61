"""Ocean Plastic Collection worlds: the trash population map (hot spots + an 8 x 8 background lattice).

HIVEX's sea has no obstacles, nor has a generated world here; a file world may add islands/rocks
(`obstacles`, a grid over the sea; a cell more than half covered is an obstacle; the env needs the
static option `obstacles=True`, else such a file is refused): vessels cannot enter
them (a sub-step into one is not taken, the vessel stops at the edge, no penalty, still in the
episode) and trash drawn onto them is parked (never afloat). Otherwise a world is its trash map. A
density image is the
background lattice (area-averaged to 8 x 8 cells; row 0 is the north edge); the hot spots take the
share `hotspot_fraction` of the trash (EnvParams), so set `num_hotspots=0` for the image alone.
`apply_world` puts the map into a reset state and recomputes what depends on it: the pebbles and the
queued respawns (drawn from the world's hash seed as `reset` draws them) and the observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.world_spec import ARRAY, GRID, FieldSpec
from hivex_jax.envs.ocean_plastic_collection import generator
from hivex_jax.envs.ocean_plastic_collection.observations import local_frame, nearest_neighbour, observe
from hivex_jax.envs.ocean_plastic_collection.params import BACKGROUND_LATTICE, OBSTACLE_GRID, RESPAWN_SLOTS
from hivex_jax.envs.ocean_plastic_collection.types import TrashMap

FIELDS = (
    FieldSpec("hotspot_x", ARRAY, (-2000.0, 2000.0), doc="f32[H] hot-spot centres x, metres"),
    FieldSpec("hotspot_z", ARRAY, (-2000.0, 2000.0), doc="f32[H] hot-spot centres z, metres"),
    FieldSpec("hotspot_radii", ARRAY, (0.0, 2000.0), doc="f32[H] hot-spot spreads (std), metres"),
    FieldSpec("hotspot_weights", ARRAY, (0.0, 1e6), doc="f32[H] relative hot-spot weights (normalised)"),
    FieldSpec(
        "background",
        GRID,
        (0.0, 1e6),
        doc=f"f32[{BACKGROUND_LATTICE}, {BACKGROUND_LATTICE}] relative background trash density per "
        "lattice cell (normalised; row 0 north); an image's grey 0..1 is the relative density",
        image_range=(0.0, 1.0),
    ),
    FieldSpec(
        "obstacles",
        GRID,
        (0.0, 1.0),
        doc=f"f32[{OBSTACLE_GRID}, {OBSTACLE_GRID}] obstacle cover per cell over the sea (row 0 north; "
        "image white = island); a cell is an obstacle where > 0.5: vessels stop at its edge, no trash "
        "on it; none in generated worlds",
        image_range=(0.0, 1.0),
    ),
)
#: a single image or .npy file is a trash density map
PRIMARY_FIELD = "background"
#: what the world seed changes in an episode on a file world that gives every field (docs/worlds.md)
SEED_ON_FILE_WORLD = (
    "the vessels' spawn and the trash: the initial pebbles and the respawn stream are drawn "
    "from the reset key's noise seed (the density map and obstacles are the file's)"
)
#: True: two seeds on such a file world play the same episode under the same actions, so an
#: evaluation plays each such file world once (tests/eval/test_eval_distinct_episodes.py)
FILE_WORLD_SEED_FREE = False


def world_fields(state) -> dict[str, jax.Array]:
    """The world of an Ocean Plastic Collection state: its trash map."""
    tm = state.trash_map
    return {
        "hotspot_x": tm.hotspot_x,
        "hotspot_z": tm.hotspot_z,
        "hotspot_radii": tm.hotspot_radii,
        "hotspot_weights": tm.hotspot_weights,
        "background": tm.background_weights.reshape(BACKGROUND_LATTICE, BACKGROUND_LATTICE),
        "obstacles": (
            jnp.zeros((OBSTACLE_GRID, OBSTACLE_GRID), jnp.float32)
            if state.obstacles is None
            else state.obstacles.astype(jnp.float32)
        ),
    }


def _normalised(weights: jax.Array) -> jax.Array:
    total = jnp.sum(weights)
    # an all-zero table (no hot spots / an empty image) stays zero rather than dividing by zero
    return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0), weights)


def trash_map(world: dict[str, jax.Array]) -> TrashMap:
    """A `TrashMap` from world fields (weights normalised, cumulative sums recomputed)."""
    hot = _normalised(world["hotspot_weights"])
    background = _normalised(world["background"].reshape(-1))
    # an empty background image would leave no cell to draw from: fall back to uniform
    background = jnp.where(jnp.sum(background) > 0, background, 1.0 / background.shape[0])
    return TrashMap(
        hotspot_x=world["hotspot_x"],
        hotspot_z=world["hotspot_z"],
        hotspot_radii=jnp.maximum(world["hotspot_radii"], 1e-3),
        hotspot_weights=hot,
        hotspot_cumulative=jnp.cumsum(hot),
        background_weights=background,
        background_cumulative=jnp.cumsum(background),
    )


def refresh(env, state, params):
    """`(obs, state)` of a step-0 `state` observed afresh (after its pebbles or vessels changed)."""
    neighbours, _ = nearest_neighbour(state.positions, state.alive)
    ahead, starboard = local_frame(state.pebble_x, state.pebble_z, state.positions, state.forward)
    return observe(state.positions, state.forward, neighbours, ahead, starboard, params), state


def complete_world(env, params, world: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """A loaded world, refused if it has obstacles and the env was made without `obstacles=True`."""
    if "obstacles" in world and np.any(world["obstacles"] > 0.5) and not env.obstacles:
        raise UserError(
            f"{where}: obstacles need {env.env_id} made with obstacles=True "
            "(hivex_jax.make(..., obstacles=True) or env_options.obstacles=true)"
        )
    return world


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` onto `world`'s trash map (pebbles redrawn from the world's seed)."""
    tm = trash_map(world)
    seed = state.rng_seed
    obstacles = None if state.obstacles is None else world["obstacles"] > 0.5
    uniforms = generator.trash_draw_uniforms(seed, jnp.uint32(generator.SALT_PEBBLES), env.num_pebbles)
    pebble_x, pebble_z = generator.park_on_obstacles(
        *generator.sample_trash(uniforms, tm, params), obstacles, params
    )
    uniforms = generator.trash_draw_uniforms(seed, jnp.uint32(generator.SALT_RESPAWN), RESPAWN_SLOTS)
    respawn_x, respawn_z = generator.park_on_obstacles(
        *generator.sample_trash(uniforms, tm, params), obstacles, params
    )
    state = state.replace(
        trash_map=tm,
        pebble_x=pebble_x,
        pebble_z=pebble_z,
        respawn_x=respawn_x,
        respawn_z=respawn_z,
        obstacles=obstacles,
    )
    return refresh(env, state, params)
