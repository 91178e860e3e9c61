"""The message channel (`MessageChannel`, `make(message_dims=|message_vocab=)`): layouts, exact delivery,
the lossy/noisy channel's statistics, dead senders, the env part untouched, jit/vmap, adapters."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.envs.wildfire_resource_management import generator as wrm_generator
from hivex_jax.wrappers import MessageChannel
from hivex_jax.wrappers.messages import all_others_senders

WRM = "WildfireResourceManagement-v0"
WFC = "WindFarmControl-v0"
VOCAB = 4
DIMS = 2


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def wrm():
    """The plain WRM env, the same env object in a vocab-4 channel, params, and jitted steps of both."""
    env, params = hivex_jax.make(WRM, max_steps=8)
    wrapped = MessageChannel(env, message_vocab=VOCAB)
    return {
        "env": env,
        "wrapped": wrapped,
        "params": params,
        "reset": jax.jit(env.reset),  # the wrapper's state is the env's: its reset is tested on WFC
        "step": jax.jit(env.step),
        "wstep": jax.jit(wrapped.step),
    }


@pytest.fixture(scope="module")
def wfc():
    """WFC with 4 turbines in a 2-dim continuous channel (slots: the 3 others)."""
    env, params = hivex_jax.make(WFC, num_agents=4, message_dims=DIMS, max_steps=8)
    return {"env": env, "params": params, "step": jax.jit(env.step), "reset": jax.jit(env.reset)}


def _discrete_action(wrapped, env_part, symbols):
    return {
        "continuous": jnp.zeros((wrapped.num_agents, 0), jnp.float32),
        "discrete": jnp.concatenate([env_part, jnp.asarray(symbols, jnp.int32)[:, None]], axis=1),
    }


# ------------------------------------------------------------------------------------------ make
def test_make_without_options_adds_no_wrapper():
    env, _ = hivex_jax.make(WFC)
    assert type(env).__name__ == "WindFarmControl"
    env, _ = hivex_jax.make(WRM)
    assert type(env).__name__ == "FrameStack"


def test_make_puts_the_channel_outside_frame_stacking_and_world_wrappers():
    env, _ = hivex_jax.make(WRM, stress_worlds="all", message_vocab=4)
    assert isinstance(env, MessageChannel)
    assert type(env.env).__name__ == "FrameStack" and type(env.env.env).__name__ == "StressWorlds"
    np.testing.assert_array_equal(env.senders, wrm_generator.neighbour_table())  # read through them


@pytest.mark.parametrize(
    "options, words",
    [
        ({"message_dims": 2, "message_vocab": 4}, ["message_dims", "message_vocab"]),
        ({"message_dims": 0}, ["message_dims", "0"]),
        ({"message_dims": 17}, ["message_dims", "17"]),
        ({"message_dims": 2.5}, ["message_dims", "2.5"]),
        ({"message_dims": float("nan")}, ["message_dims", "nan"]),
        ({"message_vocab": 1}, ["message_vocab", "1"]),
        ({"message_vocab": 65}, ["message_vocab", "65"]),
        ({"message_vocab": 4, "message_loss": 1.5}, ["message_loss", "1.5"]),
        ({"message_vocab": 4, "message_loss": -0.1}, ["message_loss", "-0.1"]),
        ({"message_vocab": 4, "message_loss": float("nan")}, ["message_loss", "nan"]),
        ({"message_vocab": 4, "message_noise": 1.5}, ["message_noise", "1.5"]),
        ({"message_dims": 2, "message_noise": 11.0}, ["message_noise", "11.0"]),
        ({"message_dims": 2, "message_noise": -1.0}, ["message_noise", "-1.0"]),
        ({"message_dims": 2, "message_noise": float("nan")}, ["message_noise", "nan"]),
        ({"message_loss": 0.5}, ["message_loss", "message_dims", "message_vocab"]),
        ({"message_noise": 0.1}, ["message_noise", "message_dims"]),
        ({"message_vocab": 4, "message_range": "near"}, ["message_range", "near"]),
    ],
)
def test_make_refuses_bad_options_in_one_line(options, words):
    with pytest.raises(UserError) as err:
        hivex_jax.make(WFC, **options)
    text = str(err.value)
    assert "\n" not in text
    for w in words:
        assert w in text


def test_refuses_env_without_vector_obs(wfc):
    class VisualOnly:
        env_id = "VisualOnly-v0"
        num_agents = 2
        continuous_dims = 0
        discrete_branches = (2,)

        def observation_space(self, params=None):
            return hivex_jax.core.spaces.Dict({"visual": hivex_jax.core.spaces.Box(0, 255, (2, 4, 4, 1))})

    with pytest.raises(UserError, match="vector"):
        MessageChannel(VisualOnly(), message_vocab=4)


# ------------------------------------------------------------------------------------------ layouts
@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_spaces_and_layout_for_dims_and_vocab(env_id):
    plain, params = hivex_jax.make(env_id)
    inner_obs = plain.observation_space(params)
    d = inner_obs["vector"].shape[-1]
    a = plain.num_agents
    k_slots = 3 if env_id == WRM else a - 1
    for options, slot_width in (({"message_dims": 3}, 4), ({"message_vocab": 5}, 5)):
        env, _ = hivex_jax.make(env_id, **options)
        assert isinstance(env, MessageChannel)
        assert env.env is not None and type(env.env) is type(plain)  # outside any FrameStack
        assert env.senders.shape == (a, k_slots)
        space = env.action_space(params)
        if "message_dims" in options:
            assert env.continuous_dims == plain.continuous_dims + 3
            assert env.discrete_branches == tuple(plain.discrete_branches)
        else:
            assert env.continuous_dims == plain.continuous_dims
            assert env.discrete_branches == tuple(plain.discrete_branches) + (5,)
        assert space.spaces["continuous"].shape == (a, env.continuous_dims)
        assert space.spaces["discrete"].nvec == env.discrete_branches
        obs_space = env.observation_space(params)
        assert obs_space["vector"].shape == (a, d + k_slots * slot_width)
        for key in inner_obs.keys():
            if key != "vector":
                assert obs_space[key] == inner_obs[key]
        layout = env.observation_layout()
        assert layout["messages"] == slice(d, d + k_slots * slot_width)
        assert layout[f"message_slot_{k_slots - 1}"].stop == d + k_slots * slot_width
        for name, s in plain.observation_layout().items():
            assert layout[name] == s


def test_default_senders_are_all_others_and_wrm_hears_its_allocation_neighbours():
    table = all_others_senders(4)
    np.testing.assert_array_equal(table, [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])
    env, _ = hivex_jax.make(WRM, message_vocab=4)
    np.testing.assert_array_equal(env.senders, wrm_generator.neighbour_table())
    np.testing.assert_array_equal(env.senders, wrm_generator.branch_targets()[:, 1:])
    forced, _ = hivex_jax.make(WRM, message_vocab=4, message_range="all")
    np.testing.assert_array_equal(forced.senders, all_others_senders(9))


# ------------------------------------------------------------------------------------------ delivery
def test_exact_delivery_follows_the_senders_table(wrm):
    wrapped, params = wrm["wrapped"], wrm["params"]
    _, state = wrm["reset"](jax.random.PRNGKey(0), params)
    d = wrapped.inner_vector_width
    symbols = np.array([3, 1, 2, 0, 1, 3, 2, 2, 1])
    action = _discrete_action(wrapped, jnp.zeros((9, 4), jnp.int32), symbols)
    obs1, *_ = wrm["wstep"](jax.random.PRNGKey(1), state, action, params)
    block = np.asarray(obs1["vector"][:, d:]).reshape(9, 3, VOCAB)
    neighbours = wrm_generator.neighbour_table()
    expected = np.eye(VOCAB)[symbols[neighbours]]  # [9, 3, V]: receiver i, slot s <- neighbours[i, s]
    np.testing.assert_array_equal(block, expected)


def test_dead_sender_is_not_received(wrm):
    wrapped, params = wrm["wrapped"], wrm["params"]
    _, state = wrm["reset"](jax.random.PRNGKey(0), params)
    alive = np.ones(9, bool)
    alive[4] = False  # the centre tower: every other tower lists it as a neighbour
    state = state.replace(env_state=state.env_state.replace(alive=jnp.asarray(alive)))
    symbols = np.full(9, 2)
    action = _discrete_action(wrapped, jnp.zeros((9, 4), jnp.int32), symbols)
    obs1, *_ = wrm["wstep"](jax.random.PRNGKey(1), state, action, params)
    block = np.asarray(obs1["vector"][:, wrapped.inner_vector_width :]).reshape(9, 3, VOCAB)
    from_dead = wrapped.senders == 4
    assert from_dead.sum() > 0
    assert not np.any(block[from_dead])
    assert np.all(block[~from_dead].sum(-1) == 1) and np.all(block[~from_dead][:, 2] == 1)


def test_env_part_is_bit_identical_with_and_without_messages(wrm):
    env, wrapped, params = wrm["env"], wrm["wrapped"], wrm["params"]
    _, state_p = wrm["reset"](jax.random.PRNGKey(7), params)
    state_w = state_p  # the wrapper passes the env's state through (its reset: see the WFC tests)
    d = wrapped.inner_vector_width
    rng = np.random.default_rng(0)
    for t in range(3):
        env_part = jnp.asarray(rng.integers(0, 3, (9, 4)), jnp.int32)
        symbols = rng.integers(0, VOCAB, 9)
        k = jax.random.PRNGKey(100 + t)
        out_p = wrm["step"](k, state_p, {"continuous": jnp.zeros((9, 0)), "discrete": env_part}, params)
        out_w = wrm["wstep"](k, state_w, _discrete_action(wrapped, env_part, symbols), params)
        np.testing.assert_array_equal(out_p[0]["vector"], out_w[0]["vector"][:, :d])
        for x, y in zip(jax.tree.leaves(out_p[1:]), jax.tree.leaves(out_w[1:]), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        state_p, state_w = out_p[1], out_w[1]
    np.testing.assert_array_equal(env.global_state(state_p, params), wrapped.global_state(state_w, params))


def test_scripted_policy_strips_messages_and_sends_a_neutral_one(wrm):
    wrapped, params = wrm["wrapped"], wrm["params"]
    obs, _ = wrm["reset"](jax.random.PRNGKey(0), params)
    obs = {"vector": jnp.concatenate([obs["vector"], wrapped.nothing_received()], axis=-1)}
    from hivex_jax.eval.rollout import find_scripted_policy

    action = find_scripted_policy(wrapped)(obs, params)
    inner = wrm["env"].scripted_policy({"vector": obs["vector"][:, : wrapped.inner_vector_width]}, params)
    np.testing.assert_array_equal(action["discrete"][:, :4], inner["discrete"])
    assert np.all(np.asarray(action["discrete"][:, 4]) == 0)
    assert bool(wrapped.action_space(params).contains(action))


# ------------------------------------------------------------------------------------------ channel
def _deliver_many(channel, message, n_keys, active=None):
    """`channel.deliver` over `n_keys` keys: f32[n, A, K * w]."""
    a = channel.num_agents
    active = jnp.ones(a, bool) if active is None else active
    keys = jax.random.split(jax.random.PRNGKey(3), n_keys)
    return np.asarray(jax.jit(jax.vmap(lambda k: channel.deliver(k, message, active)))(keys))


def test_loss_one_drops_everything_and_loss_half_drops_about_half(wfc):
    inner = wfc["env"].env
    message = jnp.full((4, DIMS), 0.5)
    lost = _deliver_many(MessageChannel(inner, message_dims=DIMS, message_loss=1.0), message, 50)
    assert not np.any(lost)
    half = _deliver_many(MessageChannel(inner, message_dims=DIMS, message_loss=0.5), message, 300)
    blocks = half.reshape(300, 4, 3, DIMS + 1)
    flags = blocks[..., -1]
    # 3600 independent deliveries: std of the fraction 0.0083, so 0.05 is 6 sigma
    assert abs(flags.mean() - 0.5) < 0.05
    np.testing.assert_array_equal(blocks[..., :DIMS][flags == 1], 0.5)
    assert not np.any(blocks[..., :DIMS][flags == 0])
    # slots are independent: agent 0's 3 slots are not all received or all dropped together
    assert 0.05 < (flags[:, 0].sum(-1) == 3).mean() < 0.25


def test_discrete_noise_one_gives_uniform_symbols(wrm):
    channel = MessageChannel(wrm["env"], message_vocab=VOCAB, message_noise=1.0)
    block = _deliver_many(channel, jnp.zeros(9, jnp.int32), 200).reshape(200, 9, 3, VOCAB)
    assert np.all(block.sum(-1) == 1)
    freq = block.reshape(-1, VOCAB).mean(0)  # 5400 symbols: std of each frequency 0.0059
    np.testing.assert_allclose(freq, 0.25, atol=0.035)
    clean = MessageChannel(wrm["env"], message_vocab=VOCAB, message_noise=0.0)
    block = _deliver_many(clean, jnp.zeros(9, jnp.int32), 4).reshape(4, 9, 3, VOCAB)
    assert np.all(block[..., 0] == 1)


def test_continuous_noise_has_the_given_std(wfc):
    inner = wfc["env"].env
    channel = MessageChannel(inner, message_dims=DIMS, message_noise=0.05)
    block = _deliver_many(channel, jnp.zeros((4, DIMS)), 300).reshape(300, 4, 3, DIMS + 1)
    values = block[..., :DIMS]
    assert np.all(block[..., -1] == 1)
    # 7200 draws of N(0, 0.05), far from the clip: the mean's std is 0.0006, the std's relative 0.0083
    assert abs(values.mean()) < 0.004
    assert abs(values.std() / 0.05 - 1) < 0.05
    big = MessageChannel(inner, message_dims=DIMS, message_noise=5.0)
    assert np.all(np.abs(_deliver_many(big, jnp.zeros((4, DIMS)), 10)) <= 1.0)


# ------------------------------------------------------------------------------------------ jit / vmap
def test_jit_vmap_and_nan_messages(wfc):
    env, params = wfc["env"], wfc["params"]
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    d = env.inner_vector_width
    assert obs["vector"].shape == (2, 4, d + 3 * (DIMS + 1))
    assert not np.any(np.asarray(obs["vector"][..., d:]))  # reset: nothing received
    a, c = 4, env.continuous_dims
    message = jnp.stack([jnp.full((a, DIMS), jnp.nan), jnp.full((a, DIMS), 3.0)])
    action = {
        "continuous": jnp.concatenate([jnp.zeros((2, a, c - DIMS)), message], axis=-1),
        "discrete": jnp.zeros((2, a, 1), jnp.int32),
    }
    obs1, *_ = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))(keys, state, action, params)
    block = np.asarray(obs1["vector"][..., d:]).reshape(2, a, 3, DIMS + 1)
    np.testing.assert_array_equal(block[0], np.tile([0.0, 0.0, 1.0], (a, 3, 1)))  # NaN -> 0, received
    np.testing.assert_array_equal(block[1], np.tile([1.0, 1.0, 1.0], (a, 3, 1)))  # clipped to 1
    single_obs, single_state = wfc["reset"](keys[1], params)
    np.testing.assert_allclose(obs["vector"][1], single_obs["vector"], atol=1e-6)
    one = jax.tree.map(lambda x: x[1], action)
    single, *_ = wfc["step"](keys[1], single_state, one, params)
    np.testing.assert_allclose(obs1["vector"][1], single["vector"], atol=1e-6)


# ------------------------------------------------------------------------------------------ adapters
def test_pettingzoo_and_gymnasium_adapters_carry_the_message_parts(wfc):
    pytest.importorskip("pettingzoo")
    gym = pytest.importorskip("gymnasium")
    from hivex_jax.interop.gymnasium import HivexVectorEnv
    from hivex_jax.interop.pettingzoo import HivexParallelEnv

    env, params = wfc["env"], wfc["params"]
    width = env.observation_space(params)["vector"].shape[-1]
    par = HivexParallelEnv(env, params)
    assert par.observation_space("agent_0").shape == (width,)
    act_space = par.action_space("agent_0")
    assert isinstance(act_space, gym.spaces.Dict)
    assert act_space["continuous"].shape == (env.continuous_dims,)
    obs, _ = par.reset(seed=1)
    assert obs["agent_0"].shape == (width,) and not np.any(obs["agent_0"][env.inner_vector_width :])
    message = np.array([0.25, -0.5], np.float32)
    actions = {
        a: {"continuous": np.concatenate([np.zeros(env.continuous_dims - DIMS), message]), "discrete": [0]}
        for a in par.agents
    }
    obs, *_ = par.step(actions)
    np.testing.assert_array_equal(
        obs["agent_0"][env.inner_vector_width :], np.tile([0.25, -0.5, 1.0], 3).astype(np.float32)
    )
    vec = HivexVectorEnv(env, params, num_worlds=1)
    assert vec.single_observation_space.shape == (width,)
    assert vec.single_action_space["continuous"].shape == (env.continuous_dims,)


def test_jaxmarl_adapter_carries_the_message_parts(wfc):
    pytest.importorskip("jaxmarl")
    from hivex_jax.interop.jaxmarl import HivexJaxMARLEnv

    env, params = wfc["env"], wfc["params"]
    width = env.observation_space(params)["vector"].shape[-1]
    jm = HivexJaxMARLEnv(env, params)
    assert jm.observation_space("agent_0").shape == (width,)
    assert jm.action_space("agent_0").spaces["continuous"].shape == (env.continuous_dims,)


@pytest.mark.slow
def test_check_env_passes_on_message_wrapped_envs():
    from hivex_jax.core.check import check_env

    for options in ({"message_dims": 2, "message_loss": 0.3, "message_noise": 0.1}, {"message_vocab": 3}):
        env, params = hivex_jax.make(WFC, num_agents=4, **options)
        check_env(env, params)


@pytest.mark.slow
def test_reset_is_the_env_reset_plus_nothing_received(wfc):
    env, params = wfc["env"], wfc["params"]
    key = jax.random.PRNGKey(5)
    obs, state = wfc["reset"](key, params)
    plain_obs, plain_state = jax.jit(env.env.reset)(key, params)
    d = env.inner_vector_width
    np.testing.assert_array_equal(obs["vector"][:, :d], plain_obs["vector"])
    assert not np.any(np.asarray(obs["vector"][:, d:]))
    for x, y in zip(jax.tree.leaves(state), jax.tree.leaves(plain_state), strict=True):
        np.testing.assert_array_equal(x, y)
