"""Drone-Based Reforestation: static options, `EnvParams` and the task-weight table (reference §2.3).

Every field below that the reference marks NOT FOUND or inferred is documented with its source in
docs/envs/drone_based_reforestation.md; reference contradictions 4-10 are fields (switches) here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

#: HIVEX scalability counts (reference §2.3); the default is 3 drones.
SUPPORTED_AGENT_COUNTS = (1, 2, 3, 6, 9, 12)
DEFAULT_NUM_AGENTS = 3
#: Camera sizes: 16 (README, wrapper; default) or 32 (process figure) - reference contradiction 8.
SUPPORTED_CAMERA_SIZES = (16, 32)

# Task ids: HIVEX code ids 0-6, plus the paper's Group-up column (P4) as task 7 (contradiction 7).
TASK_MAIN = 0
TASK_FIND_CLOSEST_FOREST = 1
TASK_PICK_UP_SEED = 2
TASK_DROP_SEED = 3
TASK_HIGHEST_POTENTIAL = 4
TASK_HIGHEST_POINT = 5
TASK_EXPLORE_AND_RETURN = 6
TASK_GROUP_UP = 7
TASK_NAMES = (
    "Main (Maximise Planted Trees)",
    "Find Closest Forest Perimeter",
    "Pick-up Seed at Base",
    "Drop Seed",
    "Find Highest Potential Seed Drop Location",
    "Find Highest Point on Landscape",
    "Explore Furthest and Return",
    "Group-up",
)

REWARD_TERM_NAMES = (
    "drop_seed",  # eq. 24-31: seed reward r_s + distance reward r_d on a valid drop
    "deplete_energy_holding_seed",  # -1/1000 per physics step while carrying a seed
    "deplete_energy_no_seed",  # -1/2000 per physics step otherwise
    "pick_up_seed",  # 1 when a seed is taken at the station
    "incremental_running_back",  # returning to the station after a drop, in 2.5 m increments
    "group_up",  # 10 per step while the closest other drone is within 5 m
    "high_fertility_location_delta",  # increase of the best reforestation potential found
    "high_landscape_point_delta",  # increase of the highest terrain point found
    "far_distance_explored_delta",  # increase of the furthest distance from the station
    "find_close_tree",  # 100 once, within 20 m of the closest existing tree
    "drop_seed_success",  # subtask Drop Seed: +100 on the drop (inferred from logs)
    "return_furthest_distance",  # task 6 pick-up row: furthest distance explored, paid on return
)
(
    DROP_SEED,
    DEPLETE_HOLDING,
    DEPLETE_NO_SEED,
    PICK_UP,
    RUNNING_BACK,
    GROUP_UP,
    FERTILITY_DELTA,
    LANDSCAPE_DELTA,
    FAR_DISTANCE_DELTA,
    FIND_CLOSE_TREE,
    DROP_SUCCESS,
    RETURN_FURTHEST,
) = range(len(REWARD_TERM_NAMES))

#: Paper Table 11 (rows = task ids above, columns = REWARD_TERM_NAMES). The Pick-up Seed weight of
#: task 6 ("= furthest distance explored") is the separate `return_furthest_distance` term; the drop
#: success bonus (task 3) is inferred from the logs (reference §2.3).
#:                 drop dH  dN  pick  run grp fert land far find succ ret
TASK_WEIGHTS = (
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # 0 Main
    (0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0),  # 1 Find Closest Forest Perimeter
    (0.0, 1.0, 1.0, 100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # 2 Pick-up Seed at Base
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0),  # 3 Drop Seed
    (0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # 4 Highest Potential Location
    (0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0),  # 5 Highest Point on Landscape
    (0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0),  # 6 Explore Furthest and Return
    (0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # 7 Group-up (paper column P4)
)

# Reference contradiction 4 (Find Close Tree): a real radius, or the paper's normalised formula.
FIND_TREE_RADIUS_METRES = 0  # distance <= find_tree_radius (20 m), paid once, ends the episode (default)
FIND_TREE_PAPER_FORMULA = 1  # distance / e_w <= find_tree_radius: true everywhere (eq. 47-48 as printed)

# Reference contradiction 9 (height bound 40 vs 45.9 logged): which height High Landscape Point uses.
LANDSCAPE_TERRAIN_HEIGHT = 0  # terrain height under the drone (default; bounded by terrain_max_height)
LANDSCAPE_DRONE_HEIGHT = 1  # the drone's own height (explains a logged 45.9 above the 40 bound)

# How the terrain level shapes the terrain (level scaling NOT FOUND; logs: highest point found 45.9 at
# level 1, 37.7-39.6 at levels 2-10, reference §3.3).
TERRAIN_LEVELS_LOGGED = 0  # peaks ~40 m at every level (level 1 x1.18), hills narrower as the level rises
TERRAIN_LEVELS_LINEAR = 1  # peaks 40 m x level / 10, same hills at every level (the default before the logs)

# Where the station gives seeds and recharges (NOT FOUND; logs: tasks 1, 4 and 5 record no recharge and
# no drop at any level, and their returns are the statistic - 0.997 = 1995 seedless physics steps).
STATION_WHERE_TASK_USES_IT = 0  # only in tasks whose weights pay a seed or station term (default)
STATION_ALWAYS = 1  # in every task (a drone takes a seed on its first decision; the default before the logs)
#: Reward terms that need the station's seeds or its return (any non-zero weight switches it on).
STATION_TERMS = (DROP_SEED, PICK_UP, RUNNING_BACK, DROP_SUCCESS, RETURN_FURTHEST)


def _f(x: float):
    return struct.field(default_factory=lambda: jnp.float32(x))


def _i(x: int):
    return struct.field(default_factory=lambda: jnp.int32(x))


@struct.dataclass
class DroneParams:
    """Dynamic parameters: one compiled `step` serves any mix of these under `vmap`.

    Lengths in metres, heights in metres (y up), times in seconds; "per substep" = per physics step
    (a decision is `physics_substeps` of them, a static option, 5 by default).
    """

    task: jax.Array = _i(TASK_MAIN)
    terrain_level: jax.Array = _i(1)
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.asarray(TASK_WEIGHTS, jnp.float32))
    # decisions: HIVEX logs 399 in tasks 4 and 5 at every level for MaxStep 2000 and decision period 5
    # (ML-Agents counts MaxStep / period - 1, as WFC's 4999 for 5000; reference §1.2, §3.3)
    max_steps: jax.Array = _i(399)

    # --- world geometry (e_w = 200 and the height bound 40 from the paper; the rest designed)
    arena_half_extent: jax.Array = _f(200.0)
    terrain_max_height: jax.Array = _f(40.0)  # peak height (paper's bound 40); see terrain_level_mode
    terrain_length_scale: jax.Array = _f(70.0)  # correlation length of the hills (at level 1)
    terrain_level_mode: jax.Array = _i(TERRAIN_LEVELS_LOGGED)
    terrain_level1_height_factor: jax.Array = _f(1.18)  # logged 45.9 / 38.94 (mean of levels 2-10)
    terrain_level10_length_factor: jax.Array = _f(0.5)  # hills' length scale at level 10 / at level 1
    terrain_sharpness: jax.Array = _f(0.8)  # shape = 0.5 + 0.5 tanh(sharpness * N(0,1) field)
    water_level: jax.Array = _f(0.12)  # lakes where the terrain shape is below this (about 10 % of land)
    forest_length_scale: jax.Array = _f(60.0)  # the forest-noise layer that places forest patches
    forest_patches: jax.Array = _i(16)  # patches used (at most the static `max_forest_patches`)
    forest_radius_min: jax.Array = _f(8.0)
    forest_radius_max: jax.Array = _f(30.0)
    station_forest_clearance: jax.Array = _f(75.0)  # no tree closer: the station lies outside the band
    station_max_offset: jax.Array = _f(60.0)  # station within this of the arena centre (each axis)
    station_hover_height: jax.Array = _f(2.0)  # the station point (spawn height) above its pad

    # --- drone kinematics (NOT FOUND; designed)
    substep_seconds: jax.Array = _f(0.1)  # one physics step; a decision is 5 of them = 0.5 s
    max_speed: jax.Array = _f(6.0)  # m/s at throttle +-1
    max_yaw_rate_degrees: jax.Array = _f(90.0)  # deg/s at steer +-1 (+1 turns right, clockwise from above)
    max_climb_rate: jax.Array = _f(3.0)  # m/s at up/down +-1
    response_seconds: jax.Array = _f(0.3)  # first-order lag of speed and climb rate
    ground_clearance: jax.Array = _f(1.0)  # lowest flight height above ground/water
    flight_ceiling: jax.Array = _f(60.0)  # highest flight height (world y)

    # --- battery (NOT FOUND; designed so that drain mirrors the energy rewards: a full battery lasts
    # exactly one 2000-step episode without a seed, half of it with one)
    battery_drain_no_seed: jax.Array = _f(1.0 / 2000.0)  # per substep
    battery_drain_holding_seed: jax.Array = _f(1.0 / 1000.0)  # per substep
    recharge_per_decision: jax.Array = _f(0.05)  # at the station; 20 decisions from empty to full
    charge_radius: jax.Array = _f(7.5)  # d_charge [P]: recharge and seed pick-up within this of the station
    out_of_energy_ends_episode: jax.Array = _i(1)  # 0: the drone lands and idles until the time limit
    station_mode: jax.Array = _i(STATION_WHERE_TASK_USES_IT)
    pick_up_requires_planting: jax.Array = _i(1)  # only the first seed and seeds after a valid drop pay
    spawn_holding_seed: jax.Array = _i(0)  # 0: drones take their first seed at the station
    spawn_ring_radius: jax.Array = _f(3.0)  # drones spawn on a ring this wide around the station point
    random_spawn_radius: jax.Array = _f(120.0)  # Pick-up Seed at Base: random start within this
    random_spawn_height: jax.Array = _f(10.0)  # ... at this height above ground

    # --- Drop Seed (eq. 24-31) [P]
    drop_min_distance: jax.Array = _f(2.5)  # d_otmin
    drop_max_distance: jax.Array = _f(75.0)  # d_otmax; the figure legend says 15 (contradiction 5)
    seed_reward_multiplier: jax.Array = _f(20.0)  # sdrm
    distance_reward_multiplier: jax.Array = _f(10.0)  # drm
    drop_counts_new_trees: jax.Array = _i(0)  # 1: d_et over existing AND planted trees (text; degenerate)
    water_drop_invalid: jax.Array = _i(1)  # a seed that falls into a lake earns nothing (designed)
    # --- energy rewards (eq. 32-33) [P]; contradiction 6: the appendix values are used
    energy_penalty_no_seed: jax.Array = _f(1.0 / 2000.0)
    energy_penalty_holding_seed: jax.Array = _f(1.0 / 1000.0)
    # 1: per physics step (the paper: "at each time step", episode length 2000; HIVEX's task-4/5 returns are
    # the statistic - 0.997 = 1995 steps x 1/2000), 0: per decision
    energy_penalty_per_substep: jax.Array = _i(1)
    # --- Incremental Running Back (eq. 35-38) [P]; budget r_p inferred from the README (20)
    running_back_increment: jax.Array = _f(2.5)
    running_back_budget: jax.Array = _f(20.0)
    # --- Group-up [P]
    group_up_distance: jax.Array = _f(5.0)
    group_up_reward: jax.Array = _f(10.0)
    # Group-up's start (designed; HIVEX is silent): drones evenly spaced on a ring this wide, so that
    # neighbours start 2 r sin(pi / A) >= 5.2 m apart (A <= 12), beyond group_up_distance: standing still
    # earns no group-up (on the 3 m default ring the zero action earned ~71 % of the maximum).
    # 0: the default start ring (spawn_ring_radius) as in the other tasks.
    group_up_spawn_radius: jax.Array = _f(10.0)
    # --- Find Close Tree (eq. 47-48), contradiction 4
    find_tree_mode: jax.Array = _i(FIND_TREE_RADIUS_METRES)
    find_tree_radius: jax.Array = _f(20.0)
    find_tree_reward: jax.Array = _f(100.0)
    # --- subtask success bonus (Drop Seed, inferred from logs) and episode ends on success
    drop_success_reward: jax.Array = _f(100.0)
    drop_success_requires_valid: jax.Array = _i(0)  # logs: bonus ~ 100 x tree-drop count (any drop)
    # --- exploration / landscape terms; contradictions 9 and 10
    landscape_height_mode: jax.Array = _i(LANDSCAPE_TERRAIN_HEIGHT)
    far_distance_divisor: jax.Array = _f(200.0)  # e_w: normalised (task-6 logs); 1.0 = metres (text)

    # --- observation (normalisation NOT FOUND; inferred: horizontal / 200, vertical / 40)
    position_scale: jax.Array = _f(200.0)
    height_scale: jax.Array = _f(40.0)
    camera_fov_degrees: jax.Array = _f(90.0)
    camera_min_half_width: jax.Array = _f(6.0)  # ground half-width seen at zero altitude
    camera_max_half_width: jax.Array = _f(80.0)


#: Documented bounds of every `DroneParams` field, inclusive and elementwise (hivex_jax.core.bounds):
#: `make` and `env.validate_params` reject values outside them; `reset`/`step` clamp traced values.
#: A name instead of a number is a static option of the env (`max_forest_patches`).
PARAM_BOUNDS: dict[str, tuple[float | str, float | str]] = {
    "task": (0, len(TASK_NAMES) - 1),
    "terrain_level": (1, 10),
    "task_weights": (-1000.0, 1000.0),
    "max_steps": (1, 1_000_000),
    # world geometry
    "arena_half_extent": (50.0, 1000.0),
    "terrain_max_height": (0.0, 200.0),
    "terrain_length_scale": (5.0, 1000.0),  # > 0: a noise wavelength
    "terrain_level_mode": (TERRAIN_LEVELS_LOGGED, TERRAIN_LEVELS_LINEAR),
    "terrain_level1_height_factor": (0.0, 5.0),
    "terrain_level10_length_factor": (0.05, 10.0),  # > 0: scales a wavelength
    "terrain_sharpness": (0.0, 10.0),
    "water_level": (0.0, 1.0),  # a terrain-shape threshold; the shape lies in [0, 1]
    "forest_length_scale": (5.0, 1000.0),
    "forest_patches": (0, "max_forest_patches"),
    "forest_radius_min": (1.0, 50.0),
    "forest_radius_max": (1.0, 200.0),
    "station_forest_clearance": (0.0, 500.0),
    "station_max_offset": (0.0, 500.0),
    "station_hover_height": (0.0, 50.0),
    # drone kinematics
    "substep_seconds": (0.01, 1.0),
    "max_speed": (0.0, 50.0),
    "max_yaw_rate_degrees": (0.0, 720.0),
    "max_climb_rate": (0.0, 20.0),
    "response_seconds": (0.01, 10.0),  # > 0: the lag divides by it
    "ground_clearance": (0.0, 10.0),
    "flight_ceiling": (10.0, 500.0),
    # battery
    "battery_drain_no_seed": (0.0, 0.1),
    "battery_drain_holding_seed": (0.0, 0.1),
    "recharge_per_decision": (0.0, 1.0),
    "charge_radius": (0.5, 100.0),
    "out_of_energy_ends_episode": (0, 1),
    "station_mode": (STATION_WHERE_TASK_USES_IT, STATION_ALWAYS),
    "pick_up_requires_planting": (0, 1),
    "spawn_holding_seed": (0, 1),
    "spawn_ring_radius": (0.0, 50.0),
    "random_spawn_radius": (0.0, 1000.0),
    "random_spawn_height": (0.0, 100.0),
    # Drop Seed: the two ranges do not overlap, so the band [min, max] never has zero width (eq. 26
    # divides by it)
    "drop_min_distance": (0.0, 10.0),
    "drop_max_distance": (15.0, 500.0),
    "seed_reward_multiplier": (-1000.0, 1000.0),
    "distance_reward_multiplier": (-1000.0, 1000.0),
    "drop_counts_new_trees": (0, 1),
    "water_drop_invalid": (0, 1),
    # energy rewards
    "energy_penalty_no_seed": (0.0, 1.0),
    "energy_penalty_holding_seed": (0.0, 1.0),
    "energy_penalty_per_substep": (0, 1),
    # Incremental Running Back, Group-up, Find Close Tree, success bonus
    "running_back_increment": (0.1, 100.0),  # > 0: distances are divided by it
    "running_back_budget": (0.0, 1000.0),
    "group_up_distance": (0.0, 100.0),
    "group_up_reward": (-1000.0, 1000.0),
    "group_up_spawn_radius": (0.0, 50.0),
    "find_tree_mode": (FIND_TREE_RADIUS_METRES, FIND_TREE_PAPER_FORMULA),
    "find_tree_radius": (0.0, 500.0),
    "find_tree_reward": (-1000.0, 1000.0),
    "drop_success_reward": (-1000.0, 1000.0),
    "drop_success_requires_valid": (0, 1),
    "landscape_height_mode": (LANDSCAPE_TERRAIN_HEIGHT, LANDSCAPE_DRONE_HEIGHT),
    "far_distance_divisor": (0.1, 10_000.0),  # > 0: a divisor
    # observation
    "position_scale": (1.0, 10_000.0),  # > 0: normalisers
    "height_scale": (1.0, 1000.0),
    "camera_fov_degrees": (1.0, 170.0),
    "camera_min_half_width": (0.5, 20.0),  # does not overlap the max's range: a positive width band
    "camera_max_half_width": (25.0, 500.0),
}


#: Documented bounds of the numeric static options (constructor / `make` kwargs), inclusive: `make` and the
#: constructor refuse a value outside them before anything is allocated or traced (hivex_jax.core.bounds).
#: Options with a fixed set of values are also checked against the set (env.py). The upper bounds keep one
#: world far below 1 GB and a first compile within seconds (docs/envs/drone_based_reforestation.md).
STATIC_BOUNDS: dict[str, tuple[float, float]] = {
    "num_agents": (1, 12),  # one of SUPPORTED_AGENT_COUNTS
    "camera_size": (16, 32),  # one of SUPPORTED_CAMERA_SIZES
    "physics_substeps": (1, 20),  # unrolled in the compiled step: compile time grows with it
    "max_forest_patches": (1, 48),  # generator.FOREST_CANDIDATES
    "max_planted_trees": (1, 256),  # env.render draws every tree on every pixel
    "render_size": (16, 512),  # pixels per side of env.render's picture
}
