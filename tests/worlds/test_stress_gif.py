"""The run's episode GIF plays in the evaluation's worlds: with `test_worlds=stress` it resets into the
first stress world, not the plain world of the same seed."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from baselines.config import from_dict, make_env
from baselines.run import runner
from baselines.run.evaluation import get_evaluation
from baselines.run.population import get_population
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds.stress import with_stress_worlds

pytestmark = pytest.mark.timeout(600)
TINY_STRESS = {  # no training, no rollout: only which env and world the GIF code is handed
    "algo": "ippo",
    "env_id": "WildfireResourceManagement-v0",
    "train_worlds": "5000:5002",
    "test_worlds": "stress",
    "pregenerate_worlds": False,
    "num_seeds": 1,
    "num_envs": 2,
    "num_steps": 4,
    "total_env_steps": 8,
    "chunk_updates": 1,
    "update_epochs": 1,
    "num_minibatches": 1,
    "hidden_sizes": [8],
    "eval_every": 0,
    "gif_frames": 2,
    "gif_stride": 1,
}


def test_stress_pool_gif_resets_into_the_first_stress_world(tmp_path, monkeypatch):
    config = from_dict(TINY_STRESS)
    population = get_population(config)
    evaluation = get_evaluation(population, config.test_worlds)
    assert int(evaluation.worlds[0]) == 9000
    # only the GIF's world is under test: no evaluation episodes, plots or frames
    monkeypatch.setattr(evaluation, "full", lambda params, trained=None: {})
    monkeypatch.setattr(runner, "write_eval_files", lambda *args: None)
    handed = {}

    def fake_frames(env, env_params, policy, policy_params, world_seed, *args):
        handed.update(env=env, env_params=env_params, world=world_seed)
        return np.zeros((2, 4, 4, 3), np.uint8)

    monkeypatch.setattr("hivex_jax.eval.gif.episode_frames", fake_frames)
    monkeypatch.setattr("hivex_jax.eval.gif.write_gif", lambda path, frames: handed.update(path=path))
    state = types.SimpleNamespace(params=jnp.zeros((config.num_seeds, 1)))  # the GIF takes seed 0's
    runner.final_evaluation(tmp_path, config, population, evaluation, state)
    assert handed["path"] == tmp_path / "episode.gif" and handed["world"] == 9000

    env, params = make_env(config)  # the run's env: plain worlds
    stress_env = with_stress_worlds(env)

    @jax.jit  # one program: XLA shares the three resets' common world generation
    def reset_states(key):  # WRM's stress worlds need not show in the first observation: states
        return [
            jax.tree.leaves(e.reset(key, p)[1])
            for e, p in ((handed["env"], handed["env_params"]), (stress_env, params), (env, params))
        ]

    gif, stress, plain = reset_states(world_key(9000))
    assert all(np.array_equal(a, b) for a, b in zip(gif, stress, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(gif, plain, strict=True))  # the check can fail
