"""Training-only reward-term weights (`train_reward_weights`, `train_reward_weights_anneal_updates`):
the training reward is the raw terms re-weighted (unnamed terms keep the env's task weight), the anneal
reaches the env's weights at update N, episode returns keep the env's reward, the default program is
unchanged, and bad weights are refused before compiling."""

import jax
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import ConfigError, from_dict, validate_env
from baselines.core.ppo import make_train

pytestmark = pytest.mark.timeout(600)

ALL_THREE = {"closeness": 3.0, "direction_bonus": 3.0, "branch_bonus": 3.0}  # the env's weights are 1


def _metrics(**changes) -> dict:
    """Metrics [6 updates] of one seed (3 chunks of 2 updates)."""
    config = from_dict({**TINY_CONFIG, **changes})
    train = make_train(config)
    runner = train.init(jax.random.key(0))
    chunk = jax.jit(train.update_chunk)
    out = []
    for _ in range(3):
        runner, metrics = chunk(runner)
        out.append(jax.device_get(metrics))
    return {k: np.concatenate([m[k] for m in out]) for k in out[0]}


@pytest.mark.slow
def test_weights_scale_the_training_reward_exactly_and_leave_returns_alone():
    base = _metrics()
    scaled = _metrics(train_reward_weights=ALL_THREE)
    # update 0 acts with the same parameters and keys: the same steps, every term weighted 3 instead of 1
    np.testing.assert_allclose(scaled["step_reward"][0], 3.0 * base["step_reward"][0], rtol=1e-6)
    assert abs(base["step_reward"][0]) > 1e-3
    episode_keys = [k for k in base if "return" in k and "discounted" not in k]
    assert episode_keys
    for key in episode_keys:  # the env's reward, not the training one
        np.testing.assert_array_equal(scaled[key][0], base[key][0])
    # naming every term at the env's own weight gives the env's reward
    same = _metrics(train_reward_weights={"closeness": 1.0, "direction_bonus": 1.0, "branch_bonus": 1.0})
    np.testing.assert_allclose(same["step_reward"], base["step_reward"], rtol=1e-6)


def test_anneal_reaches_the_env_weights_at_update_n():
    # lr ~ 0: the parameters (so the rollouts) stay those of the env-weight run; only the weights move
    base = _metrics(lr=1e-30)
    annealed = _metrics(lr=1e-30, train_reward_weights=ALL_THREE, train_reward_weights_anneal_updates=2)
    factor = np.array([3.0, 2.0, 1.0, 1.0, 1.0, 1.0])  # 3 + (1 - 3) * min(u / 2, 1)
    np.testing.assert_allclose(annealed["step_reward"], factor * base["step_reward"], rtol=1e-5)


def test_empty_weights_are_the_default_program():
    absent = _metrics()
    empty = _metrics(train_reward_weights={}, train_reward_weights_anneal_updates=0)
    assert absent.keys() == empty.keys()
    for key in absent:
        np.testing.assert_array_equal(absent[key], empty[key], err_msg=key)


def test_refusals_before_compiling():
    expected = r"no reward term 'closenes'.*did you mean closeness.*branch_bonus"
    with pytest.raises(ConfigError, match=expected) as info:
        validate_env(from_dict({**TINY_CONFIG, "train_reward_weights": {"closenes": 2.0}}))
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="no reward term"):
        make_train(from_dict({**TINY_CONFIG, "train_reward_weights": {"border": 0.0}}))
    for bad in (float("nan"), float("inf"), "x"):
        with pytest.raises(ConfigError, match="finite"):
            from_dict({**TINY_CONFIG, "train_reward_weights": {"closeness": bad}})
    with pytest.raises(ConfigError, match=">= 0"):
        from_dict({**TINY_CONFIG, "train_reward_weights_anneal_updates": -1})
