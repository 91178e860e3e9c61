"""The scripted collector beats the random policy on held-out worlds (main task, HIVEX-length episodes).

Runs the already compiled single-world step of the `opc` fixture in a Python loop (no new compile);
the full table over 1000-decision episodes is scripts/heuristic_ocean_plastic_collection.py.
"""

from __future__ import annotations

import jax
import numpy as np

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import scripted_policy


def test_scripted_policy_beats_random_on_held_out_worlds(opc):
    policy = jax.jit(scripted_policy)
    rng = np.random.default_rng(0)
    totals = {"scripted": [], "random": []}
    collected = {"scripted": [], "random": []}
    for seed in (6000, 6001):
        for name in totals:
            obs, state = opc.reset(hivex_jax.world_key(seed), opc.params)
            ret = pebbles = 0.0
            for t in range(150):  # ~HIVEX's episode length in the main task
                if name == "scripted":
                    action = policy(obs, opc.params)
                else:
                    action = opc.act(rng.integers(0, 2, 3), rng.integers(0, 3, 3))
                obs, state, reward, _, _, info = opc.run(state, action, key=t)
                ret += float(reward.mean())
                pebbles += float(info["stats"]["pebbles_collected"].mean())
            totals[name].append(ret)
            collected[name].append(pebbles)
    assert np.mean(collected["scripted"]) > 5 * max(np.mean(collected["random"]), 1.0)
    assert np.mean(totals["scripted"]) > np.mean(totals["random"]) + 20.0
