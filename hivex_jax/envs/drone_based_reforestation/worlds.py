"""Drone-Based Reforestation worlds: the terrain's plane waves, the forest patches and the station.

The terrain here is analytic (a sum of plane waves, generator.py), not a grid, so a world's terrain is
its wave table (`.npy`), not a height image. The forest is a set of discs; `forest_centres` also
accepts a forest mask image (`FOREST_MASK`), whose bright pixels become patch centres.
`apply_world` puts the fields into a reset state and recomputes what depends on them: the station's
hover point, the drones' spawn (around the station, as `reset` places them) and the observation.
"""

from __future__ import annotations

import jax

from hivex_jax.core.world_spec import ARRAY, POINTS, FieldSpec
from hivex_jax.envs.drone_based_reforestation import generator

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


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` onto `world` (drones spawned from the key as `reset` does)."""
    new_world = state.world.replace(**{spec.name: world[spec.name] for spec in FIELDS})
    new_world = new_world.replace(station=generator.station_point(new_world, params))
    state = state.replace(world=new_world, **generator.spawn_drones(key, new_world, params, env.num_agents))
    return env._observe(state, params, seeds=False), state
