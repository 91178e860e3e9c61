import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.wrappers import (
    AutoReset,
    EpisodeStatistics,
    FrameStack,
    PregeneratedWorldPool,
    WorldPool,
    seed_range,
)


@pytest.fixture(scope="module")
def short_wfc():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=2)
    return env, params.replace(max_steps=jnp.int32(5))


def _run(env, params, steps, key=0):
    obs, state = env.reset(jax.random.PRNGKey(key), params)
    noop = env.action_space().noop()
    step = jax.jit(env.step)
    out = []
    for t in range(steps):
        prev_obs = obs
        obs, state, r, term, trunc, info = step(jax.random.PRNGKey(100 + t), state, noop, params)
        out.append((prev_obs, obs, state, r, term, trunc, info))
    return out


def test_autoreset_resets_on_the_done_step_and_keeps_final_obs(short_wfc):
    env, params = short_wfc
    wrapped = AutoReset(env, final_obs=True)
    out = _run(wrapped, params, 7)
    *_, state5, r5, term5, trunc5, info5 = out[4]
    assert bool(info5["done"]) and bool(trunc5.all()) and not bool(term5.any())
    assert int(state5.step) == 0  # fresh episode already
    # the final observation is the one the episode ended on, not the reset one
    assert not np.allclose(info5["final_obs"]["vector"], out[4][1]["vector"])
    assert int(out[5][2].step) == 1 and not bool(out[5][6]["done"])
    # without AutoReset the bare env keeps counting: step never resets
    bare = _run(env, params, 7)
    assert int(bare[6][2].step) == 7


def test_episode_statistics_sums_returns_terms_and_stats(short_wfc):
    env, params = short_wfc
    wrapped = EpisodeStatistics(AutoReset(env))
    out = _run(wrapped, params, 6)
    rewards = np.stack([o[3] for o in out[:5]])
    info5 = out[4][6]
    ep = info5["episode"]
    assert bool(ep["done"]) and int(ep["length"]) == 5
    assert np.allclose(ep["return"], rewards.sum(0), atol=1e-5)
    assert np.allclose(ep["reward_terms"].sum(-1), rewards.sum(0), atol=1e-5)
    assert np.allclose(ep["stats"]["individual_performance"], rewards.sum(0), atol=1e-5)
    assert np.array_equal(ep["active_steps"], [5, 5])
    # the running sums restart: one step into the next episode the recorded episode is unchanged
    assert not bool(out[5][6]["episode"]["done"])
    assert np.allclose(out[5][6]["episode"]["return"], rewards.sum(0), atol=1e-5)
    assert int(out[5][2].running["length"]) == 1


def test_frame_stack_zero_fills_and_shifts(short_wfc):
    env, params = short_wfc
    wrapped = FrameStack(env, {"vector": 3})
    obs0, state = wrapped.reset(jax.random.PRNGKey(0), params)
    assert obs0["vector"].shape == (2, 18)
    assert wrapped.observation_space(params)["vector"].shape == (2, 18)
    assert np.allclose(obs0["vector"][:, :12], 0.0)
    raw0, _ = env.reset(jax.random.PRNGKey(0), params)
    assert np.allclose(obs0["vector"][:, 12:], raw0["vector"])
    obs1, state, *_ = wrapped.step(jax.random.PRNGKey(1), state, env.action_space().noop(), params)
    assert np.allclose(obs1["vector"][:, 6:12], raw0["vector"])  # previous frame moved back
    layout = wrapped.observation_layout()
    assert layout["position"] == slice(12, 14)
    hivex_jax.check_env(wrapped, params, eager=False)


def test_world_pool_draws_only_pool_worlds(short_wfc):
    env, params = short_wfc
    pool = WorldPool(env, "6000:6004")
    assert list(pool.seeds) == [6000, 6001, 6002, 6003]
    reset = jax.jit(pool.reset)
    params8 = env.variant_params(params, level=8)  # random layout: every world differs
    worlds = {
        tuple(np.asarray(env.reset(hivex_jax.world_key(s), params8)[1].facing_angle).round(5))
        for s in range(6000, 6004)
    }
    seen = {
        tuple(np.asarray(reset(jax.random.PRNGKey(k), params8)[1].facing_angle).round(5)) for k in range(24)
    }
    assert seen <= worlds and len(seen) >= 3


def test_pregenerated_pool_gives_the_same_resets_as_world_pool(short_wfc):
    env, params = short_wfc
    params8 = env.variant_params(params, level=8)  # random layout: every world differs
    # 5 seeds with batch_size 2: chunks of 2, 2 and a padded 1 must all land in order
    pooled = PregeneratedWorldPool(env, "6000:6005", params8, batch_size=2)
    plain = WorldPool(env, "6000:6005")
    assert jax.tree.leaves(pooled.pool)[0].shape[0] == 5
    # same key -> same seed index -> the same obs and state, leaf by leaf (floats up to the rounding
    # of a batched build: XLA may fuse the vmapped generator differently)
    pooled_reset, plain_reset = jax.jit(pooled.reset), jax.jit(plain.reset)  # each compiled once
    for k in range(6):
        a = pooled_reset(jax.random.PRNGKey(k), params8)
        b = plain_reset(jax.random.PRNGKey(k), params8)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-6)
    env_reset = jax.jit(env.reset)
    for i, seed in enumerate(range(6000, 6005)):  # pool row i is world seed i's reset
        want = env_reset(hivex_jax.world_key(seed), params8)[1].facing_angle
        np.testing.assert_allclose(np.asarray(pooled.pool[1].facing_angle[i]), np.asarray(want), atol=1e-6)
    with pytest.raises(ValueError, match="MiB"):
        PregeneratedWorldPool(env, "0:1000", params8, max_bytes=1000)


def test_seed_range_parsing():
    assert list(seed_range("1,5,9")) == [1, 5, 9]
    assert list(seed_range(range(3))) == [0, 1, 2]
    with pytest.raises(ValueError):
        seed_range("10:10")
    with pytest.raises(ValueError):
        WorldPool(None, [-1])
