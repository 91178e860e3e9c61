"""JaxMARL adapter: JaxMARL's own LogWrapper, jitted and vmapped, against the native API."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxmarl", reason="jaxmarl is not installed (pip install 'hivex-jax[dev]')")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from conftest import MAX_STEPS, fake_env  # noqa: E402
from jaxmarl.wrappers.baselines import LogWrapper  # noqa: E402

import hivex_jax  # noqa: E402
from hivex_jax.interop._common import ActionLayout, host_functions  # noqa: E402
from hivex_jax.interop.jaxmarl import HivexJaxMARLEnv, to_jaxmarl  # noqa: E402

B = 2  # parallel worlds in the vmapped rollouts


def _rollout_fn(env, steps: int):
    """A pure rollout of `env` (a JaxMARL env) driven by given per-agent actions (leading axis T)."""

    def rollout(key, actions):
        k_reset, k_run = jax.random.split(key)
        obs, state = env.reset(k_reset)

        def body(state, xs):
            k, action = xs
            _, k_step = jax.random.split(k)
            obs, state, rewards, dones, infos = env.step(k_step, state, action)
            return state, (rewards, dones, infos)

        return jax.lax.scan(body, state, (jax.random.split(k_run, steps), actions))

    return rollout


def _random_actions(adapter, shape: tuple[int, ...], seed: int = 0) -> dict:
    """Per-agent JaxMARL actions with leading axes `shape`, drawn on the host (randint under jit
    compiles slowly; the spaces' own `sample` is traced by the shape test)."""
    layout = adapter.layout
    rng = np.random.default_rng(seed)
    a, branches = adapter.num_agents, layout.discrete_branches
    native = {
        "continuous": rng.uniform(-1, 1, shape + (a, layout.continuous_dims)).astype(np.float32),
        "discrete": rng.integers(0, np.maximum(branches, 1), shape + (a, len(branches))).astype(np.int32),
    }
    per_agent = layout.from_native(native)
    axis = len(shape)
    return {
        name: jax.tree.map(lambda x, i=i: np.take(x, i, axis=axis), per_agent)
        for i, name in enumerate(adapter.agents)
    }


def _native_rewards(env, params, key, actions, steps: int):
    """The native API with Gym-style auto-reset, keys split exactly as JaxMARL's `step` splits them."""
    native = host_functions(env)
    layout = ActionLayout.of(env, params)
    k_reset, k_run = jax.random.split(key)
    _, state = native["reset"](k_reset, params)
    rewards, dones, returns, running = [], [], [], np.zeros(env.num_agents)
    for t, k in enumerate(jax.random.split(k_run, steps)):
        _, k_step = jax.random.split(k)
        key_step, key_reset = jax.random.split(k_step)
        at_t = jax.tree.map(lambda x, t=t: np.asarray(x[t]), actions)
        action = layout.to_native(at_t, (env.num_agents,))
        _, state, reward, _, _, info = native["step"](key_step, state, action, params)
        running = running + np.asarray(reward)
        rewards.append(np.asarray(reward))
        dones.append(bool(info["done"]))
        if info["done"]:
            returns.append(running)
            running = np.zeros(env.num_agents)
            _, state = native["reset"](key_reset, params)
    return np.stack(rewards), np.asarray(dones), returns


def _check_logwrapper(env, params, steps: int) -> None:
    adapter = to_jaxmarl(env, params)
    wrapped = LogWrapper(adapter)
    keys = jax.random.split(jax.random.PRNGKey(42), B)
    actions = _random_actions(adapter, (B, steps))
    _, (rewards, dones, infos) = jax.jit(jax.vmap(_rollout_fn(wrapped, steps)))(keys, actions)
    agents = adapter.agents
    got = np.stack([np.asarray(rewards[a]) for a in agents], axis=-1)  # [B, T, A]
    for b in range(B):
        per_agent = [jax.tree.map(lambda x, b=b: np.asarray(x[b]), actions[a]) for a in agents]
        stacked = jax.tree.map(lambda *xs: np.stack(xs, axis=1), *per_agent)  # [T, A, ...]
        want, want_done, returns = _native_rewards(env, params, keys[b], stacked, steps)
        np.testing.assert_allclose(got[b], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(dones["__all__"][b]), want_done)
        ends = np.flatnonzero(want_done)
        assert len(ends) >= 1, "an episode must end within the rollout"
        logged = np.asarray(infos["returned_episode_returns"][b])[ends]
        np.testing.assert_allclose(logged, np.stack(returns), rtol=1e-4, atol=1e-4)
        assert np.asarray(infos["returned_episode"][b])[ends].all()
    for leaf in jax.tree.leaves(infos):  # JaxMARL's baselines reshape every info leaf to actors
        assert leaf.shape[2:] == (env.num_agents,), leaf.shape


def test_logwrapper_rollout_matches_native_registered(registered_full):
    env, params = registered_full
    _check_logwrapper(env, params, MAX_STEPS + 5)


def test_logwrapper_rollout_shapes_registered(registered):
    """Every registered env traces through LogWrapper(adapter) under jit/vmap (shapes only, no compile)."""
    env, params = registered
    adapter = to_jaxmarl(env, params, world_state=True)
    keys = jax.random.split(jax.random.PRNGKey(0), B)

    def sample(key):  # the JaxMARL spaces' own sampling, traced under vmap
        ks = jax.random.split(key, adapter.num_agents)
        return {a: adapter.action_space(a).sample(k) for a, k in zip(adapter.agents, ks, strict=True)}

    actions = jax.eval_shape(jax.vmap(jax.vmap(sample)), jnp.stack([keys] * 3, axis=1))
    out = jax.eval_shape(jax.vmap(_rollout_fn(LogWrapper(adapter), 3)), keys, actions)
    _, (rewards, dones, _) = out
    assert set(rewards) == set(adapter.agents) and rewards[adapter.agents[0]].shape == (B, 3)
    assert dones["__all__"].shape == (B, 3)
    obs, _ = jax.eval_shape(adapter.reset, keys[0])
    space = adapter.observation_space(adapter.agents[0])
    assert obs[adapter.agents[0]].shape == space.shape and obs[adapter.agents[0]].dtype == jnp.float32
    assert obs["world_state"].shape == (adapter.num_agents, adapter.world_state_size())


@pytest.mark.parametrize("variant", ["hybrid_visual", "discrete_vector"])
def test_logwrapper_rollout_matches_native_fake(variant):
    env, params = fake_env(variant)  # a Dict action and a scalar Discrete action
    _check_logwrapper(env, params, 10)


def test_observation_formats_and_world_state(fake_hybrid):
    env, params = fake_hybrid
    key = jax.random.PRNGKey(3)
    native_obs, native_state = env.reset(key, params)
    flat = HivexJaxMARLEnv(env, params, world_state=True, world_state_agent_id=True)
    obs, state = flat.reset(key)
    assert flat.observation_space("agent_1").shape == (4 + 6 * 6 * 3,)
    np.testing.assert_allclose(obs["agent_1"][:4], native_obs["vector"][1])
    np.testing.assert_allclose(obs["agent_1"][4:], native_obs["visual"][1].reshape(-1) / 255.0)
    gs = env.global_state(native_state, params)
    assert obs["world_state"].shape == (3, gs.shape[0] + 3) == (3, flat.world_state_size())
    np.testing.assert_allclose(obs["world_state"][2], np.concatenate([gs, [0.0, 0.0, 1.0]]))
    as_dict, _ = HivexJaxMARLEnv(env, params, obs_format="dict").reset(key)
    assert as_dict["agent_0"]["visual"].dtype == jnp.uint8
    vector, _ = HivexJaxMARLEnv(env, params, obs_format="vector").reset(key)
    np.testing.assert_array_equal(vector["agent_2"], native_obs["vector"][2])
    assert flat.name == "InteropFake-v0" and flat.agent_classes == {
        "agent": ["agent_0", "agent_1", "agent_2"]
    }


def test_avail_actions_leave_only_the_noop_to_agents_that_are_out(fake_hybrid):
    env, params = fake_hybrid
    adapter = HivexJaxMARLEnv(env, params)
    _, state = adapter.reset(jax.random.PRNGKey(0))
    act = {a: adapter.action_space(a).sample(jax.random.PRNGKey(i)) for i, a in enumerate(adapter.agents)}
    for t in range(2):
        _, state, _, dones, _ = adapter.step(jax.random.PRNGKey(t), state, act)
    assert bool(dones["agent_0"]) and not bool(dones["agent_1"]) and not bool(dones["__all__"])
    avail = adapter.get_avail_actions(state)
    np.testing.assert_array_equal(avail["agent_0"], [True, False, False, True, False])  # branches (3, 2)
    assert bool(avail["agent_1"].all())


def test_mixed_task_batch_keeps_params_through_auto_reset(fake_hybrid):
    env, params = fake_hybrid
    adapter = HivexJaxMARLEnv(env, params)
    batch = hivex_jax.stack_params([params, params.replace(task=jnp.int32(1))])
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    _, state = jax.vmap(adapter.reset)(keys, batch)
    noop = {
        a: {"continuous": jnp.zeros((2, 2)), "discrete": jnp.zeros((2, 2), jnp.int32)} for a in adapter.agents
    }
    step = jax.jit(jax.vmap(adapter.step))
    for t in range(8):  # the episode ends at step 6 and auto-resets; task 1 must stay doubled
        _, state, rewards, _, _ = step(jax.random.split(jax.random.PRNGKey(t), 2), state, noop)
        if t in (0, 7):
            np.testing.assert_allclose(rewards["agent_2"], [1.0, 2.0])
    np.testing.assert_array_equal(state.params.task, [0, 1])


def test_reset_state_path(fake_hybrid):
    env, params = fake_hybrid
    adapter = HivexJaxMARLEnv(env, params, obs_format="vector")
    obs0, start = adapter.reset(jax.random.PRNGKey(5))
    act = {a: adapter.action_space(a).sample(jax.random.PRNGKey(0)) for a in adapter.agents}
    state = start
    for t in range(6):
        obs, state, _, dones, _ = adapter.step(jax.random.PRNGKey(t), state, act, start)
    assert bool(dones["__all__"])
    np.testing.assert_array_equal(obs["agent_0"], obs0["agent_0"])  # back to the given reset state
    with pytest.raises(ValueError, match="obs_format"):
        HivexJaxMARLEnv(env, params, obs_format="pixels")
