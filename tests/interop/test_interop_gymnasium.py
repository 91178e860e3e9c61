"""Gymnasium adapters: `check_env` on the one-agent view; the vector view against the native API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'hivex-jax[interop]')")

import jax  # noqa: E402
from conftest import MAX_STEPS  # noqa: E402
from gymnasium.utils.env_checker import check_env as gymnasium_check_env  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from interop_fake_env import FakeEnv, encode_reward  # noqa: E402

import hivex_jax  # noqa: E402
from hivex_jax.core.registry import spec  # noqa: E402
from hivex_jax.interop._common import ActionLayout, HostSession, episode_key, next_world_seed  # noqa: E402
from hivex_jax.interop.gymnasium import HivexGymEnv, HivexVectorEnv, register_envs  # noqa: E402

W = 2  # worlds per vector env in these tests


def _assert_close(x, y):
    """Equal up to float rounding: a vmapped program may round differently from an unbatched one."""
    np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=1e-5, atol=1e-5)


def _leaves(obs):
    return [obs[k] for k in sorted(obs)] if isinstance(obs, dict) else [obs]


def _sub_obs(obs, i):
    return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


# ================================================================================ one-agent view
def _check_single(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gymnasium_check_env(env.unwrapped, skip_close_check=False)
    problems = [str(w.message) for w in caught if "spec" not in str(w.message)]
    assert not problems, problems


def test_gymnasium_check_env_fake_single_agent():
    env = FakeEnv(num_agents=1)
    _check_single(HivexGymEnv(env, env.default_params(), render_mode="rgb_array"))


def test_gymnasium_check_env_registered_single_agent(registered_full):
    env, _ = registered_full
    if "num_agents" not in getattr(spec(env.env_id).factory(), "static_options", ()):
        pytest.skip(f"{env.env_id} has a fixed agent count (no one-agent configuration)")
    register_envs()
    made = gym.make(f"hivex_jax/{env.env_id}", num_agents=1, max_steps=MAX_STEPS, render_mode="rgb_array")
    assert isinstance(made.unwrapped, HivexGymEnv) and made.unwrapped.spec is not None
    _check_single(made)  # with a spec, check_env also re-makes the env per render mode


def test_single_agent_view_refuses_several_agents(fake_hybrid):
    env, params = fake_hybrid
    with pytest.raises(ValueError, match="HivexVectorEnv"):
        HivexGymEnv(env, params)


def test_single_agent_episode_and_reward(fake_hybrid):
    env = FakeEnv(num_agents=1)
    single = HivexGymEnv(env, env.default_params())
    obs, info = single.reset(seed=4)
    assert obs["visual"].shape == (6, 6, 3) and info["world_seed"] == 4
    action = {"continuous": np.array([0.5, -1.0], np.float32), "discrete": np.array([2, 1])}
    _, reward, terminated, truncated, info = single.step(action)
    assert reward == pytest.approx(float(encode_reward(action["continuous"], action["discrete"], (3, 2))))
    _, _, terminated, truncated, _ = single.step(action)
    assert terminated and not truncated  # the only agent goes out on step 2
    assert set(info) >= {"active", "reward_terms", "stats", "world_seed"}


# ================================================================================ vector view
def _reference_check(env, params, steps: int, seed: int, mode: str = "next_step") -> int:
    """Step a vector env and a HostSession per world (same keys); compare everything. Returns resets seen."""
    vec = HivexVectorEnv(env, params, num_worlds=W, autoreset_mode=mode)
    a = env.num_agents
    layout = ActionLayout.of(env, params)
    obs, info = vec.reset(seed=seed)
    refs = [HostSession(env, params) for _ in range(W)]
    for w, ref in enumerate(refs):
        first = ref.reset(seed + w)
        got = obs if isinstance(obs, dict) else {next(iter(first)): obs}
        for k in first:
            _assert_close(got[k][w * a : (w + 1) * a], first[k])
    alive = np.ones((W, a), bool)
    reset_next = np.zeros(W, bool)
    vec.action_space.seed(seed)
    resets = 0
    for _ in range(steps):
        actions = vec.action_space.sample()
        native = layout.to_native(actions, (W, a))
        obs, reward, term, trunc, info = vec.step(actions)
        for w, ref in enumerate(refs):
            sl = slice(w * a, (w + 1) * a)
            if reset_next[w] and mode == "next_step":
                new_seed = int(next_world_seed(episode_key(ref.world_seed)))
                expect_obs = ref.reset(new_seed)
                np.testing.assert_array_equal(reward[sl], 0.0)
                assert not term[sl].any() and not trunc[sl].any()
                assert not info["_active"][sl].any()
                assert (info["world_seed"][sl] == new_seed).all()
                alive[w], reset_next[w] = True, False
                resets += 1
            else:
                r_obs, r_rew, r_term, r_trunc, _, done = ref.step({k: v[w] for k, v in native.items()})
                np.testing.assert_allclose(reward[sl], r_rew, rtol=1e-6, atol=1e-6)
                np.testing.assert_array_equal(term[sl], (r_term & alive[w]) | (done & ~alive[w]))
                np.testing.assert_array_equal(trunc[sl], r_trunc & alive[w])
                np.testing.assert_array_equal(info["active"][sl], alive[w])
                expect_obs = r_obs
                alive[w] &= ~r_term
                if done and mode == "same_step":
                    for i in range(a):
                        final = _leaves(info["final_obs"][w * a + i])
                        for x, y in zip(final, _leaves(_sub_obs(r_obs, i)), strict=True):
                            _assert_close(x, y)
                    new_seed = int(next_world_seed(episode_key(ref.world_seed)))
                    expect_obs = ref.reset(new_seed)
                    alive[w] = True
                    resets += 1
                else:
                    reset_next[w] = done
            got = obs if isinstance(obs, dict) else {next(iter(expect_obs)): obs}
            for k in expect_obs:
                _assert_close(got[k][sl], expect_obs[k])
    assert vec._fns["step"]._cache_size() == 1, "the vector step must compile once"
    return resets


def test_vector_env_matches_native_registered(registered_full):
    env, params = registered_full
    resets = _reference_check(env, params, steps=MAX_STEPS + 2, seed=100)
    assert resets >= W  # every world ended within max_steps and was reset on the next step


def test_vector_env_shapes_registered(registered):
    """Every registered env traces through the vector step (shapes only, nothing compiled)."""
    env, params = registered
    vec = HivexVectorEnv(env, params, num_worlds=W)
    a = env.num_agents
    placeholder = vec._fns["placeholder"](params, W)
    noop = vec.layout.to_native(vec.layout.noop((W, a)), (W, a))
    seeds = np.zeros(W, np.uint32)
    _, out = jax.eval_shape(vec._fns["step"], placeholder, noop, params, seeds, np.ones(W, bool))
    obs = out["obs"]  # the native parts, flattened to sub-environments
    single = vec.single_observation_space
    parts = single.spaces if isinstance(single, gym.spaces.Dict) else {"vector": single}
    assert set(obs) == set(parts)
    for key, space in parts.items():
        assert obs[key].shape == (W * a,) + space.shape and obs[key].dtype == space.dtype
    assert out["reward"].shape == out["terminated"].shape == (W * a,)
    assert all(leaf.shape[0] == W * a for leaf in jax.tree.leaves(out["info"]))
    sample = vec.action_space.sample()
    assert vec.action_space.contains(sample)
    vec.layout.to_native(sample, (W, a))  # the batched Gymnasium action converts


def test_vector_env_matches_native_fake(fake):
    env, params = fake
    assert _reference_check(env, params, steps=15, seed=7) >= 2 * W


def test_vector_env_same_step_matches_native_fake(fake_hybrid):
    env, params = fake_hybrid
    assert _reference_check(env, params, steps=15, seed=7, mode="same_step") >= 2 * W


def test_vector_next_step_semantics_by_hand(fake_hybrid):
    """Agents out on steps 2 and 5, time up at 6: flags, rewards and waiting episodes, written out."""
    env, params = fake_hybrid
    vec = HivexVectorEnv(env, params, num_worlds=W)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert vec.num_envs == 6 and isinstance(vec.single_action_space, gym.spaces.Dict)
    vec.reset(seed=3)
    action = {"continuous": np.full((6, 2), 0.5, np.float32), "discrete": np.tile([1, 1], (6, 1))}
    paid = float(encode_reward(action["continuous"][0], action["discrete"][0], (3, 2)))
    expected = [  # (terminated per agent, truncated per agent, which agents are paid)
        ("FFF", "FFF", "TTT"),
        ("TFF", "FFF", "TTT"),  # step 2: agent 0 out
        ("FFF", "FFF", "FTT"),  # agent 0 waits (reward 0, inactive)
        ("FFF", "FFF", "FTT"),
        ("FTF", "FFF", "FTT"),  # step 5: agent 1 out
        ("TTF", "FFT", "FFT"),  # step 6: world ends: waiting episodes end, agent 2 truncated
        ("FFF", "FFF", "FFF"),  # next-step reset: reward 0, no flags
        ("FFF", "FFF", "TTT"),  # the new world runs
    ]
    seeds_before = None
    for t, (term_s, trunc_s, paid_s) in enumerate(expected, start=1):
        obs, reward, term, trunc, info = vec.step(action)
        flag = lambda s: np.tile([c == "T" for c in s], W)  # noqa: E731
        np.testing.assert_array_equal(term, flag(term_s), err_msg=f"terminated at step {t}")
        np.testing.assert_array_equal(trunc, flag(trunc_s), err_msg=f"truncated at step {t}")
        np.testing.assert_allclose(reward, np.where(flag(paid_s), paid, 0.0), rtol=1e-6)
        if t == 6:
            seeds_before = info["world_seed"].copy()
        if t == 7:
            assert (info["world_seed"] != seeds_before).all()
            assert obs["vector"][:, 2].max() == 0.0  # time feature: a fresh episode


def test_vector_same_step_final_obs(fake_hybrid):
    env, params = fake_hybrid
    vec = HivexVectorEnv(env, params, num_worlds=W, autoreset_mode="same_step")
    assert vec.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    vec.reset(seed=3)
    noop = vec.layout.noop((6,))
    for t in range(1, 7):
        obs, reward, term, trunc, info = vec.step(noop)
        done = term | trunc
        np.testing.assert_array_equal(info["_final_obs"], done)
        if t == 2:
            assert done.tolist() == [True, False, False] * W
            np.testing.assert_array_equal(info["final_obs"][0]["vector"], obs["vector"][0])
            assert info["final_info"]["active"][0] and not info["_active"][0]
        if t == 6:
            assert done.all()
            assert info["final_obs"][2]["vector"][2] == pytest.approx(1.0)  # the last obs: time is up
            assert obs["vector"][:, 2].max() == 0.0  # already the next world's first obs


def test_vector_mixed_task_batch_and_jax_arrays(fake_hybrid):
    env, params = fake_hybrid
    batch = hivex_jax.stack_params([params, params.replace(task=np.int32(1))])
    vec = HivexVectorEnv(env, batch, arrays="jax")
    assert vec.num_worlds == 2 and vec.metadata["jax"]
    obs, _ = vec.reset(seed=0)
    assert isinstance(obs["vector"], jax.Array)
    _, reward, *_ = vec.step(jax.tree.map(np.asarray, vec.layout.noop((6,))))
    assert isinstance(reward, jax.Array)
    np.testing.assert_allclose(np.asarray(reward), [1.0] * 3 + [2.0] * 3)  # task 1 doubles the weights
    frames = HivexVectorEnv(env, batch, render_mode="rgb_array")
    frames.reset(seed=0)
    assert len(frames.render()) == 2 and frames.global_state().shape == (2, 3 * 2 + 3 + 1)


def test_vector_env_works_with_gymnasium_wrappers(fake_hybrid):
    env, params = fake_hybrid
    vec = gym.wrappers.vector.RecordEpisodeStatistics(HivexVectorEnv(env, params, num_worlds=W))
    vec.reset(seed=1)
    noop = vec.unwrapped.layout.noop((6,))
    episodes = {}
    for _ in range(6):
        *_, info = vec.step(noop)
        if "episode" in info:
            for i in np.flatnonzero(info["_episode"]):
                episodes.setdefault(int(i), (float(info["episode"]["r"][i]), int(info["episode"]["l"][i])))
    assert episodes[0] == (2.0, 2) and episodes[2] == (6.0, 6)  # agent 0: out on step 2; agent 2: full


def test_make_vec_through_the_gymnasium_registry(registered):
    env, params = registered
    ids = register_envs()
    assert f"hivex_jax/{env.env_id}" in ids and len(ids) == len(hivex_jax.registered_envs())
    vec = gym.make_vec(
        f"hivex_jax/{env.env_id}",
        num_envs=W * env.num_agents,
        vectorization_mode="vector_entry_point",
        max_steps=MAX_STEPS,
    )
    assert isinstance(vec, HivexVectorEnv) and vec.num_worlds == W
    with pytest.raises(ValueError, match="multiple"):
        HivexVectorEnv(env, params, num_envs=W * env.num_agents + 1)
