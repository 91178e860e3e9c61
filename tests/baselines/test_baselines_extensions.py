"""The extensions the PPO core calls without knowing them (`baselines.core.extensions`): the config selects
them, the training-reward transforms apply in order (re-weighting, then sharing among the active
agents), and the metric columns a run gains are the ones its auxiliary losses name. Hand-computed;
nothing compiles a trainer."""

import jax.numpy as jnp
import numpy as np
from trainer_fake_env import TINY_CONFIG

from baselines.config import ExtensionsConfig, from_dict, make_env
from baselines.core import extensions
from baselines.core.extensions.teacher import Teacher
from baselines.run.files import METRIC_NAMES, metric_names


def _transform(**changes):
    config = from_dict({**TINY_CONFIG, **changes})
    env, env_params = make_env(config)
    return extensions.training_reward(ExtensionsConfig.of(config), env, env_params)


# one env, 3 agents (the last inactive), 3 terms weighted 1 by the env
RAW_TERMS = jnp.asarray([[[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [5.0, 5.0, 5.0]]])
ACTIVE = jnp.asarray([[True, True, False]])
ENV_REWARD = jnp.sum(RAW_TERMS, axis=-1)  # [[3, 2, 15]]


def test_no_recipe_is_the_env_reward():
    reward = _transform()({"raw_reward_terms": RAW_TERMS}, ENV_REWARD, ACTIVE, jnp.int32(0))
    np.testing.assert_array_equal(reward, ENV_REWARD)


def test_reweighting_then_sharing_by_hand():
    transform = _transform(
        train_reward_weights={"closeness": 3.0},
        train_reward_weights_anneal_updates=2,
        train_reward_sharing=0.5,
    )
    info = {"raw_reward_terms": RAW_TERMS}
    # update 0: closeness weighs 3 -> own rewards 1*3 + 2 = 5 and 0 + 2 = 2 (agent 2 inactive);
    # the active mean is 3.5, so 0.5 * own + 0.5 * 3.5, and 0 for the inactive agent
    np.testing.assert_allclose(transform(info, ENV_REWARD, ACTIVE, jnp.int32(0)), [[4.25, 2.75, 0.0]])
    # update 1: closeness 2 (halfway back to 1) -> own 4 and 2, mean 3
    np.testing.assert_allclose(transform(info, ENV_REWARD, ACTIVE, jnp.int32(1)), [[3.5, 2.5, 0.0]])
    # past the anneal: the env's weights -> own 3 and 2, mean 2.5
    np.testing.assert_allclose(transform(info, ENV_REWARD, ACTIVE, jnp.int32(7)), [[2.75, 2.25, 0.0]])


def test_the_teacher_is_selected_and_names_its_columns():
    assert extensions.auxiliary_loss_types(ExtensionsConfig.of(from_dict(TINY_CONFIG))) == ()
    teacher = from_dict({**TINY_CONFIG, "teacher_coef": 0.5})
    assert extensions.auxiliary_loss_types(ExtensionsConfig.of(teacher)) == (Teacher,)
    assert metric_names(from_dict(TINY_CONFIG)) == METRIC_NAMES
    assert metric_names(teacher) == METRIC_NAMES + ("teacher_loss", "teacher_fraction")
