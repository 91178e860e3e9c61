"""A JaxMARL env behind the hivex_jax API (`hivex_jax.make("jaxmarl/<name>")`): the contract, the same
numbers as JaxMARL's own `step_env`, truncation at the time limit, action mapping, and the trainer."""

from __future__ import annotations

import numpy as np
import pytest

jaxmarl = pytest.importorskip("jaxmarl", reason="jaxmarl is not installed (pip install 'hivex-jax[dev]')")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import hivex_jax  # noqa: E402

pytestmark = pytest.mark.timeout(300)
SPREAD = "jaxmarl/MPE_simple_spread_v3"


def test_conformance_and_shapes():
    env, params = hivex_jax.make(SPREAD)
    assert (env.num_agents, env.obs_dim, env.discrete_branches, env.continuous_dims) == (3, 18, (5,), 0)
    assert int(params.max_steps) == 25
    hivex_jax.check_env(env, params, eager=False)  # eager: JaxMARL's own code, op by op (slow, not ours)


def test_steps_equal_jaxmarl_step_env_and_the_time_limit_truncates():
    env, params = hivex_jax.make(SPREAD)
    inner = jaxmarl.make("MPE_simple_spread_v3")
    key = jax.random.PRNGKey(3)
    obs, state = env.reset(key, params)
    ref_obs, ref_state = inner.reset(key)
    np.testing.assert_array_equal(obs["vector"], jnp.stack([ref_obs[a] for a in inner.agents]))
    step = jax.jit(env.step)
    for t in range(25):
        k = jax.random.fold_in(key, t)
        choice = jax.random.randint(k, (3, 1), 0, 5)
        obs, state, reward, terminated, truncated, info = step(k, state, {"discrete": choice}, params)
        ref_obs, ref_state, ref_reward, ref_done, _ = inner.step_env(
            k, ref_state, {a: choice[i, 0] for i, a in enumerate(inner.agents)}
        )
        np.testing.assert_allclose(obs["vector"], jnp.stack([ref_obs[a] for a in inner.agents]), rtol=1e-6)
        np.testing.assert_allclose(reward, jnp.stack([ref_reward[a] for a in inner.agents]), rtol=1e-6)
        np.testing.assert_allclose(info["reward_terms"][:, 0], reward)
        # MPE's only end is its time limit: a truncation (bootstrap), never a termination. MPE raises
        # done when its counter is already at max_steps (after 26 steps); here episodes last 25.
        assert not bool(terminated.any())
        assert bool(truncated.all()) == (t == 24) and not bool(ref_done["__all__"])
    assert env.global_state(state, params).shape == (3 * 18,)


def test_continuous_actions_map_minus_one_one_onto_the_box():
    env, params = hivex_jax.make(SPREAD, action_type="Continuous")
    inner = env.inner
    assert env.continuous_dims == 5 and env.discrete_branches == ()
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key, params)
    action = jnp.tile(jnp.asarray([-1.0, -0.5, 0.0, 0.5, 1.0]), (3, 1))
    obs, *_ = env.step(key, state, {"continuous": action}, params)
    low, high = (
        np.asarray(inner.action_space(inner.agents[0]).low),
        np.asarray(inner.action_space(inner.agents[0]).high),
    )
    box = low + (np.asarray(action[0]) + 1) / 2 * (high - low)
    ref_obs, *_ = inner.step_env(key, state.inner, {a: jnp.asarray(box) for a in inner.agents})
    np.testing.assert_allclose(obs["vector"][1], ref_obs[inner.agents[1]], rtol=1e-6)


def test_shorter_observations_are_zero_padded_and_bad_options_fail():
    env, params = hivex_jax.make("jaxmarl/MPE_simple_adversary_v3")
    obs, _ = env.reset(jax.random.PRNGKey(0), params)
    sizes = env.obs_sizes.tolist()
    assert obs["vector"].shape == (env.num_agents, max(sizes)) and min(sizes) < max(sizes)
    short = sizes.index(min(sizes))
    assert not np.asarray(obs["vector"][short, min(sizes) :]).any()
    with pytest.raises(ValueError, match="one task"):
        hivex_jax.make(SPREAD, task=1)
    env, params = hivex_jax.make(SPREAD, max_steps=10, num_agents=4)
    assert env.num_agents == 4 and int(params.max_steps) == 10


@pytest.mark.slow
def test_the_bundled_trainer_runs_on_it():
    from baselines.config import load_config
    from baselines.run.population import get_population

    config = load_config(
        "configs/ippo_jaxmarl_mpe_simple_spread.yaml",
        [
            "num_seeds=1",
            "num_envs=4",
            "num_steps=16",
            "chunk_updates=2",
            "total_env_steps=128",
            "hidden_sizes=[16]",
        ],
    )
    population = get_population(config)
    state, raw = population.chunk(population.init())
    assert raw["step_reward"].shape == (1, 2) and np.isfinite(raw["step_reward"]).all()
    assert raw["episodes"].sum() > 0  # 16-step rollouts of 25-step episodes: episodes end inside chunks
