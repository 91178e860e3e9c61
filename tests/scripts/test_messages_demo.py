"""The communication demo's designed task (configs/ippo_wildfire_resource_management_messages.yaml,
`baselines.studies.messages_demo`, run by scripts/messages_demo.py): a tower's performance is ~1 exactly while
it sees fire and ~0.03 otherwise, so one honest bit per neighbour is what routing needs, and a controller that
knows which neighbour sees fire earns far more than one that does not (the headroom a trained channel can
take)."""

import json
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from baselines.config import load_config, make_env
from baselines.studies import messages_demo, messages_report
from hivex_jax.envs.wildfire_resource_management import dynamics, rewards

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "ippo_wildfire_resource_management_messages.yaml"


def test_designed_performance_is_one_bit_fire_in_view():
    _, params = make_env(load_config(str(CONFIG), ["message_vocab=null"]))
    radius = float(params.observation_radius)
    # fire seen anywhere within the view, approaching or not: p = (1 + (1000 * 0.51 / 700)^20)^-1/2 >= 0.999
    previous = jnp.array([150.0, 10.0, 100.0, radius])
    now = jnp.array([100.0, 20.0, 150.0, radius])  # approaching, receding, receding, at the edge
    p_seen = np.asarray(rewards.tower_performance(previous, now, params))
    assert np.all(p_seen > 0.998), p_seen
    # no fire in view reads as far and not approaching: d' = 1, p = (1 + (1000 / 700)^20)^-1/2 = 0.0282
    far = jnp.full(2, dynamics.NO_FIRE_DISTANCE)
    p_none = np.asarray(rewards.tower_performance(far, far, params))
    np.testing.assert_allclose(p_none, (1 + (1000 / 700) ** 20) ** -0.5, rtol=1e-4)
    assert p_none[0] == pytest.approx(0.0282, abs=5e-4)


def test_knowing_which_neighbour_sees_fire_is_worth_much_more_than_the_even_split():
    headroom = messages_demo.headroom("6000:6002", [])
    # measured on worlds 6000-6031: 2931.6 vs 5028.5; on any few worlds the honest bit is worth > 25 %
    assert headroom["to_fire_seen"] > 1.25 * headroom["even"], headroom
    assert headroom["to_best_p"] >= headroom["to_fire_seen"] - 1.0  # p is one bit: nothing more to know


def test_returns_plot_and_table_from_a_result(tmp_path):
    cell = {"mean": 10.0, "ci95": 2.0, "per_seed": [9.0, 10.0, 11.0]}
    result = {
        "worlds": "6000:6003",
        "conditions": {
            "no_messages": {
                "greedy": cell,
                "stochastic": cell,
                "scripted": {"mean": 8.0},
                "random": {"mean": 1.0},
            },
            "messages": {"greedy": {**cell, "mean": 20.0}, "stochastic": cell},
        },
        "differences": {
            "messages - no_messages": {"greedy": {"mean": 10.0, "ci95": 3.0}, "stochastic": cell}
        },
    }
    messages_report.plot_returns(result, tmp_path / "returns.png")
    assert (tmp_path / "returns.png").read_bytes()[:4] == b"\x89PNG"
    text = messages_report.markdown(result)
    assert "| (b) messages (vocab 2) | 20.0 ± 2.0 | 10.0 ± 2.0 | 9.0, 10.0, 11.0 |" in text
    assert "| messages - no_messages | +10.0 ± 3.0 |" in text


def test_table_command_on_a_folder_without_runs(tmp_path):
    """`scripts/messages_demo.py --table` (its own process) on a folder with no finished condition writes
    an empty result and the table's header, and draws no figure."""
    cmd = [sys.executable, str(REPO / "scripts" / "messages_demo.py"), "--table", "--out-dir", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    result = {"worlds": "6000:6032", "conditions": {}, "differences": {}}
    assert json.loads((tmp_path / "messages_demo.json").read_text()) == result
    assert (tmp_path / "messages_demo.md").read_text() == messages_report.markdown(result)
    assert done.stdout == messages_report.markdown(result) + "\n"
    assert not (tmp_path / "messages_demo.png").exists()
