"""Held-out evaluation rollouts: totals match a step-by-step reference, stop at the episode's end,
are deterministic per key, and batch over policy parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TinyEnv
from trainer_fake_env import scripted_policy as tiny_scripted

import hivex_jax
from hivex_jax.eval import Evaluator, evaluate, find_scripted_policy, random_policy, summarize_totals
from hivex_jax.eval.rollout import scripted_policy

pytestmark = pytest.mark.timeout(120)


def _reference_return(env, params, policy, world, key, num_steps):
    """Python loop: sum rewards until the episode is done, same keys as the evaluator."""
    obs, state = env.reset(hivex_jax.world_key(world), params)
    key = jax.random.fold_in(key, world)
    step = jax.jit(env.step)
    total = np.zeros(env.num_agents)
    for t in range(num_steps):
        k_act, k_env = jax.random.split(jax.random.fold_in(key, t))
        obs, state, reward, _, _, info = step(k_env, state, policy(None, k_act, obs, state), params)
        total += np.asarray(reward)
        if bool(info["done"]):
            return total, t + 1
    return total, num_steps


def test_totals_match_a_step_by_step_reference_and_stop_at_done():
    env = TinyEnv()
    params = env.default_params()
    policy = random_policy(env)
    key = jax.random.PRNGKey(7)
    out = evaluate(env, params, policy, "10:12", key=key, num_steps=20)  # episodes last <= 12 steps
    assert out["return"].shape == (2, 3) and out["reward_terms"].shape == (2, 3, 3)
    for i, world in enumerate(range(10, 12)):
        ref, length = _reference_return(env, params, policy, world, key, 20)
        np.testing.assert_allclose(out["return"][i], ref, rtol=1e-5, atol=1e-5)
        assert int(out["length"][i]) == length <= 12
    np.testing.assert_allclose(out["reward_terms"].sum(-1), out["return"], rtol=1e-5, atol=1e-5)
    assert set(out["stats"]) == {"distance"}
    # same key, same numbers; another key, other numbers
    ev = Evaluator(env, params, policy, "10:12", key=key, num_steps=20)
    np.testing.assert_array_equal(ev()["return"], out["return"])
    other = Evaluator(env, params, policy, "10:12", key=jax.random.PRNGKey(8), num_steps=20)()
    assert not np.array_equal(other["return"], out["return"])


def test_batched_over_policy_parameters():
    env = TinyEnv()
    params = env.default_params()

    def gain_policy(gain, key, obs, state):  # move towards the goal with a parameterised gain
        action = tiny_scripted(obs, params)
        return dict(action, continuous=jnp.clip(gain * action["continuous"], -1, 1))

    ev = Evaluator(env, params, gain_policy, [1, 2, 3], key=0, num_steps=12, batched=True)
    out = ev(jnp.array([0.0, 1.0]))
    assert out["return"].shape == (2, 3, 3)
    single = Evaluator(env, params, gain_policy, [1, 2, 3], key=0, num_steps=12)(jnp.float32(1.0))
    np.testing.assert_allclose(out["return"][1], single["return"], rtol=1e-6)
    assert out["return"][1].mean() > out["return"][0].mean()  # moving to the goal pays
    summary = summarize_totals(single, env.reward_term_names)
    assert len(summary["return"]) == 3 and set(summary["reward_terms"]) == set(env.reward_term_names)


def test_scripted_policies_are_found():
    env, params = hivex_jax.make("WindFarmControl-v0")
    from hivex_jax.envs.wind_farm_control import scripted_policy as wfc_scripted

    assert find_scripted_policy(env) is wfc_scripted
    assert find_scripted_policy(TinyEnv()) is tiny_scripted
    assert scripted_policy(TinyEnv(), TinyEnv().default_params()) is not None


def test_wind_farm_scripted_beats_random_on_test_worlds():
    env, params = hivex_jax.make("WindFarmControl-v0")
    policies = (scripted_policy(env, params), random_policy(env))

    def either(index, key, obs, state):  # one compiled program for both policies
        actions = [p(None, key, obs, state) for p in policies]
        return jax.tree.map(lambda a, b: jnp.where(index == 0, a, b), *actions)

    out = evaluate(env, params, either, "6000:6002", jnp.arange(2), num_steps=300, batched=True)
    scripted, rand = out["return"][0], out["return"][1]
    assert scripted.mean() > 1.5 * rand.mean()
    assert (out["length"] == 300).all()
