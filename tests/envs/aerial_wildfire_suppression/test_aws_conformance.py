"""AerialWildfireSuppression-v0 conformance: `check_env` on every task and level, registration and spaces."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from aws_helpers import ENV, PARAMS

import hivex_jax
from hivex_jax.core.check import check_env
from hivex_jax.envs.aerial_wildfire_suppression import AerialWildfireSuppression
from hivex_jax.envs.aerial_wildfire_suppression.params import TASK_WEIGHTS


def test_check_env_default_and_mixed_batch():
    check_env(ENV, PARAMS, eager=False)  # determinism, and one compiled step for all 9 tasks x 10 levels


@pytest.mark.slow  # op-by-op eager execution, ~half of the full check: the jitted checks above stay default
def test_check_env_default_eager_agrees_with_jit():
    check_env(ENV, PARAMS, mixed=False)


@pytest.mark.parametrize("task", range(9))
def test_check_env_every_task(task):
    check_env(ENV, ENV.variant_params(PARAMS, task=task), eager=False, mixed=False)


@pytest.mark.parametrize("level", range(1, 11))
def test_check_env_every_level(level):
    check_env(ENV, ENV.variant_params(PARAMS, level=level), eager=False, mixed=False)


@pytest.mark.slow  # two more full compilations (~1 min each on a busy 2-core CPU)
@pytest.mark.parametrize("num_agents", [1, 12])
def test_check_env_smallest_and_largest_agent_count(num_agents):
    env, params = hivex_jax.make("AerialWildfireSuppression-v0", num_agents=num_agents)
    check_env(env, params, eager=False, mixed=False)


def test_registered_default_and_spaces():
    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    assert env.num_agents == 3 and env.continuous_dims == 1 and env.discrete_branches == (2,)
    space = env.observation_space(params)
    assert space["vector"].shape == (3, 8) and space["visual"].shape == (3, 42, 42, 3)
    assert space["visual"].dtype == jnp.uint8
    assert int(params.max_steps) == 3000
    np.testing.assert_array_equal(np.asarray(params.task_weights), np.asarray(TASK_WEIGHTS))
    with pytest.raises(ValueError):
        AerialWildfireSuppression(num_agents=4)
