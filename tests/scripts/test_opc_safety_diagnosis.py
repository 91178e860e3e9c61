"""`baselines.studies.opc_safety` (run by scripts/opc_safety_diagnosis.py) lends the scripted controller's
border and vessel rules (and full throttle) to a trained policy exactly where those rules fire, and leaves
every other decision alone."""

import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from baselines.studies import opc_safety
from hivex_jax.envs.ocean_plastic_collection import heuristics


def _obs(positions, forwards, neighbours):
    """Stacked (12-float) observation of 3 vessels that have not moved since the previous frame."""
    frame = jnp.concatenate(
        [jnp.asarray(positions) / 200.0, jnp.asarray(forwards), jnp.asarray(neighbours) / 200.0], axis=-1
    )
    return {"vector": jnp.concatenate([frame, frame], -1), "visual": jnp.zeros((3, 25, 25, 2), jnp.uint8)}


def _idle(params, key, obs, state):
    """A stand-in trained policy: throttle off, no steering, for every vessel."""
    return {"continuous": jnp.zeros((3, 0)), "discrete": jnp.zeros((3, 2), jnp.int32)}


def test_rules_are_lent_only_where_they_fire():
    _, params = hivex_jax.make("OceanPlasticCollection-v0")
    # vessel 0 heads for the east border 10 m away; vessels 1 and 2 sit 8 m apart mid-sea
    obs = _obs(
        [[190.0, 0.0], [0.0, 0.0], [8.0, 0.0]],
        [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]],
        [[0.0, 0.0], [8.0, 0.0], [0.0, 0.0]],
    )
    near_border, threat = (np.asarray(x) for x in heuristics.safety_rules(obs, params))
    assert near_border.tolist() == [True, False, False]
    assert threat.tolist() == [False, True, True]
    scripted = np.asarray(heuristics.scripted_policy(obs, params)["discrete"])
    key = None
    as_trained = np.asarray(opc_safety.lend("as trained", _idle, params)(None, key, obs, None)["discrete"])
    np.testing.assert_array_equal(as_trained, 0)
    vessels = np.asarray(opc_safety.lend("vessels", _idle, params)(None, key, obs, None)["discrete"])
    np.testing.assert_array_equal(vessels[0], [0, 0])  # the border rule is not lent here
    np.testing.assert_array_equal(vessels[1:], scripted[1:])
    safety = np.asarray(opc_safety.lend("safety", _idle, params)(None, key, obs, None)["discrete"])
    np.testing.assert_array_equal(safety, scripted)
    assert safety[0, 1] != 0  # the border rule steers vessel 0 round
    throttle = np.asarray(opc_safety.lend("throttle", _idle, params)(None, key, obs, None)["discrete"])
    np.testing.assert_array_equal(throttle, [[1, 0], [1, 0], [1, 0]])
    both = np.asarray(opc_safety.lend("safety + throttle", _idle, params)(None, key, obs, None)["discrete"])
    np.testing.assert_array_equal(both[:, 1], scripted[:, 1])
    np.testing.assert_array_equal(both[:, 0], 1)
    with pytest.raises(ValueError, match="unknown variant"):
        opc_safety.lend("shield", _idle, params)


def test_rows_are_per_vessel_means_and_fractions_per_seed():
    totals = {  # 2 seeds x 2 worlds x 3 vessels
        "return": np.array([[[10.0, 20.0, 30.0], [10.0, 20.0, 30.0]], [[40.0] * 3, [40.0] * 3]]),
        "stats": {
            "pebbles_collected": np.full((2, 2, 3), 5.0),
            "border_crossings": np.zeros((2, 2, 3)),
            "vessel_collisions": np.array([[[1.0, 1.0, 0.0]] * 2, [[0.0] * 3] * 2]),
        },
    }
    row = opc_safety.cell_row("safety", "greedy", totals, scripted_return=100.0, random_return=-100.0)
    assert row["per_seed_fraction"] == pytest.approx([0.2, 0.4])
    assert row["fraction"] == pytest.approx(0.3)
    assert row["per_seed_normalised"] == pytest.approx([0.6, 0.7]) and row["normalised"] == pytest.approx(
        0.65
    )
    assert row["collided"] == pytest.approx(4 / 12)
    text = opc_safety.table([row])
    assert "| safety | greedy | 30.0 | 0.65 (0.60, 0.70) | 0.30 (0.20, 0.40) | 5.0 | 0.00 | 0.33 |" in text
    # task 3's baselines (scripted -264, random -107): no score of either kind, said as n/a
    upside_down = opc_safety.cell_row(
        "safety", "greedy", totals, scripted_return=-264.0, random_return=-107.0
    )
    assert upside_down["normalised"] is None and upside_down["fraction"] is None
    assert "| safety | greedy | 30.0 | n/a | n/a | 5.0 |" in opc_safety.table([upside_down])
