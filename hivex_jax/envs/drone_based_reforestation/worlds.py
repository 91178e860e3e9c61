"""Drone-Based Reforestation worlds: the terrain's plane waves, the forest patches and the station.

The terrain here is analytic (a sum of plane waves, generator.py), not a grid, so a world's terrain is
its wave table (`.npy`), not a height image. The forest is a set of discs; `forest_centres` also
accepts a forest mask image (`FOREST_MASK`), whose bright pixels become patch centres.
`apply_world` puts the fields into a reset state and recomputes what depends on them: the station's
hover point, the drones' spawn (around the station, as `reset` places them) and the observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.core.world_spec import ARRAY, POINTS, FieldSpec
from hivex_jax.envs.drone_based_reforestation import generator
from hivex_jax.envs.drone_based_reforestation.generator import ground_height, terrain_shape
from hivex_jax.envs.drone_based_reforestation.params import TASK_PICK_UP_SEED

FIELDS = (
    FieldSpec("terrain_waves", ARRAY, (-100.0, 100.0), doc="f32[K, 2] terrain plane waves, rad per metre"),
    FieldSpec("terrain_phases", ARRAY, (-100.0, 100.0), doc="f32[K] their phases, rad"),
    FieldSpec(
        "forest_centres",
        POINTS,
        (-1000.0, 1000.0),
        doc="f32[N, 2] forest patch centres (x, z), metres; an image's N brightest pixels over the "
        "default 400 m arena",
        image_range=(-200.0, 200.0),
    ),
    FieldSpec(
        "forest_radii",
        ARRAY,
        (generator.ABSENT_RADIUS, 1000.0),
        doc=f"f32[N] patch radii, metres ({generator.ABSENT_RADIUS:g} = no patch)",
    ),
    FieldSpec("station_xz", ARRAY, (-1000.0, 1000.0), doc="f32[2] charging station (x, z), metres"),
)
#: a single image or .npy file gives the forest patch centres
PRIMARY_FIELD = "forest_centres"


def world_fields(state) -> dict[str, jax.Array]:
    """The world of a Drone-Based Reforestation state (`station`, the hover point, is derived)."""
    return {spec.name: getattr(state.world, spec.name) for spec in FIELDS}


def spawn(env, key: jax.Array, world, params) -> dict[str, jax.Array]:
    """The drones' start on `world` from `key`, as `reset` places them: position, ground, shape below."""
    a = env.num_agents
    station = world.station
    u = generator.spawn_uniforms(key, a)
    ring = 2.0 * jnp.pi * (jnp.arange(a) / a + u[1])
    ring_xz = station[jnp.asarray([0, 2])] + params.spawn_ring_radius * jnp.stack(
        [jnp.cos(ring), jnp.sin(ring)], -1
    )
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


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` onto `world` (drones spawned from the key as `reset` does)."""
    new_world = state.world.replace(**{spec.name: world[spec.name] for spec in FIELDS})
    new_world = new_world.replace(station=generator.station_point(new_world, params))
    state = state.replace(world=new_world, **spawn(env, key, new_world, params))
    return env._observe(state, params, seeds=False), state
