"""`train_env_params`: EnvParams overrides that training rollouts play and evaluation does not (e.g. the
main job's 500-decision training episodes); bad fields are refused in one line before compiling."""

import jax
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import ConfigError, from_dict, validate_env
from baselines.ppo import make_train


def _episode_lengths(**changes) -> tuple:
    """(train, lengths of the episodes that ended in one 8-step rollout of 4 envs)."""
    train = make_train(from_dict({**TINY_CONFIG, **changes}))
    _, (_, episode) = jax.jit(train.rollout)(train.init(jax.random.key(0)))
    episode = jax.device_get(episode)
    return train, episode["length"][episode["done"]]


def test_training_plays_the_override_and_evaluation_keeps_the_envs_params():
    train, lengths = _episode_lengths(train_env_params={"max_steps": 3})
    assert int(train.train_params.max_steps) == 3
    assert int(train.env_params.max_steps) == 12  # what held-out evaluation plays (TinyParams' default)
    # 8 steps of 3-step episodes: every env ends two (agents leaving the box can end one sooner)
    assert len(lengths) >= 2 * 4 and np.all(lengths <= 3)

    train, lengths = _episode_lengths()
    assert train.train_params is train.env_params
    assert len(lengths) == 0  # 12-step episodes: none ends within the first 8 steps unless all leave
    assert np.all(lengths <= 12)


def test_override_goes_on_top_of_env_params():
    train = make_train(
        from_dict({**TINY_CONFIG, "env_params": {"max_steps": 7}, "train_env_params": {"max_steps": 4}})
    )
    assert (int(train.train_params.max_steps), int(train.env_params.max_steps)) == (4, 7)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"max_stepz": 3}, r"train_env_params \{'max_stepz': 3\}: .*unknown option.*max_steps"),
        ({"max_steps": "many"}, r"train_env_params \{'max_steps': 'many'\}: "),
        ({"num_agents": 2}, r"train_env_params takes EnvParams fields only; \['num_agents'\] are static"),
        ({"task": 0}, r"train_env_params cannot set the task"),
    ],
)
def test_bad_fields_are_refused_in_one_line(override, message):
    with pytest.raises(ConfigError, match=message) as caught:
        validate_env(from_dict({**TINY_CONFIG, "train_env_params": override}))
    assert "\n" not in str(caught.value)
