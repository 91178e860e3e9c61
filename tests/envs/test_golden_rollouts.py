"""Every env replays its recorded fixed-key rollouts (`hivex_jax.eval.golden`, recorded by
`scripts/golden_rollouts.py`): behaviour does not change by accident. A deliberate change re-records with
`python scripts/golden_rollouts.py --write`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hivex_jax
from hivex_jax.eval import golden

RECORDED = json.loads((Path(__file__).resolve().parent / "golden_rollouts.json").read_text())


def test_every_bundled_env_is_recorded():
    # the bundled envs, not the registry: other test files register their own small envs in this process
    from hivex_jax.envs import BUNDLED_ENV_IDS

    assert set(BUNDLED_ENV_IDS) == set(RECORDED)
    assert set(RECORDED) <= set(hivex_jax.registered_envs())


@pytest.mark.parametrize("env_id", sorted(RECORDED))
def test_rollouts_match_the_recording(env_id):
    now = golden.fingerprint(env_id)
    then = RECORDED[env_id]
    assert now["variants"] == then["variants"]
    for name in ("reward", "obs_mean", "terminated"):
        # float32 sums of the same program: equal on one machine; a small tolerance for other CPUs / XLA
        np.testing.assert_allclose(
            np.asarray(now[name]), np.asarray(then[name]), rtol=1e-4, atol=1e-5, err_msg=f"{env_id} {name}"
        )
