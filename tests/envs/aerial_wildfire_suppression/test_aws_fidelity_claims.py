"""The fidelity table of docs/envs/aerial_wildfire_suppression.md says what the code does.

Every number the table states is checked twice: the docs row contains it, and the code's default
equals it, so docs and code cannot drift apart silently. Every row's status is one of the four
allowed forms, and every parameter a status names exists. No env is compiled.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest
from fidelity_table import assert_one_status_each, assert_statuses_name_real_parameters, fidelity_rows

import hivex_jax
from baselines.config import load_config
from hivex_jax.envs.aerial_wildfire_suppression import observations
from hivex_jax.envs.aerial_wildfire_suppression import params as aws_params
from hivex_jax.envs.aerial_wildfire_suppression.env import AerialWildfireSuppression
from hivex_jax.envs.aerial_wildfire_suppression.generator import island_half_extent
from hivex_jax.envs.aerial_wildfire_suppression.params import AerialWildfireParams

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "envs" / "aerial_wildfire_suppression.md"
#: The reference's §5 contradictions that concern this env.
CONTRADICTIONS = {11, 12, 13, 14, 15, 16, 17}


@pytest.fixture(scope="module")
def rows() -> dict[str, list[str]]:
    return fidelity_rows(PAGE, "## Fidelity")


def _option(name: str):
    """Default of a static (constructor) option."""
    return inspect.signature(AerialWildfireSuppression.__init__).parameters[name].default


def test_every_row_has_exactly_one_allowed_status(rows):
    assert_one_status_each(rows, min_rows=40)


def test_named_parameters_exist(rows):
    """Every `name` in a status is an `AerialWildfireParams` field, a static option or a constant."""
    fields = {f.name for f in dataclasses.fields(AerialWildfireParams)}
    options = set(inspect.signature(AerialWildfireSuppression.__init__).parameters) - {"self"}
    constants = set(vars(aws_params)) | set(vars(observations))
    assert_statuses_name_real_parameters(rows, fields | options | constants, fields | options, CONTRADICTIONS)


def _default(field: str) -> float:
    return float(getattr(AerialWildfireParams(), field))


#: (row, text the row contains, the code's value, the documented value).
CLAIMS = [
    ("agents", "`num_agents` 3", lambda: _option("num_agents"), 3),
    (
        "scalability counts",
        "∈ (1, 2, 3, 6, 9, 12)",
        lambda: aws_params.SUPPORTED_AGENT_COUNTS,
        (1, 2, 3, 6, 9, 12),
    ),
    ("episode length", "`max_steps` 3000", lambda: _default("max_steps"), 3000),
    ("vector observation", "the same 8 floats", lambda: _option("vector_size"), 8),
    ("vector observation", "the same 8 floats", lambda: observations.VECTOR_SIZE, 8),
    ("vector observation", "÷ 750", lambda: _default("border_half_extent"), 750.0),
    ("camera channels", "(`camera_size` 42)", lambda: _option("camera_size"), 42),
    ("camera channels", "default 3", lambda: _option("camera_channels"), 3),
    (
        "camera footprint and content",
        "`camera_ground_size` 420",
        lambda: _default("camera_ground_size"),
        420.0,
    ),
    ("9th vector entry in a printed sample", "8 values", lambda: _option("vector_size"), 8),
    (
        "9th vector entry in a printed sample",
        "forward = heading at reset",
        lambda: _default("forward_zero_at_reset"),
        0,
    ),
    ("turn rate", "`turn_rate_degrees` 15", lambda: _default("turn_rate_degrees"), 15.0),
    ("speed, altitude", "`plane_speed` 10", lambda: _default("plane_speed"), 10.0),
    ("spawn position", "`spawn_half_width` 450", lambda: _default("spawn_half_width"), 450.0),
    ("spawn position", "\\|x\\| ≤ 450", lambda: _default("spawn_half_width"), 450.0),
    (
        "spawn position",
        "`spawn_heading_spread_degrees` 30",
        lambda: _default("spawn_heading_spread_degrees"),
        30.0,
    ),
    ("border, island", "`border_half_extent` 750", lambda: _default("border_half_extent"), 750.0),
    ("border, island", "750 − 150 = 600", lambda: float(island_half_extent(AerialWildfireParams())), 600.0),
    ("water girdle", "default 150", lambda: _default("water_girdle_width"), 150.0),
    ("pick-up zone", "default 0", lambda: _default("pickup_zone_mode"), aws_params.PICKUP_INTENDED),
    ("terrain scale and generator", "relief = level × 20 m", lambda: _default("relief_per_level"), 20.0),
    ("terrain scale and generator", "`relief_per_level` 20", lambda: _default("relief_per_level"), 20.0),
    ("lakes, forest", "85 % forest", lambda: _default("forest_density"), 0.85),
    ("lakes, forest", "`forest_density` 0.85", lambda: _default("forest_density"), 0.85),
    (
        "village placement",
        "(400, −400)",
        lambda: (_default("village_x"), _default("village_z")),
        (400.0, -400.0),
    ),
    ("village placement", "`village_x` 400, `village_z` −400", lambda: _default("village_x"), 400.0),
    ("village placement", "fixed by default", lambda: _default("random_village_location"), 0),
    ("village size", "`village_radius` 50", lambda: _default("village_radius"), 50.0),
    ("fire spread and burn-out", "`spread_probability` 0.02", lambda: _default("spread_probability"), 0.02),
    ("fire spread and burn-out", "`burn_duration` 150", lambda: _default("burn_duration"), 150.0),
    ("wet duration", "`wet_duration` 400", lambda: _default("wet_duration"), 400.0),
    ("ignition", "`num_ignitions` 1", lambda: _default("num_ignitions"), 1),
    ("ignition", "`ignition_radius` 20", lambda: _default("ignition_radius"), 20.0),
    (
        "ignition",
        "`min_ignition_village_distance` 350",
        lambda: _default("min_ignition_village_distance"),
        350.0,
    ),
    ("drop footprint", "`drop_radius` 110", lambda: _default("drop_radius"), 110.0),
    ("pick-up event", "`pickup_requires_empty_tank` 0", lambda: _default("pickup_requires_empty_tank"), 0),
    ("Crossed Border", "`crash_reward` −100", lambda: _default("crash_reward"), -100.0),
    ("Pick-up Water", "+1 and −1/3000 per step", lambda: _default("water_pickup_reward"), 1.0),
    ("Pick-up Water", "+1 and −1/3000 per step", lambda: _default("water_pickup_step_penalty"), 1.0 / 3000.0),
    ("Fire Out value", "`fire_out_reward` +10", lambda: _default("fire_out_reward"), 10.0),
    ("Fire Out: once or every step", "`fire_out_mode` 0", lambda: _default("fire_out_mode"), 0),
    ("Fire Out: once or every step", "`fire_out_mode` 0", lambda: aws_params.ONCE_PER_EPISODE, 0),
    ("Too Close to Village", "`too_close_reward` −50", lambda: _default("too_close_reward"), -50.0),
    (
        "Too Close to Village",
        "`village_danger_distance` 150",
        lambda: _default("village_danger_distance"),
        150.0,
    ),
    (
        "Too Close to Village: once or every step",
        "`village_penalty_mode` 1 = every step",
        lambda: aws_params.EVERY_STEP,
        1,
    ),
    (
        "Too Close to Village: once or every step",
        "once per episode",
        lambda: _default("village_penalty_mode"),
        0,
    ),
    ("Time Step Burning", "−0.01 while some tree burns", lambda: _default("time_step_burning_reward"), -0.01),
    (
        "Time Step Burning",
        "(default 0 = ∃",
        lambda: _default("time_step_burning_mode"),
        aws_params.ANY_TREE_BURNING,
    ),
    ("Find Fire / Find Village", "+100 within 150", lambda: _default("find_fire_reward"), 100.0),
    ("Find Fire / Find Village", "+100 within 150", lambda: _default("find_village_reward"), 100.0),
    ("Find Fire / Find Village", "+100 within 150", lambda: _default("find_fire_distance"), 150.0),
    ("Find Fire / Find Village", "+100 within 150", lambda: _default("find_village_distance"), 150.0),
    ("Extinguishing Tree", "`extinguish_reward` +5", lambda: _default("extinguish_reward"), 5.0),
    ("Preparing Tree", "`prepare_reward` +1", lambda: _default("prepare_reward"), 1.0),
    ("Preparing Tree", "re-wetting a wet tree does not count", lambda: _default("count_rewetting"), 0),
    ("fire out ends the episode", "no by default", lambda: _default("end_episode_on_fire_out"), 0),
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


def test_task_weight_table_and_spaces(rows):
    """`TASK_WEIGHTS` is the default weight table (9 tasks x 9 terms); uint8 RGB camera, hybrid action."""
    assert "`TASK_WEIGHTS` (rows = task ids 0–8)" in rows["task weight table"][1]
    weights = np.asarray(AerialWildfireParams().task_weights)
    assert weights.shape == (len(aws_params.TASK_NAMES), len(aws_params.REWARD_TERM_NAMES)) == (9, 9)
    np.testing.assert_array_equal(weights, np.asarray(aws_params.TASK_WEIGHTS))
    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    assert "uint8 0–255" in rows["camera encoding"][1]
    visual = env.observation_space(params)["visual"]
    assert visual.shape == (3, 42, 42, 3) and np.dtype(visual.dtype) == np.uint8
    action = env.action_space(params)
    assert (action.continuous_dims, action.discrete_branches) == (1, (2,))


def test_evaluation_worlds_match_the_shipped_configs(rows):
    assert "evaluation on worlds 6000.." in rows["seeds"][1]
    for algo in ("ippo", "mappo"):
        config = load_config(ROOT / "configs" / f"{algo}_aerial_wildfire_suppression.yaml").to_dict()
        assert config["test_worlds"].startswith("6000:")
