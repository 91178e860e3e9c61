"""The fidelity table of docs/envs/ocean_plastic_collection.md against the code's defaults.

Each row named below must state the documented value in its "ours" column, and the env's default params
must have that value: the test fails when the docs and the code drift apart.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fidelity_table import STATUSES, fidelity_rows

from hivex_jax.envs.ocean_plastic_collection import OceanPlasticCollection
from hivex_jax.envs.ocean_plastic_collection.params import LOWEST_OVER_ACTIVE_VESSELS

DOC = Path(__file__).resolve().parents[3] / "docs" / "envs" / "ocean_plastic_collection.md"
#: row -> (text in the docs' "ours" column, getter on (env, default params), expected default)
CLAIMS = {
    "agents": ("3", lambda env, p: env.num_agents, 3),
    "episode length": (
        "1000 decisions of 5 physics sub-steps",
        lambda env, p: (int(p.max_steps), env.physics_substeps),
        (1000, 5),
    ),
    "sea": ("200 m", lambda env, p: float(p.sea_half_extent), 200.0),
    "vessel dynamics": (
        "thrust 0.04, drag 5 % / 30 % sideways, 2° per sub-step",
        lambda env, p: (
            float(p.thrust),
            float(p.forward_drag),
            float(p.lateral_drag),
            float(p.turn_rate_degrees),
        ),
        (0.04, 0.05, 0.3, 2.0),
    ),
    "vessel size / collision": ("hull radius 2.5 m", lambda env, p: float(p.vessel_radius), 2.5),
    "pebble count, respawn": ("256", lambda env, p: (env.num_pebbles, int(p.respawn_collected)), (256, 1)),
    "pebble contact": ("within 3 m", lambda env, p: float(p.collect_radius), 3.0),
    "Collect Trash": ("+1 per pebble", lambda env, p: float(p.collect_trash_reward), 1.0),
    "Global Lowest Trash Collected": (
        "0.01 × min of cumulative counts over the vessels still in the episode",
        lambda env, p: (float(p.lowest_collected_factor), int(p.lowest_collected_mode)),
        (0.01, LOWEST_OVER_ACTIVE_VESSELS),
    ),
    "Crossed Border": ("−100", lambda env, p: float(p.crossed_border_reward), -100.0),
    "Collided with Other Vessel": ("−100", lambda env, p: float(p.vessel_collision_reward), -100.0),
    "Close to Other Vessel": (
        "+1 within 10 m",
        lambda env, p: (float(p.close_vessel_reward), float(p.close_vessel_distance)),
        (1.0, 10.0),
    ),
    "Nearby Trash Count Delta": (
        "previous step, 25 m",
        lambda env, p: (int(p.nearby_trash_mode), float(p.nearby_trash_distance)),
        (0, 25.0),
    ),
    "Collide with Trash": ("−1 once per decision", lambda env, p: float(p.trash_collision_reward), -1.0),
}


def _close(value, expected) -> bool:
    if isinstance(expected, tuple):
        return all(_close(v, e) for v, e in zip(value, expected, strict=True))
    return math.isclose(value, expected, rel_tol=1e-6)


@pytest.fixture(scope="module")
def rows():
    return fidelity_rows(DOC)


@pytest.mark.parametrize("row", sorted(CLAIMS))
def test_documented_value_is_the_default(rows, row):
    env = OceanPlasticCollection()
    documented, getter, expected = CLAIMS[row]
    assert row in rows, f"fidelity table lost its row {row!r}"
    assert documented in rows[row][1], f"row {row!r}: docs say {rows[row][1]!r}, expected {documented!r}"
    value = getter(env, env.default_params())
    assert _close(value, expected), (row, value, expected)


def test_every_row_states_one_status(rows):
    assert len(rows) >= 20
    for name, cells in rows.items():
        assert any(cells[-1].startswith(s) for s in STATUSES), f"row {name!r}: status {cells[-1]!r}"
