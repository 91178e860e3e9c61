"""Wildfire Resource Management: constants, `EnvParams` and the task-weight table (reference §2.2).

Every quantity the reference marks NOT FOUND or inferred is a field of `WildfireParams` with a
documented default (docs/envs/wildfire_resource_management.md has the fidelity table). Switches
select between the readings of the reference's contradictions 20 and 21 and of the missing eq. 9.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

NUM_TOWERS = 9  # fixed in HIVEX (no scalability runs)
TOWER_GRID = 3  # towers on a 3 x 3 grid; index = row * 3 + column, row 0 = north (+z), column 0 = west
NUM_NEIGHBOURS = 3
NUM_BRANCHES = 1 + NUM_NEIGHBOURS  # branch 0 = self, branches 1-3 = neighbours 1-3

TASK_NAMES = ("Distribute Resources", "Keep All", "Distribute All")
REWARD_TERM_NAMES = ("self", "neighbourhood", "collective")
#: column of each reward term in `reward_terms` (the order of REWARD_TERM_NAMES)
(
    SELF,
    NEIGHBOURHOOD,
    COLLECTIVE,
) = range(len(REWARD_TERM_NAMES))

#: Paper Table 9 with the task ids of the model cards and logs (reference §2.2, contradiction 20):
#: rows = task (0 Distribute Resources, 1 Keep All, 2 Distribute All); columns = self, neighbourhood,
#: collective performance.
TASK_WEIGHTS = ((1.0, 1.0, 1.0), (10.0, 1.0, 1.0), (1.0, 10.0, 1.0))

# --- task_order (contradiction 20)
TASK_ORDER_PAPER = 0  # 1 = Keep All, 2 = Distribute All (paper order, model cards, logs; default)
TASK_ORDER_CONFIG_COMMENT = 1  # 1 = Distribute All, 2 = Keep All (ML-Agents config comment)

# --- self_reward_mode (eq. 9, body NOT FOUND)
SELF_REWARD_OWN = 0  # p_i * r_{i->i}: resources the tower keeps for itself (default; fits the logs)
SELF_REWARD_SHARE = 1  # p_i * r_{i->i} / r_distributed: self's share of all support the tower holds
SELF_REWARD_RECEIVED = 2  # p_i * r_distributed: all support the tower holds, from anyone

# --- distance_mode (d1_normalized, NOT FOUND)
DISTANCE_NORMALISED = 0  # d1n = min(d1, d_thresh) / d_thresh (reference's inferred reading; default)
CLOSENESS_NORMALISED = 1  # d1n = 1 - min(d1, d_thresh) / d_thresh

# --- collective_mode (contradiction 21)
COLLECTIVE_ROOT_MEAN_SQUARE = 0  # sqrt(mean(p^2)) = 1 - (1 - sqrt(M)) (default)
COLLECTIVE_ONE_MINUS_RMSE = 1  # 1 - sqrt(mean((1 - p)^2)): the literal "MSE" against perfect performance

# --- support_observation (what "total support held" means, inferred)
SUPPORT_ALLOCATED = 0  # resources this tower has handed out (self + neighbours) / budget (default)
SUPPORT_RECEIVED = 1  # support this tower holds from self and others / its maximum possible


def _f(x: float):
    return struct.field(default_factory=lambda: jnp.float32(x))


def _i(x: int):
    return struct.field(default_factory=lambda: jnp.int32(x))


@struct.dataclass
class WildfireParams:
    """Dynamic parameters: one compiled `step` serves any mix of these under `vmap`.

    Lengths in metres, times in decisions (one decision = one fire step), temperatures in degrees C,
    humidity and overcast in percent.
    """

    task: jax.Array = _i(0)
    terrain_level: jax.Array = _i(1)
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.asarray(TASK_WEIGHTS, jnp.float32))
    max_steps: jax.Array = _i(500)  # Agent.MaxStep (reference §2.2); fire end usually comes first
    task_order: jax.Array = _i(TASK_ORDER_PAPER)

    # --- resources (increment NOT FOUND; budget 1.0 from the task text)
    resource_budget: jax.Array = _f(1.0)  # most a tower can have handed out at once
    resource_step: jax.Array = _f(0.1)  # amount one add/remove action moves
    self_reward_mode: jax.Array = _i(SELF_REWARD_OWN)
    # Each neighbour's resources are counted against an even split of the budget (x3): the only
    # reading under which HIVEX's logs hold (task-0 policies give ~nothing to self, and the
    # Distribute-All neighbour reward is 2.2-2.8x Individual Performance). 1.0 = literal eq. 10.
    neighbour_resource_scale: jax.Array = _f(3.0)
    support_observation: jax.Array = _i(SUPPORT_ALLOCATED)

    # --- tower performance, eq. 6-8 (constants from the paper; normalisation forms inferred)
    distance_threshold: jax.Array = _f(200.0)  # d_thresh
    performance_scale: jax.Array = _f(270.0)  # s of the broken power law
    performance_exponent: jax.Array = _f(5.0)  # a
    performance_distance_scale: jax.Array = _f(1000.0)  # the 1000 in (1000 d'/s)^a
    distance_mode: jax.Array = _i(DISTANCE_NORMALISED)
    collective_mode: jax.Array = _i(COLLECTIVE_ROOT_MEAN_SQUARE)
    observation_radius: jax.Array = _f(10_000.0)  # towers see fire this far (default: whole island)

    # --- island and towers (half-extent inferred from the [-600, 600] observation range)
    island_half_extent: jax.Array = _f(600.0)
    tower_spacing: jax.Array = _f(400.0)
    island_fraction: jax.Array = _f(0.82)  # land up to this fraction of the half-extent (before noise)
    island_falloff: jax.Array = _f(0.2)
    coast_noise: jax.Array = _f(0.5)  # raggedness of the coastline
    beach_width: jax.Array = _f(0.1)  # land-value band above the coastline that is sand (no fuel)
    lake_level: jax.Array = _f(0.1)  # inland valleys whose relief is below this are lakes
    forest_threshold: jax.Array = _f(0.3)  # forest where the forest noise exceeds this
    elevation_per_level: jax.Array = _f(12.0)  # relief amplitude = terrain_level * this (m)

    # --- weather (per-world means drawn uniformly in [min, max]; smooth spatial fields spanning
    #     +- *_variation around them; an island-wide cycle on top)
    temperature_min: jax.Array = _f(18.0)
    temperature_max: jax.Array = _f(36.0)
    temperature_variation: jax.Array = _f(3.0)  # half-range of the spatial field
    lapse_rate: jax.Array = _f(0.0065)  # degrees C per metre of elevation
    humidity_min: jax.Array = _f(15.0)
    humidity_max: jax.Array = _f(60.0)
    humidity_variation: jax.Array = _f(8.0)
    overcast_min: jax.Array = _f(0.0)
    overcast_max: jax.Array = _f(80.0)
    overcast_variation: jax.Array = _f(15.0)
    weather_cycle_period: jax.Array = _f(240.0)  # slow island-wide swing of all three fields
    temperature_cycle_amplitude: jax.Array = _f(3.0)
    humidity_cycle_amplitude: jax.Array = _f(8.0)
    overcast_cycle_amplitude: jax.Array = _f(10.0)
    wind_speed_min: jax.Array = _f(1.0)  # m/s
    wind_speed_max: jax.Array = _f(8.0)
    wind_swing_degrees: jax.Array = _f(25.0)  # main direction swings by this much
    wind_swing_period: jax.Array = _f(300.0)

    # --- fire (model designed; reference: NOT FOUND)
    spread_rate: jax.Array = _f(0.08)  # ignition hazard per burning neighbour per step, reference weather
    diagonal_weight: jax.Array = _f(0.6)  # diagonal neighbours are sqrt(2) further away
    wind_factor: jax.Array = _f(0.12)  # per m/s: hazard x exp(wind_factor * speed * cos(angle))
    slope_factor: jax.Array = _f(2.5)  # per unit rise/run: hazard x exp(slope_factor * slope)
    temperature_factor: jax.Array = _f(0.3)  # per 10 C above the reference
    humidity_factor: jax.Array = _f(0.35)  # per 10 % above the reference (reduces)
    overcast_factor: jax.Array = _f(0.05)  # per 10 % above the reference (reduces)
    reference_temperature: jax.Array = _f(27.0)
    reference_humidity: jax.Array = _f(37.5)
    reference_overcast: jax.Array = _f(40.0)
    burn_duration: jax.Array = _f(16.0)  # mean steps a cell burns (geometric burn-out)
    ignition_radius: jax.Array = _f(60.0)  # fuel within this of the ignition point starts burning
    # Optional coupling (off by default; HIVEX's allocation did not change the fire): the hazard in
    # a tower's influence region is divided by (1 + resource_suppression * support held there).
    resource_suppression: jax.Array = _f(0.0)


def task_weight_row(params: WildfireParams) -> jax.Array:
    """f32[3] weights of `params.task`, honouring `task_order` (contradiction 20)."""
    swapped = jnp.where(params.task == 1, 2, jnp.where(params.task == 2, 1, params.task))
    row = jnp.where(params.task_order == TASK_ORDER_CONFIG_COMMENT, swapped, params.task)
    return params.task_weights[row]


#: Documented bounds of every `WildfireParams` field, inclusive and elementwise (hivex_jax.core.bounds):
#: `make` and `env.validate_params` reject values outside them; `reset`/`step` clamp traced values.
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    "task": (0, len(TASK_NAMES) - 1),
    "terrain_level": (1, 10),
    "task_weights": (-1000.0, 1000.0),
    "max_steps": (1, 1_000_000),
    "task_order": (TASK_ORDER_PAPER, TASK_ORDER_CONFIG_COMMENT),
    # resources
    "resource_budget": (0.01, 100.0),  # > 0: observations divide by it
    "resource_step": (0.0, 100.0),
    "self_reward_mode": (SELF_REWARD_OWN, SELF_REWARD_RECEIVED),
    "neighbour_resource_scale": (0.0, 100.0),
    "support_observation": (SUPPORT_ALLOCATED, SUPPORT_RECEIVED),
    # tower performance
    "distance_threshold": (1.0, 10_000.0),  # > 0: a divisor
    "performance_scale": (1.0, 100_000.0),  # > 0: a divisor
    "performance_exponent": (0.1, 20.0),
    "performance_distance_scale": (0.0, 100_000.0),
    "distance_mode": (DISTANCE_NORMALISED, CLOSENESS_NORMALISED),
    "collective_mode": (COLLECTIVE_ROOT_MEAN_SQUARE, COLLECTIVE_ONE_MINUS_RMSE),
    "observation_radius": (0.0, 100_000.0),
    # island and towers
    "island_half_extent": (100.0, 10_000.0),
    "tower_spacing": (10.0, 2000.0),
    "island_fraction": (0.1, 1.0),
    "island_falloff": (0.01, 1.0),  # > 0: the coast's soft edge divides by it
    "coast_noise": (0.0, 2.0),
    "beach_width": (0.0, 1.0),
    "lake_level": (0.0, 1.0),
    "forest_threshold": (0.0, 1.0),
    "elevation_per_level": (0.0, 100.0),
    # weather (degrees C, percent, m/s, steps)
    "temperature_min": (-30.0, 60.0),
    "temperature_max": (-30.0, 60.0),
    "temperature_variation": (0.0, 30.0),
    "lapse_rate": (0.0, 0.05),
    "humidity_min": (0.0, 100.0),
    "humidity_max": (0.0, 100.0),
    "humidity_variation": (0.0, 50.0),
    "overcast_min": (0.0, 100.0),
    "overcast_max": (0.0, 100.0),
    "overcast_variation": (0.0, 50.0),
    "weather_cycle_period": (1.0, 1_000_000.0),
    "temperature_cycle_amplitude": (0.0, 30.0),
    "humidity_cycle_amplitude": (0.0, 50.0),
    "overcast_cycle_amplitude": (0.0, 50.0),
    "wind_speed_min": (0.0, 40.0),
    "wind_speed_max": (0.0, 40.0),
    "wind_swing_degrees": (0.0, 180.0),
    "wind_swing_period": (1.0, 1_000_000.0),
    # fire
    "spread_rate": (0.0, 1.0),  # a per-neighbour ignition hazard
    "diagonal_weight": (0.0, 1.0),
    "wind_factor": (0.0, 1.0),
    "slope_factor": (0.0, 10.0),
    "temperature_factor": (0.0, 5.0),
    "humidity_factor": (0.0, 5.0),
    "overcast_factor": (0.0, 5.0),
    "reference_temperature": (-30.0, 60.0),
    "reference_humidity": (0.0, 100.0),
    "reference_overcast": (0.0, 100.0),
    "burn_duration": (1.0, 10_000.0),  # mean steps; >= 1 keeps the burn-out probability in [0, 1]
    "ignition_radius": (0.0, 1000.0),
    "resource_suppression": (0.0, 100.0),
}


#: Documented bounds of the numeric static options (constructor / `make` kwargs), inclusive: `make` and the
#: constructor refuse a value outside them before anything is allocated or traced (hivex_jax.core.bounds).
#: (docs/envs/wildfire_resource_management.md). The tower count is not an option: HIVEX has 9 towers.
STATIC_BOUNDS: dict[str, tuple[float, float]] = {
    "fire_resolution": (16, 128),  # a multiple of 8 (fire cells per side of the island)
    "render_size": (16, 512),  # pixels per side of env.render's picture
}
#: options other envs have that this one fixes, with why (`make` says so instead of listing every field)
FIXED_OPTIONS: dict[str, str] = {"num_agents": f"has {NUM_TOWERS} fixed watch towers"}
