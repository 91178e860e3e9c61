"""Value heads over named reward terms (`value_heads: {term: scale}`): the split reward sums to the training
reward, GAE over the heads is GAE of the whole reward, the head errors add up in the loss, a run with heads
plays its first rollout as the run without, and bad heads are refused before compiling."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import (
    ConfigError,
    ExtensionsConfig,
    ValueHeadsConfig,
    from_dict,
    key_kind,
    validate_env,
)
from baselines.core.kernels import gae, ppo_loss
from baselines.core.networks import Critic
from baselines.core.ppo import make_train
from baselines.core.value_heads import ValueHeads

pytestmark = pytest.mark.timeout(600)

NAMES = ("closeness", "direction_bonus", "branch_bonus")
ENV = SimpleNamespace(reward_term_names=NAMES)
PARAMS = SimpleNamespace(task=0, task_weights=jnp.asarray([[1.0, 2.0, 3.0]]))


def _heads(**changes) -> ValueHeads:
    config = from_dict({**TINY_CONFIG, **changes})
    return ValueHeads(ValueHeadsConfig.of(config), ExtensionsConfig.of(config), ENV, PARAMS)


def _info(raw: np.ndarray) -> dict:
    raw = jnp.asarray(raw, jnp.float32)
    return {"raw_reward_terms": raw, "reward_terms": raw * PARAMS.task_weights[0]}


def test_split_puts_each_named_term_in_its_head_and_the_rest_first():
    raw = np.array([[[1.0, 0.5, 2.0], [0.0, 1.0, -1.0]]])  # [N=1, A=2, terms]
    info = _info(raw)
    reward = jnp.sum(info["reward_terms"], -1)
    active = jnp.ones((1, 2), bool)
    split = np.asarray(_heads(value_heads={"branch_bonus": 10.0}).split(info, reward, active, jnp.int32(0)))
    # weighted terms: agent 0 (1, 1, 6), agent 1 (0, 2, -3); the head holds the term unscaled
    np.testing.assert_allclose(split, [[[2.0, 6.0], [2.0, -3.0]]])
    np.testing.assert_allclose(split.sum(-1), np.asarray(reward))
    off = _heads().split(info, reward, active, jnp.int32(0))
    assert off is reward


def test_split_follows_the_training_weights_and_sharing():
    raw = np.array([[[1.0, 0.5, 2.0], [0.0, 1.0, -1.0]]])
    info = _info(raw)
    active = jnp.ones((1, 2), bool)
    # branch_bonus trained at weight 0 annealing to the env's 3 over 4 updates: at update 2 it weighs 1.5
    heads = _heads(
        value_heads={"branch_bonus": 2.0},
        train_reward_weights={"branch_bonus": 0.0},
        train_reward_weights_anneal_updates=4,
    )
    reward = jnp.asarray([[1.0 + 1.0 + 3.0, 0.0 + 2.0 - 1.5]])  # what the reweighting gives at update 2
    split = np.asarray(heads.split(info, reward, active, jnp.int32(2)))
    np.testing.assert_allclose(split[..., 1], [[3.0, -1.5]])
    np.testing.assert_allclose(split[..., 0], [[2.0, 2.0]])
    # sharing 1: every agent earns the team's mean of each term
    shared = _heads(value_heads={"branch_bonus": 2.0}, train_reward_sharing=1.0)
    team = jnp.full((1, 2), (8.0 - 1.0) / 2)
    split = np.asarray(shared.split(info, team, active, jnp.int32(0)))
    np.testing.assert_allclose(split[..., 1], [[1.5, 1.5]])
    np.testing.assert_allclose(split.sum(-1), np.asarray(team))


def _gae_inputs(heads: int = 3) -> tuple:
    rng = np.random.default_rng(0)
    t, n, a = 7, 3, 2
    shape = (t, n, a, heads)
    rewards, values, next_values = (jnp.asarray(rng.normal(size=shape), jnp.float32) for _ in range(3))
    terminated = jnp.asarray(rng.random((t, n, a)) < 0.2)
    episode_end = terminated | jnp.asarray(rng.random((t, n, a)) < 0.1)
    active = jnp.asarray(rng.random((t, n, a)) < 0.9)
    traj = SimpleNamespace(
        value=values, next_value=next_values, terminated=terminated, episode_end=episode_end, active=active
    )
    return rewards, traj, (terminated, episode_end, active, 0.95, 0.9)


def test_gae_over_heads_is_gae_of_the_whole_reward():
    # GAE is linear in (rewards, values): the sum of scale_k x head k's advantage (rewards / scale_k,
    # values in head units) is the advantage of the summed reward under the summed scaled values
    rewards, traj, args = _gae_inputs()
    values, next_values = traj.value, traj.next_value
    heads = _heads(value_heads={"branch_bonus": 10.0, "closeness": 0.5})
    scales = jnp.asarray([1.0, 10.0, 0.5])
    advantages, targets = heads.gae(jnp.int32(0), rewards, traj, 0.95, 0.9)
    whole, _ = gae(rewards.sum(-1), (values * scales).sum(-1), (next_values * scales).sum(-1), *args)
    np.testing.assert_allclose(np.asarray(advantages), np.asarray(whole), rtol=1e-5, atol=1e-5)
    assert targets.shape == rewards.shape
    head1, target1 = gae(rewards[..., 1] / 10.0, values[..., 1], next_values[..., 1], *args)
    np.testing.assert_allclose(np.asarray(targets[..., 1]), np.asarray(target1), rtol=1e-6)
    # off: common.gae itself
    one = SimpleNamespace(**{**vars(traj), "value": values[..., 0], "next_value": next_values[..., 0]})
    plain = _heads().gae(jnp.int32(0), rewards[..., 0], one, 0.95, 0.9)
    expected = gae(rewards[..., 0], values[..., 0], next_values[..., 0], *args)
    for got, want in zip(plain, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


ANNEALED = {
    "value_heads": {"branch_bonus": 10.0, "closeness": 2.0},
    "value_heads_final": {"branch_bonus": 100.0},
    "value_heads_anneal_updates": [10, 20],
}


def test_annealed_scales_move_linearly_between_the_window_s_updates():
    heads = _heads(**ANNEALED)
    # hand-computed: branch_bonus 10 until update 10, 10 + 90 x (u - 10) / 10 inside, 100 from 20; closeness
    # (not in value_heads_final) and the rest keep theirs
    for update, branch in ((0, 10.0), (10, 10.0), (15, 55.0), (19, 91.0), (20, 100.0), (400, 100.0)):
        np.testing.assert_allclose(np.asarray(heads.scales_at(jnp.int32(update))), [1.0, branch, 2.0])
    constant = _heads(value_heads=ANNEALED["value_heads"])
    np.testing.assert_array_equal(np.asarray(constant.scales_at(jnp.int32(15))), [1.0, 10.0, 2.0])


def test_annealed_gae_is_the_constant_scale_gae_of_that_update():
    rewards, traj, _ = _gae_inputs()
    annealed = _heads(**ANNEALED)
    at_15 = _heads(value_heads={"branch_bonus": 55.0, "closeness": 2.0})
    for got, want in zip(
        annealed.gae(jnp.int32(15), rewards, traj, 0.95, 0.9),
        at_15.gae(jnp.int32(0), rewards, traj, 0.95, 0.9),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_value_loss_adds_the_heads_errors():
    value = jnp.asarray([[1.0, 2.0], [0.0, 0.0], [3.0, -1.0]])
    targets = jnp.asarray([[0.0, 0.0], [1.0, 1.0], [3.0, 1.0]])
    mask = jnp.asarray([True, True, False])
    zeros = jnp.zeros(3)
    _, metrics = ppo_loss(zeros, zeros, zeros, zeros, value, value, targets, mask, 0.2, 0.0, 0.5, 0.0, False)
    # per sample 1 + 4 = 5 and 1 + 1 = 2 (the third is masked): 0.5 x mean = 1.75
    assert float(metrics["value_loss"]) == pytest.approx(1.75)


def test_critic_has_one_output_per_head():
    obs = {"vector": jnp.zeros((5, 4))}
    one = Critic((8,), (), "tanh")
    three = Critic((8,), (), "tanh", num_heads=3)
    assert one.apply(one.init(jax.random.key(0), obs), obs).shape == (5,)
    assert three.apply(three.init(jax.random.key(0), obs), obs).shape == (5, 3)


def test_local_heads_read_only_the_agents_own_obs_and_the_rest_only_the_shared_input():
    # MAPPO's critic_heads_local: output 0 (the rest) reads the global input, outputs 1.. the agent's own obs
    critic = Critic((8,), (), "tanh", num_heads=3, local_heads=True)
    rng = np.random.default_rng(0)
    obs = {
        "vector": jnp.asarray(rng.normal(size=(5, 6))),
        "local": {"vector": jnp.asarray(rng.normal(size=(5, 4)))},
    }
    params = critic.init(jax.random.key(0), obs)
    value = critic.apply(params, obs)
    assert value.shape == (5, 3)
    other_global = critic.apply(params, {**obs, "vector": obs["vector"] + 1.0})
    other_local = critic.apply(params, {**obs, "local": {"vector": obs["local"]["vector"] + 1.0}})
    np.testing.assert_array_equal(other_global[:, 1:], value[:, 1:])
    assert not np.allclose(other_global[:, 0], value[:, 0])
    np.testing.assert_array_equal(other_local[:, 0], value[:, 0])
    assert not np.allclose(other_local[:, 1:], value[:, 1:])


@pytest.mark.slow  # compiles a MAPPO rollout and update (~20 s)
def test_mappo_local_heads_read_the_agents_obs_and_train():
    config = from_dict(
        {**TINY_CONFIG, "algo": "mappo", "critic_heads_local": True, "value_heads": {"branch_bonus": 10.0}}
    )
    train = make_train(config)
    runner = train.init(jax.random.key(0))
    _, (traj, _) = jax.jit(train.rollout)(runner)
    np.testing.assert_array_equal(traj.critic_obs["local"]["vector"], traj.obs["vector"])
    _, metrics = jax.jit(train.update_chunk)(runner)
    assert np.all(np.isfinite(jax.device_get(metrics["value_loss"])))
    assert "local_encoder" in runner.params["critic"]["params"]


def test_mappo_local_heads_without_value_heads_are_refused_in_one_line():
    config = from_dict({**TINY_CONFIG, "algo": "mappo", "critic_heads_local": True})
    for check in (validate_env, make_train):
        with pytest.raises(ConfigError, match="critic_heads_local .* but value_heads is empty") as error:
            check(config)
        assert "\n" not in str(error.value)


def _first_chunk(**changes) -> tuple[dict, tuple]:
    train = make_train(from_dict({**TINY_CONFIG, **changes}))
    runner = train.init(jax.random.key(0))
    _, (traj, _) = jax.jit(train.rollout)(runner)
    _, metrics = jax.jit(train.update_chunk)(runner)
    return jax.device_get(metrics), jax.device_get(traj)


@pytest.mark.slow
def test_a_run_with_heads_plays_the_same_first_rollout_and_learns_finite_values():
    base, base_traj = _first_chunk()
    heads, traj = _first_chunk(value_heads={"branch_bonus": 10.0})
    assert traj.value.shape == base_traj.value.shape + (2,)
    assert traj.reward.shape == base_traj.reward.shape + (2,)
    # the actor (and so the actions) is the same network from the same key: the same first rollout
    np.testing.assert_array_equal(traj.action["discrete"], base_traj.action["discrete"])
    np.testing.assert_allclose(traj.reward.sum(-1), base_traj.reward, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(heads["step_reward"][0], base["step_reward"][0], rtol=1e-6)
    assert np.any(traj.reward[..., 1] != 0)  # the branch bonus was earned, in its own head
    for key in ("loss", "value_loss", "policy_loss"):
        assert np.all(np.isfinite(heads[key]))
    assert not np.allclose(heads["value_loss"], base["value_loss"])


@pytest.mark.slow
def test_an_anneal_changes_training_only_from_its_start():
    constant, _ = _first_chunk(value_heads={"branch_bonus": 10.0})
    now, _ = _first_chunk(
        value_heads={"branch_bonus": 10.0},
        value_heads_final={"branch_bonus": 100.0},
        value_heads_anneal_updates=[0, 1],  # update 0 at scale 10, update 1 at 100
    )
    # update 0 (the window's start) is the constant run's, bit for bit; update 1 learns other targets
    for key in ("loss", "value_loss", "policy_loss"):
        np.testing.assert_array_equal(now[key][0], constant[key][0])
    assert not np.allclose(now["value_loss"][1], constant["value_loss"][1])


def test_heads_serve_mappo_and_a_recurrent_actor():
    metrics, traj = _first_chunk(
        algo="mappo", recurrent="gru", gru_size=8, value_heads={"closeness": 2.0, "branch_bonus": 10.0}
    )
    assert traj.value.shape[-1] == 3 and traj.next_value.shape == traj.value.shape
    assert np.all(np.isfinite(metrics["loss"])) and np.all(np.isfinite(metrics["value_loss"]))


def test_bad_heads_are_refused_in_one_line():
    with pytest.raises(
        ConfigError, match=r"value_heads: .* has no reward term 'branch_bonuss' \(did you mean"
    ):
        validate_env(from_dict({**TINY_CONFIG, "value_heads": {"branch_bonuss": 10.0}}))
    for scale in (0.0, -1.0, "big", float("nan")):
        with pytest.raises(ConfigError, match="value_heads.closeness must be a finite scale > 0"):
            from_dict({**TINY_CONFIG, "value_heads": {"closeness": scale}})
    assert key_kind("value_heads") == "static"  # the head count is the critic's shape


def test_bad_head_anneals_are_refused_in_one_line_and_a_late_one_warned():
    heads = {"value_heads": {"closeness": 2.0}}
    with pytest.raises(ConfigError, match=r"value_heads_final.branch_bonus: no value head of that term"):
        from_dict({**TINY_CONFIG, **heads, "value_heads_final": {"branch_bonus": 5.0}})
    with pytest.raises(ConfigError, match="value_heads_final.closeness must be a finite scale > 0"):
        from_dict({**TINY_CONFIG, **heads, "value_heads_final": {"closeness": -3.0}})
    for window in ([4, 2], [3, 3], [-1, 2], [1, 2, 3]):
        with pytest.raises(ConfigError, match=r"value_heads_anneal_updates must be \[start, end\]"):
            from_dict(
                {
                    **TINY_CONFIG,
                    **heads,
                    "value_heads_final": {"closeness": 5.0},
                    "value_heads_anneal_updates": window,
                }
            )
    late = from_dict(
        {
            **TINY_CONFIG,
            **heads,
            "value_heads_final": {"closeness": 5.0},
            "value_heads_anneal_updates": [2, 7],
        }
    )
    assert late.num_updates == 6
    assert any("value_heads_final" in note and "after training ends" in note for note in late.recipe_notes())
    on_time = late.replace(value_heads_anneal_updates=(2, 6))
    assert not on_time.recipe_notes()
