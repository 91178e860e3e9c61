"""Ocean Plastic Collection: static options, `EnvParams` and the task-weight table (reference §2.4).

Units: metres and physics sub-steps (one decision = `physics_substeps` sub-steps, 5 by default).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

DEFAULT_NUM_AGENTS = 3
MAX_AGENTS = 16  # spawn ring (designed) keeps vessels apart up to this many
DEFAULT_NUM_PEBBLES = 256  # designed: fixed-capacity pebble array (see docs: cost vs density)
DEFAULT_PHYSICS_SUBSTEPS = 5  # HIVEX's decision period (5000 steps / 1000 decisions, inferred)
MAX_HOTSPOTS = 8  # capacity of the hot-spot table; `num_hotspots` of them are used
BACKGROUND_LATTICE = 8  # background density lives on an 8 x 8 lattice of 50 m cells (bilinear)
PARKED = 1.0e6  # coordinate of collected pebbles when respawn is off: far outside every view
#: cells per side of a file world's obstacle grid over the sea (docs/worlds.md); none by default
OBSTACLE_GRID = 32
RESPAWN_SLOTS = 16  # fresh positions drawn per step for collected pebbles (see dynamics.respawn)

TASK_NAMES = ("Plastic Collection", "Find Highest Polluted Area", "Group Up", "Avoid Plastic")
REWARD_TERM_NAMES = (
    "collect_trash",
    "global_lowest_trash_collected",
    "crossed_border",
    "collided_with_other_vessel",
    "close_to_other_vessel",
    "nearby_trash_count_delta",
    "collide_with_trash",
)
#: column of each reward term in `reward_terms` (the order of REWARD_TERM_NAMES)
(
    COLLECT_TRASH,
    GLOBAL_LOWEST_TRASH_COLLECTED,
    CROSSED_BORDER,
    COLLIDED_WITH_OTHER_VESSEL,
    CLOSE_TO_OTHER_VESSEL,
    NEARBY_TRASH_COUNT_DELTA,
    COLLIDE_WITH_TRASH,
) = range(len(REWARD_TERM_NAMES))

#: Paper Table 10: rows = task (code ids 0-3), columns = REWARD_TERM_NAMES.
TASK_WEIGHTS = (
    (1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0),  # 0 Plastic Collection (main)
    (1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0),  # 1 Find Highest Polluted Area
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0),  # 2 Group Up
    (-1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0),  # 3 Avoid Plastic
)

#: Nearby Trash Count Delta: what the current count is compared with (reference contradiction 3).
NEARBY_PREVIOUS_STEP = 0  # eq. 20-22: the previous step's count (default)
NEARBY_RUNNING_MAX = 1  # prose: the highest count so far

#: Global Lowest Trash Collected: which vessels the minimum runs over (eq. 14 "from all agents").
LOWEST_OVER_ACTIVE_VESSELS = 0  # vessels still in the episode this decision (default; HIVEX respawns)
LOWEST_OVER_ALL_VESSELS = 1  # every vessel, out ones with their final count (one lost early zeroes it)


def _f(x: float):
    return struct.field(default_factory=lambda: jnp.float32(x))


def _i(x: int):
    return struct.field(default_factory=lambda: jnp.int32(x))


@struct.dataclass
class OceanPlasticParams:
    """Dynamic parameters: one compiled `step` serves any mix of these under `vmap`.

    Every value the reference marks NOT FOUND or inferred, and each of its three OPC contradictions, is
    a field with a documented default (docs/envs/ocean_plastic_collection.md).
    """

    task: jax.Array = _i(0)
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.asarray(TASK_WEIGHTS, jnp.float32))
    max_steps: jax.Array = _i(1000)  # decisions (5000 Unity steps / decision period 5, inferred)
    # --- sea and reward constants (paper eq. 13-23)
    sea_half_extent: jax.Array = _f(200.0)  # e_h, exact
    collect_trash_reward: jax.Array = _f(1.0)  # per pebble, exact
    lowest_collected_factor: jax.Array = _f(0.01)  # a of eq. 15, exact
    lowest_collected_mode: jax.Array = _i(LOWEST_OVER_ACTIVE_VESSELS)  # who the eq. 14 minimum covers
    crossed_border_reward: jax.Array = _f(-100.0)  # exact
    vessel_collision_reward: jax.Array = _f(-100.0)  # exact
    close_vessel_reward: jax.Array = _f(1.0)  # contradiction 1: text +1, eq. 18 +10
    close_vessel_distance: jax.Array = _f(10.0)  # text: d <= 10
    nearby_trash_distance: jax.Array = _f(25.0)  # d_threshold of eq. 19, exact
    nearby_trash_mode: jax.Array = _i(NEARBY_PREVIOUS_STEP)  # contradiction 3
    trash_collision_reward: jax.Array = _f(-1.0)  # contradiction 2: text -1, eq. 23 -100
    # --- vessel dynamics (NOT FOUND; designed). Per physics sub-step.
    thrust: jax.Array = _f(0.04)  # m / sub-step^2 while accelerating
    forward_drag: jax.Array = _f(0.05)  # fraction of forward speed lost per sub-step
    lateral_drag: jax.Array = _f(0.3)  # fraction of sideways speed lost per sub-step (keel)
    turn_rate_degrees: jax.Array = _f(2.0)  # heading change per sub-step while steering
    vessel_radius: jax.Array = _f(2.5)  # hull disc; two vessels collide when closer than 2 radii
    collect_radius: jax.Array = _f(3.0)  # a pebble within this of the swept path is collected
    spawn_ring_radius: jax.Array = _f(40.0)  # vessels start on a ring around a random centre
    spawn_centre_range: jax.Array = _f(60.0)  # ring centre uniform in [-range, range]^2
    # --- trash population map (NOT FOUND; designed): hot spots + smooth noise background
    num_hotspots: jax.Array = _i(4)  # at most MAX_HOTSPOTS
    hotspot_fraction: jax.Array = _f(0.7)  # share of pebbles drawn from the hot spots
    hotspot_radius_min: jax.Array = _f(12.0)  # Gaussian std of a hot spot, m
    hotspot_radius_max: jax.Array = _f(30.0)
    hotspot_centre_range: jax.Array = _f(150.0)  # hot-spot centres uniform in [-range, range]^2
    background_contrast: jax.Array = _f(1.5)  # background density ~ exp(contrast * (2 noise - 1))
    respawn_collected: jax.Array = _i(1)  # 1: a collected pebble reappears at a fresh map draw, 0: gone
    # --- visual observation
    visual_cell_size: jax.Array = _f(2.0)  # m per cell, exact (reference: 2 m cells)
    visual_saturation_count: jax.Array = _f(2.0)  # pebbles per cell shown as 255 (designed)


#: Documented bounds of every `OceanPlasticParams` field, inclusive and elementwise (hivex_jax.core.bounds):
#: `make` and `env.validate_params` reject values outside them; `reset`/`step` clamp traced values.
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    "task": (0, len(TASK_NAMES) - 1),
    "task_weights": (-1000.0, 1000.0),
    "max_steps": (1, 1_000_000),
    "sea_half_extent": (50.0, 2000.0),
    "collect_trash_reward": (-1000.0, 1000.0),
    "lowest_collected_factor": (0.0, 10.0),
    "lowest_collected_mode": (LOWEST_OVER_ACTIVE_VESSELS, LOWEST_OVER_ALL_VESSELS),
    "crossed_border_reward": (-10_000.0, 10_000.0),
    "vessel_collision_reward": (-10_000.0, 10_000.0),
    "close_vessel_reward": (-1000.0, 1000.0),
    "close_vessel_distance": (0.0, 1000.0),
    "nearby_trash_distance": (0.0, 1000.0),
    "nearby_trash_mode": (NEARBY_PREVIOUS_STEP, NEARBY_RUNNING_MAX),
    "trash_collision_reward": (-1000.0, 1000.0),
    "thrust": (0.0, 1.0),
    "forward_drag": (0.0, 1.0),  # fractions of speed lost per sub-step
    "lateral_drag": (0.0, 1.0),
    "turn_rate_degrees": (0.0, 90.0),
    "vessel_radius": (0.1, 50.0),
    "collect_radius": (0.0, 50.0),
    "spawn_ring_radius": (0.0, 200.0),
    "spawn_centre_range": (0.0, 200.0),
    "num_hotspots": (0, MAX_HOTSPOTS),
    "hotspot_fraction": (0.0, 1.0),
    "hotspot_radius_min": (0.5, 200.0),  # > 0: a Gaussian std
    "hotspot_radius_max": (0.5, 200.0),
    "hotspot_centre_range": (0.0, 1000.0),
    "background_contrast": (0.0, 10.0),
    "respawn_collected": (0, 1),
    "visual_cell_size": (0.1, 50.0),  # > 0: positions are divided by it
    "visual_saturation_count": (0.1, 1000.0),  # > 0: counts are divided by it
}


#: Documented bounds of the numeric static options (constructor / `make` kwargs), inclusive: `make` and the
#: constructor refuse a value outside them before anything is allocated or traced (hivex_jax.core.bounds).
#: The upper bounds keep one world far below 1 GB and a first compile within seconds
#: (docs/envs/ocean_plastic_collection.md).
STATIC_BOUNDS: dict[str, tuple[float, float]] = {
    "num_agents": (1, MAX_AGENTS),
    "num_pebbles": (1, 65_536),  # every sub-step compares each vessel with each pebble
    "physics_substeps": (1, 20),  # unrolled in the compiled step: compile time grows with it
    "render_size": (16, 512),  # pixels per side of env.render's picture
}
