"""AerialWildfireSuppression-v0 scripted controller: it beats random actions on a held-out world."""

from __future__ import annotations

import jax
import numpy as np
from aws_helpers import ENV, PARAMS, POLICY, RESET, SAMPLE, STEP

import hivex_jax


def test_scripted_policy_beats_random_on_a_held_out_world():
    p = ENV.variant_params(PARAMS, level=5)
    returns = {}
    for policy in ("heuristic", "random"):
        obs, s = RESET(hivex_jax.world_key(6000), p)
        total = np.zeros(3)
        for k in jax.random.split(jax.random.PRNGKey(0), 400):
            k1, k2 = jax.random.split(k)
            a = POLICY(obs, p) if policy == "heuristic" else SAMPLE(k1)
            obs, s, r, *_ = STEP(k2, s, a, p)
            total += np.asarray(r)
        returns[policy] = total.mean()
    assert returns["heuristic"] > returns["random"] + 100.0, returns
