"""The fidelity table of docs/envs/drone_based_reforestation.md against the code's defaults.

Each row named below must state the documented value in its "ours" column, and the env's default params
must have that value: the test fails when the docs and the code drift apart.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fidelity_table import STATUSES, fidelity_rows

from hivex_jax.envs.drone_based_reforestation import DroneBasedReforestation
from hivex_jax.envs.drone_based_reforestation.params import (
    FIND_TREE_RADIUS_METRES,
    LANDSCAPE_TERRAIN_HEIGHT,
    STATION_WHERE_TASK_USES_IT,
    TERRAIN_LEVELS_LOGGED,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "envs" / "drone_based_reforestation.md"


def _f(*names):
    return lambda env, p: tuple(float(getattr(p, n)) for n in names)


#: row -> (text in the docs' "ours" column, getter on (env, default params), expected default)
CLAIMS = {
    "agents": ("3", lambda env, p: (env.num_agents,), (3,)),
    "episode length": (
        "399 decisions × 5 physics substeps",
        lambda env, p: (int(p.max_steps), env.physics_substeps),
        (399, 5),
    ),
    "station per task": ("`station_mode` = 0", _f("station_mode"), (STATION_WHERE_TASK_USES_IT,)),
    "vector observation": (
        "÷ 200 horizontally, ÷ 40 vertically",
        _f("position_scale", "height_scale"),
        (200, 40),
    ),
    "speeds, turn/climb rates": (
        "6 m/s, 90°/s, 3 m/s, 0.3 s lag, 0.1 s substeps",
        _f("max_speed", "max_yaw_rate_degrees", "max_climb_rate", "response_seconds", "substep_seconds"),
        (6.0, 90.0, 3.0, 0.3, 0.1),
    ),
    "terrain": (
        "peaks 40 m at levels 2–10, × 1.18 at level 1; hills 70 m → 35 m from level 1 to 10 "
        "(`terrain_level_mode` = 0)",
        _f(
            "terrain_max_height",
            "terrain_level1_height_factor",
            "terrain_length_scale",
            "terrain_level10_length_factor",
            "terrain_level_mode",
        ),
        (40.0, 1.18, 70.0, 0.5, TERRAIN_LEVELS_LOGGED),
    ),
    "battery": (
        "1/2000 (1/1000 with a seed) per substep, +0.05 per decision",
        _f("battery_drain_no_seed", "battery_drain_holding_seed", "recharge_per_decision"),
        (1 / 2000, 1 / 1000, 0.05),
    ),
    "charging radius": ("7.5 m", _f("charge_radius"), (7.5,)),
    "Drop Seed": (
        "2.5, 75, 20, 10, e_w 200",
        _f(
            "drop_min_distance",
            "drop_max_distance",
            "seed_reward_multiplier",
            "distance_reward_multiplier",
            "arena_half_extent",
        ),
        (2.5, 75.0, 20.0, 10.0, 200.0),
    ),
    "reforestation band": ("`drop_max_distance` = 75", _f("drop_max_distance"), (75.0,)),
    "energy terms": (
        "1/2000, 1/1000 per physics step (`energy_penalty_per_substep` = 1)",
        _f("energy_penalty_no_seed", "energy_penalty_holding_seed", "energy_penalty_per_substep"),
        (1 / 2000, 1 / 1000, 1),
    ),
    "Pick-up Seed": ("1, ×100 in task 2", lambda env, p: (float(p.task_weights[2, 3]),), (100.0,)),
    "Incremental Running Back": (
        "r_p = 20",
        _f("running_back_budget", "running_back_increment"),
        (20.0, 2.5),
    ),
    "High Landscape Point Delta": (
        "`landscape_height_mode` = 0",
        _f("landscape_height_mode"),
        (LANDSCAPE_TERRAIN_HEIGHT,),
    ),
    "Far Distance Explored Delta": ("`far_distance_divisor` = 200", _f("far_distance_divisor"), (200.0,)),
    "Find Close Tree": (
        "20 m, once, ends the drone's episode in task 1 (`find_tree_mode` = 0)",
        _f("find_tree_radius", "find_tree_reward", "find_tree_mode"),
        (20.0, 100.0, FIND_TREE_RADIUS_METRES),
    ),
    "Drop Seed subtask bonus": (
        "+100 on any drop",
        _f("drop_success_reward", "drop_success_requires_valid"),
        (100.0, 0),
    ),
    "random start": ("within 120 m", _f("random_spawn_radius"), (120.0,)),
    "Group-up start": ("on a 10 m ring", _f("group_up_spawn_radius"), (10.0,)),
}


@pytest.fixture(scope="module")
def rows():
    return fidelity_rows(DOC)


@pytest.mark.parametrize("row", sorted(CLAIMS))
def test_documented_value_is_the_default(rows, row):
    env = DroneBasedReforestation()
    documented, getter, expected = CLAIMS[row]
    assert row in rows, f"fidelity table lost its row {row!r}"
    assert documented in rows[row][1], f"row {row!r}: docs say {rows[row][1]!r}, expected {documented!r}"
    value = getter(env, env.default_params())
    assert all(math.isclose(v, e, rel_tol=1e-6) for v, e in zip(value, expected, strict=True)), (row, value)


def test_every_row_states_one_status(rows):
    assert len(rows) >= 25
    for name, cells in rows.items():
        assert any(cells[-1].startswith(s) for s in STATUSES), f"row {name!r}: status {cells[-1]!r}"
