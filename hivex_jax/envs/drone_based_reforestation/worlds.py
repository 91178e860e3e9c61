"""Drone-Based Reforestation worlds: the terrain's plane waves, the forest patches and the station.

The generated terrain is analytic (a sum of plane waves, generator.py): its wave table (`.npy`). A file
world may give a terrain image instead, `terrain_grid` (the terrain shape 0..1 on 64 x 64 cells over the
arena, bilinear; height = amplitude(level) * max(shape, water_level), lakes where shape < water_level),
used while `terrain_grid_given` is set (import sets it when a file gives the grid); the env must be
made with the static option `terrain_grid=True` (else such a file is refused). Export writes the
analytic terrain sampled at the cell centres with the flag unset (an image to edit: delete or set
`terrain_grid_given.npy` to use the edit). The forest is a set of discs; `forest_centres` also
accepts a forest mask image, whose bright pixels become patch centres.
`apply_world` puts the fields into a reset state and recomputes what depends on them: the station's
hover point, the drones' spawn (around the station, as `reset` places them) and the observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.errors import UserError
from hivex_jax.core.world_spec import ARRAY, GRID, POINTS, FieldSpec
from hivex_jax.envs.drone_based_reforestation import generator
from hivex_jax.envs.drone_based_reforestation.params import DroneParams

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
    FieldSpec(
        "terrain_grid",
        GRID,
        (0.0, 1.0),
        doc=f"f32[{generator.TERRAIN_GRID}, {generator.TERRAIN_GRID}] terrain shape 0..1 over the arena "
        "(row 0 north; bilinear): height = amplitude(level) * max(shape, water_level), lakes below "
        "water_level; an image's grey 0..1 is the shape; used instead of the plane waves when given",
        image_range=(0.0, 1.0),
    ),
    FieldSpec(
        "terrain_grid_given",
        ARRAY,
        (0, 1),
        doc="bool[] use terrain_grid (set on import when a file gives the grid)",
    ),
)
#: world field -> World attribute, where they differ
_ATTRIBUTE = {"terrain_grid_given": "terrain_gridded"}
_GRID_FIELDS = ("terrain_grid", "terrain_grid_given")
#: export samples an analytic terrain on the grid with the default arena (+-200 m) and sharpness: a
#: preview to edit (world_fields sees no params); the flag stays unset, so the round trip is exact
_SAMPLE_PARAMS = DroneParams()
#: a single image or .npy file gives the forest patch centres
PRIMARY_FIELD = "forest_centres"
#: what the world seed changes in an episode on a file world that gives every field (docs/worlds.md)
SEED_ON_FILE_WORLD = (
    "the drones' spawn positions on the ring around the station and their headings; a step "
    "draws no randomness"
)
#: True: two seeds on such a file world play the same episode under the same actions, so an
#: evaluation plays each such file world once (tests/eval/test_eval_distinct_episodes.py)
FILE_WORLD_SEED_FREE = False


def world_fields(state) -> dict[str, jax.Array]:
    """The world of a Drone-Based Reforestation state (`station`, the hover point, is derived); an
    analytic terrain's grid is the plane waves sampled at the cell centres (with the flag unset)."""
    fields = {spec.name: getattr(state.world, spec.name) for spec in FIELDS if spec.name not in _GRID_FIELDS}
    sampled = generator.analytic_grid(state.world, _SAMPLE_PARAMS)
    if state.world.terrain_grid is None:  # an env without grids: the analytic terrain, flag unset
        fields["terrain_grid"], fields["terrain_grid_given"] = sampled, jnp.asarray(False)
    else:
        gridded = state.world.terrain_gridded
        fields["terrain_grid"] = jnp.where(gridded, state.world.terrain_grid, sampled)
        fields["terrain_grid_given"] = gridded
    return fields


def complete_world(env, params, world: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """A loaded world whose terrain grid, if a file gives one, is used (flag set unless a file gives it)."""
    if "terrain_grid" in world and "terrain_grid_given" not in world:
        world = {**world, "terrain_grid_given": np.asarray(True)}
    if bool(world.get("terrain_grid_given", False)) and not env.terrain_grid:
        raise UserError(
            f"{where}: a gridded terrain needs {env.env_id} made with terrain_grid=True "
            "(hivex_jax.make(..., terrain_grid=True) or env_options.terrain_grid=true)"
        )
    return world


def apply_world(env, key: jax.Array, state, world: dict[str, jax.Array], params):
    """`(obs, state)`: reset `state` onto `world` (drones spawned from the key as `reset` does)."""
    names = [
        spec.name for spec in FIELDS if state.world.terrain_grid is not None or spec.name not in _GRID_FIELDS
    ]
    new_world = state.world.replace(**{_ATTRIBUTE.get(name, name): world[name] for name in names})
    new_world = new_world.replace(station=generator.station_point(new_world, params))
    state = state.replace(world=new_world, **generator.spawn_drones(key, new_world, params, env.num_agents))
    return env._observe(state, params, seeds=False), state
