"""The fidelity table of docs/envs/wildfire_resource_management.md says what the code does.

Every number the table states is checked twice: the docs row contains it, and the code's default
equals it, so docs and code cannot drift apart silently. Every row's status is one of the four
allowed forms, and every parameter a status names exists.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fidelity_table import assert_one_status_each, assert_statuses_name_real_parameters, fidelity_rows

import hivex_jax
from baselines.config import load_config
from hivex_jax.envs.wildfire_resource_management import generator, observations
from hivex_jax.envs.wildfire_resource_management import params as wrm_params
from hivex_jax.envs.wildfire_resource_management.env import WildfireResourceManagement
from hivex_jax.envs.wildfire_resource_management.params import WildfireParams, task_weight_row

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "envs" / "wildfire_resource_management.md"
#: The reference's §5 contradictions that concern this env.
CONTRADICTIONS = {19, 20, 21}


@pytest.fixture(scope="module")
def rows() -> dict[str, list[str]]:
    return fidelity_rows(PAGE, "## Fidelity table")


@pytest.fixture(scope="module")
def registered():
    return hivex_jax.make("WildfireResourceManagement-v0")


def test_every_row_has_exactly_one_allowed_status(rows):
    assert_one_status_each(rows, min_rows=30)


def test_named_parameters_exist(rows, registered):
    """Every `name` in a status is a `WildfireParams` field, a static option or a module constant."""
    fields = {f.name for f in dataclasses.fields(WildfireParams)}
    options = set(inspect.signature(WildfireResourceManagement.__init__).parameters) - {"self"}
    constants = set(vars(wrm_params)) | set(vars(observations))
    env = registered[0].env
    assert_statuses_name_real_parameters(
        rows, fields | options | constants, fields | options, CONTRADICTIONS, env=env
    )


def _default(field: str) -> float:
    return float(getattr(WildfireParams(), field))


#: (row, text the row contains, the code's value, the documented value).
CLAIMS = [
    ("agents", "9 towers (`NUM_TOWERS`)", lambda: wrm_params.NUM_TOWERS, 9),
    ("agents", "3 × 3 grid", lambda: wrm_params.TOWER_GRID, 3),
    ("neighbours", "3 nearest", lambda: wrm_params.NUM_NEIGHBOURS, 3),
    ("tower positions", "(−400, 0, 400)² m", lambda: _default("tower_spacing"), 400.0),
    ("tower positions", "`tower_spacing` 400", lambda: _default("tower_spacing"), 400.0),
    ("influence regions", "±200 m", lambda: _default("tower_spacing") / 2, 200.0),
    ("episode cap", "`max_steps` 500", lambda: _default("max_steps"), 500),
    ("vector observation size", "7 × 2 = 14", lambda: observations.VECTOR_SIZE, 7),
    ("fire position", "÷ 600 (`island_half_extent`)", lambda: _default("island_half_extent"), 600.0),
    ("no-fire sentinel", "−1, −1, −1", lambda: observations.NO_FIRE_SENTINEL, -1.0),
    ("what a tower observes", "`observation_radius` 10 km", lambda: _default("observation_radius"), 10_000.0),
    ("weather observation", "÷ 42 / 100 / 100", lambda: observations.WEATHER_RANGE, (42.0, 100.0, 100.0)),
    ("support observation", "`support_observation` 0", lambda: _default("support_observation"), 0),
    ("support observation", "`support_observation` 0", lambda: wrm_params.SUPPORT_ALLOCATED, 0),
    ("action", "4 branches × 3", lambda: wrm_params.NUM_BRANCHES, 4),
    ("budget", "`resource_budget` 1.0", lambda: _default("resource_budget"), 1.0),
    ("resource increment", "`resource_step` 0.1", lambda: _default("resource_step"), 0.1),
    ("terrain level", "relief = level × 12 m", lambda: _default("elevation_per_level"), 12.0),
    ("terrain level", "`elevation_per_level` 12", lambda: _default("elevation_per_level"), 12.0),
    ("island size", "`island_half_extent` 600", lambda: _default("island_half_extent"), 600.0),
    ("temperature, humidity, overcast", "(period 240)", lambda: _default("weather_cycle_period"), 240.0),
    ("wind", "±25°", lambda: _default("wind_swing_degrees"), 25.0),
    ("wind", "(period 300)", lambda: _default("wind_swing_period"), 300.0),
    ("fire spread and burn-out", "`spread_rate` 0.08", lambda: _default("spread_rate"), 0.08),
    ("fire spread and burn-out", "`burn_duration` 16", lambda: _default("burn_duration"), 16.0),
    ("ignition", "within 60 m", lambda: _default("ignition_radius"), 60.0),
    ("ignition", "`ignition_radius` 60", lambda: _default("ignition_radius"), 60.0),
    ("resources affect fire", "`resource_suppression` 0", lambda: _default("resource_suppression"), 0.0),
    ("performance p constants", "`distance_threshold` 200", lambda: _default("distance_threshold"), 200.0),
    ("performance p constants", "`performance_scale` 270", lambda: _default("performance_scale"), 270.0),
    ("performance p constants", "`performance_exponent` 5", lambda: _default("performance_exponent"), 5.0),
    (
        "performance p constants",
        "`performance_distance_scale` 1000",
        lambda: _default("performance_distance_scale"),
        1000.0,
    ),
    ("d1n", "min(d, 200)/200 (`distance_mode` 0)", lambda: _default("distance_mode"), 0),
    ("self reward (eq. 9)", "(`self_reward_mode` 0;", lambda: _default("self_reward_mode"), 0),
    (
        "neighbourhood reward (eq. 10)",
        "3 · Σ_j p_j r_{i→j}",
        lambda: _default("neighbour_resource_scale"),
        3.0,
    ),
    ("collective reward (eq. 11–12)", "`collective_mode` (default 0", lambda: _default("collective_mode"), 0),
    ("task ids", "`task_order` (default 0", lambda: _default("task_order"), 0),
    (
        "task weights",
        "Table 9: (1, 1, 1), (10, 1, 1), (1, 10, 1)",
        lambda: np.asarray(WildfireParams().task_weights).tolist(),
        [[1.0, 1.0, 1.0], [10.0, 1.0, 1.0], [1.0, 10.0, 1.0]],
    ),
    (
        "task weights",
        "`TASK_WEIGHTS`",
        lambda: [list(r) for r in wrm_params.TASK_WEIGHTS],
        [[1, 1, 1], [10, 1, 1], [1, 10, 1]],
    ),
]


@pytest.mark.parametrize(
    ("row", "text", "code_value", "documented"), CLAIMS, ids=[f"{c[0]}: {c[1]}" for c in CLAIMS]
)
def test_documented_value_is_the_code_default(rows, row, text, code_value, documented):
    assert row in rows, f"fidelity table has no row {row!r}"
    assert text in " | ".join(rows[row]), f"row {row!r} no longer says {text!r}"
    np.testing.assert_allclose(
        np.asarray(code_value(), np.float64), np.asarray(documented, np.float64), rtol=1e-6
    )


def test_structural_claims(rows, registered):
    """Stacking, action branches, the centre's tie-broken neighbours and the task-id switch."""
    env, params = registered
    assert "7 × 2 = 14 via `FrameStack`" in rows["vector observation size"][1]
    assert env.observation_space(params)["vector"].shape == (9, 14)
    assert env.action_space(params).discrete_branches == (3, 3, 3, 3)
    assert "centre: 1, 3, 5" in rows["neighbour tie rule"][1]
    assert env.env.neighbours[4].tolist() == [1, 3, 5]
    # task_order 1 swaps Keep All (self x10) and Distribute All (neighbours x10)
    swapped = WildfireParams(task=jnp.int32(1), task_order=jnp.int32(wrm_params.TASK_ORDER_CONFIG_COMMENT))
    assert task_weight_row(swapped).tolist() == [1.0, 10.0, 1.0]
    assert task_weight_row(WildfireParams(task=jnp.int32(1))).tolist() == [10.0, 1.0, 1.0]


