"""Aerial Wildfire Suppression: static options, cell codes, `EnvParams` and the task-weight table
(reference §2.5).

Every value the reference marks NOT FOUND or inferred is a field with a documented default; every
contradiction it lists for this environment (11-16) is a field too (see the switch comments below and
docs/envs/aerial_wildfire_suppression.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

#: HIVEX scalability counts (reference §2.5); the default is 3 aeroplanes.
SUPPORTED_AGENT_COUNTS = (1, 2, 3, 6, 9, 12)
DEFAULT_NUM_AGENTS = 3

TASK_NAMES = (
    "Main",
    "Max Extinguished Trees",
    "Max Prepared Trees",
    "Min Time Burning",
    "Protect Village",
    "Pick Up Water",
    "Drop Water",
    "Find Fire",
    "Find Village",
)
TASK_PICK_UP_WATER, TASK_DROP_WATER, TASK_FIND_FIRE, TASK_FIND_VILLAGE = 5, 6, 7, 8

REWARD_TERM_NAMES = (
    "crossed_border",
    "pick_up_water",
    "fire_out",
    "too_close_to_village",
    "time_step_burning",
    "find_fire",
    "find_village",
    "extinguishing_tree",
    "preparing_tree",
)
#: column of each reward term in `reward_terms` (the order of REWARD_TERM_NAMES)
(
    CROSSED_BORDER,
    PICK_UP_WATER,
    FIRE_OUT,
    TOO_CLOSE_TO_VILLAGE,
    TIME_STEP_BURNING,
    FIND_FIRE,
    FIND_VILLAGE,
    EXTINGUISHING_TREE,
    PREPARING_TREE,
) = range(len(REWARD_TERM_NAMES))

#: Paper Table 12: rows = task (code ids 0-8), columns = the reward terms above.
TASK_WEIGHTS = (
    # bord pick  out  vill  tsb  fire  vlg  ext  prep
    (1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0),  # 0 Main
    (1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 10.0, 1.0),  # 1 Max Extinguished Trees
    (1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 5.0),  # 2 Max Prepared Trees
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0),  # 3 Min Time Burning
    (1.0, 1.0, 1.0, 10.0, 0.0, 0.0, 0.0, 1.0, 1.0),  # 4 Protect Village
    (1.0, 100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0),  # 5 Pick Up Water
    (1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0),  # 6 Drop Water
    (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0),  # 7 Find Fire
    (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0),  # 8 Find Village
)

# Cell codes of the island grid (uint8). Only HEALTHY, BURNING, WET and BURNT are trees.
BARE, HEALTHY, BURNING, BURNT, WET, LAKE, VILLAGE = 0, 1, 2, 3, 4, 5, 6
# Extra codes used only by cameras and pictures (never stored in the grid).
SEA, OUTSIDE = 7, 8
NUM_CODES = 9

#: Island cells per terrain block: slopes and spread probabilities are per 4 x 4-cell block.
TERRAIN_BLOCK = 4
#: Ignition points drawn per world (`num_ignitions` of them are lit) and candidates tried per point.
MAX_IGNITIONS = 3
IGNITION_CANDIDATES = 16
#: Smallest island half-extent the switch `water_girdle_width` may give (girdle <= 300 m).
MIN_ISLAND_HALF_EXTENT = 450.0

# Switch values.
ANY_TREE_BURNING, ALL_TREES_BURNING = 0, 1  # time_step_burning_mode (contradiction 11)
PICKUP_INTENDED, PICKUP_EQ50_LITERAL = 0, 1  # pickup_zone_mode (contradiction 14)
ONCE_PER_EPISODE, EVERY_STEP = 0, 1  # fire_out_mode, village_penalty_mode (NOT FOUND / inferred)


def _f(x: float):
    return struct.field(default_factory=lambda: jnp.float32(x))


def _i(x: int):
    return struct.field(default_factory=lambda: jnp.int32(x))


@struct.dataclass
class AerialWildfireParams:
    """Dynamic parameters: one compiled `step` serves any mix of these under `vmap`.

    Lengths in metres, times in decisions (steps). Tags: [P]/[R]/[S]/[C] = reference source,
    (inferred), (designed) = ours where the reference is silent.
    """

    task: jax.Array = _i(0)
    terrain_level: jax.Array = _i(1)  # 1-10, scales terrain elevation [C]
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.asarray(TASK_WEIGHTS, jnp.float32))
    max_steps: jax.Array = _i(3000)  # [R], one decision per step (inferred)

    # --- geometry [P]
    border_half_extent: jax.Array = _f(750.0)  # border 1500 x 1500; also the obs normaliser (/750) [C]
    # Contradiction 13: girdle 150 per side (geometry, default) or 300 (text). Island half-extent =
    # border - girdle; valid range [150, 300].
    water_girdle_width: jax.Array = _f(150.0)

    # --- aeroplanes (NOT FOUND; designed / inferred)
    plane_speed: jax.Array = _f(10.0)  # m per decision (designed, fits the logged cycle counts)
    turn_rate_degrees: jax.Array = _f(15.0)  # at |steer| = 1 (inferred from the LLM controller [C])
    spawn_half_width: jax.Array = _f(450.0)  # planes spawn over the south water, |x| <= this (designed)
    spawn_heading_spread_degrees: jax.Array = _f(30.0)  # around north (designed)
    drop_radius: jax.Array = _f(110.0)  # wetted disc under the plane (designed: ~200 trees per drop)
    # Inferred: a pick-up is entering the water area, whether or not the tank is full (task 5 logs 1
    # pick-up and 0 drops per episode although planes start full). 1 = only an empty tank refills.
    pickup_requires_empty_tank: jax.Array = _i(0)

    # --- sensing (designed)
    camera_ground_size: jax.Array = _f(420.0)  # side of the square the downward camera sees
    observe_fire_first: jax.Array = _i(1)  # obs 5-7: nearest fire in view before nearest tree
    shade_strength: jax.Array = _f(0.6)  # hill shading of the camera and pictures

    # --- terrain and forest (designed; the level scales elevation [C])
    relief_per_level: jax.Array = _f(20.0)  # metres of relief per terrain level
    lake_level: jax.Array = _f(0.14)  # normalised elevation below which island cells are lakes
    treeline: jax.Array = _f(0.92)  # normalised elevation above which no trees grow
    forest_density: jax.Array = _f(0.85)  # fraction of land cells with a tree

    # --- village [C][R]
    random_village_location: jax.Array = _i(0)  # 0 = fixed, as in the baselines / LLM work [C]
    village_x: jax.Array = _f(400.0)  # "the village is in the bottom right" [C]
    village_z: jax.Array = _f(-400.0)
    village_radius: jax.Array = _f(50.0)  # treeless houses (designed)
    village_danger_distance: jax.Array = _f(150.0)  # Too Close to Village [R]
    find_village_distance: jax.Array = _f(150.0)  # [P]
    find_fire_distance: jax.Array = _f(150.0)  # d_t [P]

    # --- fire (NOT FOUND; designed, documented in the env page)
    num_ignitions: jax.Array = _i(1)  # 1..MAX_IGNITIONS
    ignition_radius: jax.Array = _f(20.0)
    min_ignition_village_distance: jax.Array = _f(350.0)
    spread_probability: jax.Array = _f(0.02)  # per burning neighbour per step, calm flat neutral weather
    diagonal_spread_weight: jax.Array = _f(0.7071)  # diagonal neighbours are sqrt(2) further
    wind_spread_factor: jax.Array = _f(1.2)  # exp(factor * wind speed * cos) downwind boost
    slope_spread_factor: jax.Array = _f(3.0)  # exp(factor * rise) uphill boost
    burn_duration: jax.Array = _f(150.0)  # mean steps a tree burns (geometric)
    wet_duration: jax.Array = _f(400.0)  # mean steps a wet tree stays wet (geometric)

    # --- weather (designed; reference: wind, overcast, temperature, humidity [F])
    wind_speed_min: jax.Array = _f(0.2)  # normalised 0..1
    wind_speed_max: jax.Array = _f(1.0)
    wind_swing_degrees: jax.Array = _f(20.0)  # std of the slow wind-direction drift
    temperature_min: jax.Array = _f(15.0)  # deg C
    temperature_max: jax.Array = _f(40.0)
    humidity_min: jax.Array = _f(15.0)  # percent
    humidity_max: jax.Array = _f(70.0)
    weather_time_scale: jax.Array = _f(800.0)  # steps
    temperature_factor: jax.Array = _f(0.4)  # spread x exp(f * (T - 25) / 10)
    humidity_factor: jax.Array = _f(0.4)  # spread x exp(-f * (H - 40) / 30)

    # --- reward constants [P][R][S]
    crash_reward: jax.Array = _f(-100.0)
    # Contradiction 12: +1 (paper, logs) or +100 (README); the per-step -1/MaxStep (README, logs) is
    # part of this term and is scaled by its task weight.
    water_pickup_reward: jax.Array = _f(1.0)
    water_pickup_step_penalty: jax.Array = _f(1.0 / 3000.0)
    fire_out_reward: jax.Array = _f(10.0)
    too_close_reward: jax.Array = _f(-50.0)
    time_step_burning_reward: jax.Array = _f(-0.01)
    find_fire_reward: jax.Array = _f(100.0)
    find_village_reward: jax.Array = _f(100.0)
    extinguish_reward: jax.Array = _f(5.0)
    prepare_reward: jax.Array = _f(1.0)

    # --- switches
    time_step_burning_mode: jax.Array = _i(ANY_TREE_BURNING)  # contradiction 11: text (any) / eq. 53 (all)
    pickup_zone_mode: jax.Array = _i(PICKUP_INTENDED)  # contradiction 14: AND (intended) / eq. 50 as printed
    forward_zero_at_reset: jax.Array = _i(0)  # contradiction 16's sample shows forward (0, 0) at reset
    fire_out_mode: jax.Array = _i(ONCE_PER_EPISODE)  # NOT FOUND; logs fit once per episode
    village_penalty_mode: jax.Array = _i(ONCE_PER_EPISODE)  # inferred from the logs: once per episode
    count_rewetting: jax.Array = _i(0)  # designed: re-wetting a wet tree is not "preparing"
    end_episode_on_fire_out: jax.Array = _i(0)  # designed; HIVEX ends only on crash / subtask goal


#: Documented bounds of every `AerialWildfireParams` field, inclusive and elementwise
#: (hivex_jax.core.bounds): `make` and `env.validate_params` reject values outside them; `reset`/`step`
#: clamp traced values. A name instead of a number is a static option of the env (`local_radius_m`: the
#: sensing windows are sized for it).
PARAM_BOUNDS: dict[str, tuple[float | str, float | str]] = {
    "task": (0, len(TASK_NAMES) - 1),
    "terrain_level": (1, 10),
    "task_weights": (-1000.0, 1000.0),
    "max_steps": (1, 1_000_000),
    # geometry: the static windows assume an island half-extent >= MIN_ISLAND_HALF_EXTENT
    "border_half_extent": (750.0, 3000.0),
    "water_girdle_width": (150.0, 300.0),  # contradiction 13's two readings
    # aeroplanes
    "plane_speed": (0.0, 100.0),
    "turn_rate_degrees": (0.0, 180.0),
    "spawn_half_width": (0.0, 750.0),
    "spawn_heading_spread_degrees": (0.0, 180.0),
    "drop_radius": (0.0, 130.0),  # env.MAX_DROP_RADIUS: the static drop window
    "pickup_requires_empty_tank": (0, 1),
    # sensing
    "camera_ground_size": (10.0, 1500.0),  # > 0: a pixel is this / camera_size
    "observe_fire_first": (0, 1),
    "shade_strength": (0.0, 1.0),
    # terrain and forest
    "relief_per_level": (0.0, 200.0),
    "lake_level": (0.0, 1.0),  # normalised elevations and a fraction
    "treeline": (0.0, 1.0),
    "forest_density": (0.0, 1.0),
    # village (kept on the smallest island)
    "random_village_location": (0, 1),
    "village_x": (-400.0, 400.0),
    "village_z": (-400.0, 400.0),
    "village_radius": (0.0, 100.0),
    "village_danger_distance": (0.0, "local_radius_m"),
    "find_village_distance": (0.0, 1500.0),
    "find_fire_distance": (0.0, "local_radius_m"),
    # fire
    "num_ignitions": (1, MAX_IGNITIONS),
    "ignition_radius": (0.0, 200.0),
    "min_ignition_village_distance": (0.0, 1000.0),
    "spread_probability": (0.0, 1.0),
    "diagonal_spread_weight": (0.0, 1.0),
    "wind_spread_factor": (0.0, 5.0),
    "slope_spread_factor": (0.0, 10.0),
    "burn_duration": (1.0, 100_000.0),  # mean steps; >= 1 keeps 1 / duration a probability
    "wet_duration": (1.0, 100_000.0),
    # weather (normalised wind, degrees C, percent, steps)
    "wind_speed_min": (0.0, 1.0),
    "wind_speed_max": (0.0, 1.0),
    "wind_swing_degrees": (0.0, 180.0),
    "temperature_min": (-30.0, 60.0),
    "temperature_max": (-30.0, 60.0),
    "humidity_min": (0.0, 100.0),
    "humidity_max": (0.0, 100.0),
    "weather_time_scale": (1.0, 1_000_000.0),  # > 0: a divisor
    "temperature_factor": (0.0, 5.0),
    "humidity_factor": (0.0, 5.0),
    # reward constants
    "crash_reward": (-10_000.0, 10_000.0),
    "water_pickup_reward": (-1000.0, 1000.0),
    "water_pickup_step_penalty": (0.0, 1.0),
    "fire_out_reward": (-1000.0, 1000.0),
    "too_close_reward": (-1000.0, 1000.0),
    "time_step_burning_reward": (-1000.0, 1000.0),
    "find_fire_reward": (-1000.0, 1000.0),
    "find_village_reward": (-1000.0, 1000.0),
    "extinguish_reward": (-1000.0, 1000.0),
    "prepare_reward": (-1000.0, 1000.0),
    # switches
    "time_step_burning_mode": (ANY_TREE_BURNING, ALL_TREES_BURNING),
    "pickup_zone_mode": (PICKUP_INTENDED, PICKUP_EQ50_LITERAL),
    "forward_zero_at_reset": (0, 1),
    "fire_out_mode": (ONCE_PER_EPISODE, EVERY_STEP),
    "village_penalty_mode": (ONCE_PER_EPISODE, EVERY_STEP),
    "count_rewetting": (0, 1),
    "end_episode_on_fire_out": (0, 1),
}


#: Documented bounds of the numeric static options (constructor / `make` kwargs), inclusive: `make` and the
#: constructor refuse a value outside them before anything is allocated or traced (hivex_jax.core.bounds).
#: Options with a fixed set of values are also checked against the set (env.py). The upper bounds keep one
#: world far below 1 GB and a first compile within seconds (docs/envs/aerial_wildfire_suppression.md).
STATIC_BOUNDS: dict[str, tuple[float, float]] = {
    "num_agents": (1, 12),  # one of SUPPORTED_AGENT_COUNTS
    "grid_size": (32, 252),  # a multiple of 4; <= 252: tree counts are packed into 16-bit halves
    "camera_size": (1, 128),  # pixels per side: uint8[A, S, S, C] per world
    "camera_channels": (1, 3),  # 1 or 3
    "vector_size": (8, 9),
    "local_radius_m": (150.0, 300.0),  # >= the find-fire / village-danger defaults; window inside grid 32
    "render_size": (16, 512),  # pixels per side of env.render's picture
}
