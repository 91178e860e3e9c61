"""PettingZoo ParallelEnv adapter: PettingZoo's own API tests plus the semantics they do not cover."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (pip install 'hivex-jax[interop]')")
pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'hivex-jax[interop]')")

from conftest import MAX_STEPS  # noqa: E402
from interop_fake_env import encode_reward  # noqa: E402
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test  # noqa: E402
from pettingzoo.test.state_test import test_parallel_env as pettingzoo_state_test  # noqa: E402

from hivex_jax.core.registry import world_key  # noqa: E402
from hivex_jax.interop._common import episode_key, host_functions, step_key  # noqa: E402
from hivex_jax.interop.pettingzoo import HivexParallelEnv, aec_env  # noqa: E402


def _run_pettingzoo_suite(env, params, episode_steps: int, render: bool = True) -> None:
    """parallel_api_test (no warnings allowed), the seed test, the state test and a rendered frame."""
    par = HivexParallelEnv(env, params, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(par, num_cycles=episode_steps + 5)
    api_warnings = [str(w.message) for w in caught if "pettingzoo" in w.filename]
    assert not api_warnings, api_warnings
    assert par.agents == [], "the episode must end within max_steps"
    parallel_seed_test(lambda: HivexParallelEnv(env, params), num_cycles=episode_steps + 5)
    pettingzoo_state_test(par, seed=3)
    if render:
        frame = par.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[-1] == 3


def test_pettingzoo_api_registered(registered):
    env, params = registered
    _run_pettingzoo_suite(env, params, MAX_STEPS, render=False)


def test_pettingzoo_render_registered(registered_full):
    env, params = registered_full
    par = HivexParallelEnv(env, params, render_mode="rgb_array")
    par.reset(seed=0)
    frame = par.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[-1] == 3


def test_pettingzoo_api_fake(fake):
    env, params = fake
    _run_pettingzoo_suite(env, params, int(params.max_steps))


def test_pettingzoo_aec_api_fake(fake_hybrid):
    env, params = fake_hybrid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test warns about optional AEC features we do not claim
        api_test(aec_env(env, params), num_cycles=20)


def test_spaces_are_gymnasium_dicts_for_hybrid_and_visual(fake_hybrid):
    import gymnasium

    env, params = fake_hybrid
    par = HivexParallelEnv(env, params)
    obs_space = par.observation_space("agent_0")
    assert isinstance(obs_space, gymnasium.spaces.Dict)
    assert obs_space["vector"].shape == (4,) and obs_space["visual"].dtype == np.uint8
    act_space = par.action_space("agent_1")
    assert isinstance(act_space, gymnasium.spaces.Dict)
    assert act_space["continuous"].shape == (2,)
    assert list(act_space["discrete"].nvec) == [3, 2]
    assert par.observation_space("agent_0") is par.observation_space("agent_0")
    assert par.action_space("agent_0") is not par.action_space("agent_1")  # seeded per agent
    with pytest.raises(KeyError, match="agent_9"):
        par.action_space("agent_9")


def test_agents_leave_when_they_finish_and_rewards_decode_the_actions(fake_hybrid):
    env, params = fake_hybrid
    par = HivexParallelEnv(env, params)
    obs, infos = par.reset(seed=11)
    assert set(obs) == {"agent_0", "agent_1", "agent_2"} and infos["agent_0"]["world_seed"] == 11
    assert obs["agent_0"]["visual"].shape == (6, 6, 3) and obs["agent_0"]["visual"].dtype == np.uint8
    rng = np.random.default_rng(0)
    history = []
    while par.agents:
        acting = list(par.agents)
        actions = {
            a: {"continuous": rng.uniform(-1, 1, 2).astype(np.float32), "discrete": rng.integers(0, [3, 2])}
            for a in acting
        }
        obs, rewards, terms, truncs, infos = par.step(actions)
        assert set(obs) == set(rewards) == set(terms) == set(truncs) == set(infos) == set(acting)
        for a in acting:
            expected = encode_reward(actions[a]["continuous"], actions[a]["discrete"], (3, 2))
            np.testing.assert_allclose(rewards[a], expected, rtol=1e-6)
            assert infos[a]["active"] is True
        history.append((acting, {a for a in acting if terms[a]}, {a for a in acting if truncs[a]}))
    # agent_0 out on step 2, agent_1 on step 5, agent_2 truncated at max_steps = 6
    everyone, two = ["agent_0", "agent_1", "agent_2"], ["agent_1", "agent_2"]
    assert [h[0] for h in history] == [everyone] * 2 + [two] * 3 + [["agent_2"]]
    assert history[1][1] == {"agent_0"} and history[4][1] == {"agent_1"}
    assert history[5][1] == set() and history[5][2] == {"agent_2"}
    with pytest.raises(RuntimeError, match="reset"):
        par.step({})


def test_trajectory_matches_the_native_api(fake_hybrid):
    """Same world seed and actions: observations, rewards and state() equal the native step's."""
    env, params = fake_hybrid
    par = HivexParallelEnv(env, params)
    seed = 5
    obs, _ = par.reset(seed=seed)
    native = host_functions(env)  # the env's own jitted reset/step (compiled once, shared)
    native_obs, state = native["reset"](world_key(seed), params)
    np.testing.assert_array_equal(obs["agent_2"]["visual"], native_obs["visual"][2])
    ep_key = episode_key(seed)
    noop = env.action_space(params).noop()
    for t in range(3):
        obs, rewards, *_ = par.step({})  # missing actions are the no-op
        native_obs, state, reward, *_ = native["step"](step_key(ep_key, t), state, noop, params)
        live = [a for a in ("agent_0", "agent_1", "agent_2") if a in rewards]
        for a in live:
            i = int(a[-1])
            np.testing.assert_array_equal(obs[a]["vector"], native_obs["vector"][i])
            assert rewards[a] == pytest.approx(float(reward[i]))
            assert rewards[a] == pytest.approx(1.0)  # encode_reward of the no-op
        np.testing.assert_allclose(par.state(), env.global_state(state, params), rtol=1e-6)


def test_seeds_name_worlds(fake_hybrid):
    env, params = fake_hybrid
    par = HivexParallelEnv(env, params)
    a, _ = par.reset(seed=1)
    b, _ = par.reset(seed=1)
    c, _ = par.reset(seed=2)
    np.testing.assert_array_equal(a["agent_0"]["vector"], b["agent_0"]["vector"])
    assert not np.array_equal(a["agent_0"]["vector"], c["agent_0"]["vector"])
    par.reset(seed=9)
    first = [par.reset()[1]["agent_0"]["world_seed"] for _ in range(2)]
    par.reset(seed=9)
    again = [par.reset()[1]["agent_0"]["world_seed"] for _ in range(2)]
    assert first == again and first[0] != first[1]


def test_render_needs_render_mode(fake_hybrid):
    env, params = fake_hybrid
    par = HivexParallelEnv(env, params)
    par.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert par.render() is None
    frame = HivexParallelEnv(env, params, render_mode="rgb_array")
    frame.reset(seed=0)
    assert frame.render().shape == (12, 12, 3)
    with pytest.raises(ValueError, match="render_mode"):
        HivexParallelEnv(env, params, render_mode="human")