def test_seed_pools_match_the_shipped_configs(rows):
    assert "pools train 5000–5999, test 6000–6007" in rows["seeds"][1]
    for algo in ("ippo", "mappo"):
        config = load_config(ROOT / "configs" / f"{algo}_wildfire_resource_management.yaml").to_dict()
        assert (config["train_worlds"], config["test_worlds"]) == ("5000:6000", "6000:6008")


def test_forest_fuel_density_spans_the_documented_range(rows):
    """Fuel density 0.65-1 on forest cells: with neutral weather and spread_rate 1, flammability = fuel."""
    assert "forest fuel density 0.65–1" in rows["terrain generator"][1]
    neutral = WildfireParams(
        spread_rate=jnp.float32(1.0),
        temperature_factor=jnp.float32(0.0),
        humidity_factor=jnp.float32(0.0),
        overcast_factor=jnp.float32(0.0),
    )
    world = jax.jit(generator.generate_world, static_argnums=2)(hivex_jax.world_key(6000), neutral, 32)
    flammability = np.asarray(world["flammability"])
    fuel = flammability[flammability > 0]
    assert fuel.size > 100
    assert fuel.min() >= 0.65 - 1e-6 and fuel.max() <= 1.0 + 1e-6
    assert fuel.min() < 0.70  # the documented lower end is attained, not just a loose bound
