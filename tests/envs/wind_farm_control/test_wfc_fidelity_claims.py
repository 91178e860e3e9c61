"""The fidelity table of docs/envs/wind_farm_control.md against the code's defaults.

Each row named below must state the documented value in its "ours" column, and the env's default params
must have that value: the test fails when the docs and the code drift apart.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fidelity_table import STATUSES, fidelity_rows

import hivex_jax
from hivex_jax.envs.wind_farm_control.params import TASK_WEIGHTS

DOC = Path(__file__).resolve().parents[3] / "docs" / "envs" / "wind_farm_control.md"
#: row -> (value as the docs' "ours" column writes it, the default it must equal)
CLAIMS = {
    "agents": ("8", lambda env, p: env.num_agents),
    "episode length": ("4999 decisions", lambda env, p: int(p.max_steps)),
    "rotation per action": ("2.4°", lambda env, p: float(p.rotation_step_degrees)),
    "Generate Energy": (
        "a = 0.1, drag 0.1",
        lambda env, p: (float(p.motor_acceleration), float(p.drag_coefficient)),
    ),
    "θ in eq. 1": ("`theta_mode` = 0", lambda env, p: int(p.theta_mode)),
    "P updates per decision": (
        "`performance_updates_per_step` = 1",
        lambda env, p: int(p.performance_updates_per_step),
    ),
    "observation": ("÷ 1000 m", lambda env, p: float(p.farm_half_extent)),
    "task weights": ("[[1, 0], [0, 1]]", lambda env, p: p.task_weights.tolist()),
}
EXPECTED = {
    "agents": 8,
    "episode length": 4999,
    "rotation per action": 2.4,
    "Generate Energy": (0.1, 0.1),
    "θ in eq. 1": 0,
    "P updates per decision": 1,
    "observation": 1000.0,
    "task weights": [list(r) for r in TASK_WEIGHTS],
}


@pytest.fixture(scope="module")
def rows():
    return fidelity_rows(DOC)


@pytest.fixture(scope="module")
def made():
    return hivex_jax.make("WindFarmControl-v0")


@pytest.mark.parametrize("row", sorted(CLAIMS))
def test_documented_value_is_the_default(rows, made, row):
    env, params = made
    documented, getter = CLAIMS[row]
    assert row in rows, f"fidelity table lost its row {row!r}"
    assert documented in rows[row][1], f"row {row!r}: docs say {rows[row][1]!r}, expected {documented!r}"
    value = getter(env, params)
    expected = EXPECTED[row]
    if isinstance(expected, float):
        assert math.isclose(value, expected, rel_tol=1e-6), (row, value)
    elif isinstance(expected, tuple):
        assert all(math.isclose(v, e, rel_tol=1e-6) for v, e in zip(value, expected, strict=True)), (
            row,
            value,
        )
    else:
        assert value == expected, (row, value)


def test_every_row_states_one_status(rows):
    for name, cells in rows.items():
        status = cells[-1]
        assert any(status.startswith(s) for s in STATUSES), f"row {name!r}: status {status!r}"
