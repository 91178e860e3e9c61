"""`baselines.studies.opc_critic` (run by scripts/opc_critic_diagnosis.py) reads the critic's value before
each -100 event and by distance to the nearest vessel from trainer trajectories; hand-built arrays here."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from baselines.studies import opc_critic

REPO = Path(__file__).resolve().parents[2]


def _frame(position, neighbour, forward=(1.0, 0.0)):
    """One 6-float observation frame (positions in metres, scaled by the 200 m half extent)."""
    return np.concatenate([np.asarray(position) / 200.0, forward, np.asarray(neighbour) / 200.0])


def test_neighbour_gap_reads_the_newest_frame_and_marks_no_neighbour():
    old = _frame([0.0, 0.0], [100.0, 0.0])
    vector = np.stack(
        [
            np.concatenate([old, _frame([10.0, 20.0], [13.0, 24.0])]),  # 5 m apart now (3-4-5)
            np.concatenate([old, _frame([50.0, 50.0], [50.0, 50.0])]),  # no other vessel present
        ]
    )
    gap = opc_critic.neighbour_gap(vector, 200.0)
    assert gap[0] == pytest.approx(5.0, rel=1e-5)
    assert np.isnan(gap[1])
    # approach_features: 12 floats per frame, the standard 6 first (the approach ones must not be read)
    wide = np.stack([np.concatenate([f[:6], np.full(6, 9.0), f[6:], np.full(6, 9.0)]) for f in vector])
    np.testing.assert_allclose(opc_critic.neighbour_gap(wide, 200.0, frame_width=12), gap, rtol=1e-6)


def _trajectory(t=30):
    """[T, 1 env, 2 agents]: agent 0 collides at t=20 after closing 4 m per decision; agent 1 crosses the
    border at t=25 far from anyone; V falls by 1 per decision before the collision."""
    value = np.full((t, 1, 2), 8.0)
    reward = np.zeros((t, 1, 2))
    active = np.ones((t, 1, 2), bool)
    gap = np.full((t, 1, 2), 100.0)
    for k in range(opc_critic.LAGS):
        gap[20 - k, 0, 0] = 6.0 + 4.0 * k
        value[20 - k, 0, 0] = -k  # k decisions before: V = -k (a made-up profile)
    reward[20, 0, 0] = -100.0
    active[21:, 0, 0] = False  # out after the collision
    reward[25, 0, 1] = -100.0
    return value, reward, active, gap


def test_event_profiles_split_collisions_from_border_crossings_and_read_back_in_time():
    value, reward, active, gap = _trajectory()
    profiles = opc_critic.event_profiles(value, reward, active, gap)
    assert profiles["collision"]["count"] == 1 and profiles["border"]["count"] == 1
    np.testing.assert_allclose(profiles["collision"]["value"], -np.arange(opc_critic.LAGS))
    np.testing.assert_allclose(profiles["collision"]["gap"], 6.0 + 4.0 * np.arange(opc_critic.LAGS))
    np.testing.assert_allclose(profiles["border"]["value"], 8.0)
    # an event too early to have a full window, and one whose window reaches an earlier episode, are skipped
    reward[5, 0, 1] = -100.0
    active[16, 0, 1] = False
    profiles = opc_critic.event_profiles(value, reward, active, gap)
    assert profiles["border"]["count"] == 0
    assert np.all(np.isnan(profiles["border"]["value"]))


def test_gap_bins_average_value_and_target_of_active_decisions_with_a_neighbour():
    value = np.array([1.0, 3.0, 5.0, 7.0, 100.0, 100.0])
    target = np.array([-10.0, -30.0, 2.0, 4.0, 100.0, 100.0])
    gap = np.array([2.0, 8.0, 15.0, 50.0, np.nan, 3.0])
    active = np.array([True, True, True, True, True, False])  # the last one is out, the fifth alone
    rows = opc_critic.gap_bins(value, target, active, gap)
    assert [(r["low"], r["count"]) for r in rows] == [(0.0, 2), (10.0, 1), (20.0, 0), (40.0, 1)]
    assert rows[0]["value"] == pytest.approx(2.0) and rows[0]["target"] == pytest.approx(-20.0)
    assert np.isnan(rows[2]["value"])
    text = opc_critic.table(
        {"events": opc_critic.event_profiles(*_trajectory()), "bins": rows, "decisions": 5}
    )
    assert "| collision: V | 1 | 0.0 | -1.0 |" in text
    assert "| 0-10 m | 2 | 2.0 | -20.0 |" in text


def test_script_refuses_a_bad_rollout_count_in_one_line():
    cmd = [sys.executable, str(REPO / "scripts" / "opc_critic_diagnosis.py"), "nowhere", "--rollouts", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2
    assert "--rollouts must be >= 1" in done.stderr


def test_table_shows_each_value_head_beside_the_whole_critic():
    value, reward, active, gap = _trajectory()
    rows = opc_critic.gap_bins(
        value[..., 0].ravel(), value[..., 0].ravel(), active[..., 0].ravel(), gap[..., 0].ravel()
    )
    head = {"events": opc_critic.event_profiles(value / 2, reward, active, gap), "bins": rows}
    result = {"events": opc_critic.event_profiles(value, reward, active, gap), "bins": rows, "decisions": 5}
    text = opc_critic.table({**result, "heads": {"collided_with_other_vessel": head}})
    assert "| collision: V of head collided_with_other_vessel | | 0.0 | -0.5 |" in text
    assert "head collided_with_other_vessel |" in text.split("| nearest vessel")[1]
