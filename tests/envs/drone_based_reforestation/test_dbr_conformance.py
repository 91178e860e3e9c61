"""API conformance (check_env) for every task and terrain level and for 1 and 12 drones."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import hivex_jax
from hivex_jax.core.check import check_env
from hivex_jax.envs.drone_based_reforestation import DroneBasedReforestation


def test_check_env_default_and_mixed_batch(env):
    # jit: spaces, determinism, seeds, and one vmapped batch mixing all 8 tasks x 10 levels
    check_env(env, env.default_params(), eager=False)


@pytest.mark.slow  # op-by-op eager execution, ~40% of the full check: the jitted checks above stay default
def test_check_env_default_eager_agrees_with_jit(env):
    check_env(env, env.default_params(), mixed=False)


@pytest.mark.parametrize("task", range(8))
def test_check_env_every_task(env, task):
    check_env(
        env, env.variant_params(env.default_params(), task=task, level=1 + task), eager=False, mixed=False
    )


@pytest.mark.parametrize("level", range(1, 11))
def test_check_env_every_level(env, level):
    check_env(env, env.variant_params(env.default_params(), level=level), eager=False, mixed=False)


@pytest.mark.slow  # two more env objects to compile (~1 min on an idle 2-core CPU); run with -m slow
@pytest.mark.parametrize("num_agents", [1, 12])
def test_check_env_agent_counts(num_agents):
    env = DroneBasedReforestation(num_agents=num_agents)
    check_env(env, env.default_params(), eager=False, mixed=False)


def test_registered_default_stacks_the_vector():
    env, params = hivex_jax.make("DroneBasedReforestation-v0")
    space = env.observation_space(params)
    assert space["vector"].shape == (3, 20)  # 10 x 2 stacked (HIVEX)
    assert space["visual"].shape == (3, 16, 16, 1) and space["visual"].dtype == jnp.uint8
    assert env.action_space(params).continuous_dims == 3 and env.action_space(params).discrete_branches == (
        2,
    )
    assert int(params.max_steps) == 399  # HIVEX logs 399 decisions in tasks 4 and 5 (reference §3.3)
    assert env.observation_layout()["energy"] == slice(19, 20)


def test_static_option_validation():
    with pytest.raises(ValueError, match="num_agents"):
        DroneBasedReforestation(num_agents=4)
    with pytest.raises(ValueError, match="camera_size"):
        DroneBasedReforestation(camera_size=24)
    env, _ = hivex_jax.make(
        "DroneBasedReforestation-v0", num_agents=6, camera_size=32, task=3, terrain_level=9
    )
    assert env.observation_space()["visual"].shape == (6, 32, 32, 1)
