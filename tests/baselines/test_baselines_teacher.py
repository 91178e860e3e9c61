"""The training-time teacher (`teacher_coef`, `teacher_where`, `teacher_anneal_updates`): each transition
records the env's scripted action on the observation the policy acted on and where imitating it counts;
the loss gains exactly `coef(update) * teacher_loss`, with the coefficient annealed linearly to 0; the
gradient moves the policy (feed-forward and recurrent) towards the scripted action; the default program
is unchanged; bad values and envs without the needed parts are refused before compiling."""

import csv

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG, TinyEnv, scripted_policy

from baselines.cli.train import train_main
from baselines.config import ConfigError, from_dict, validate_env
from baselines.core.ppo import make_train

pytestmark = pytest.mark.timeout(600)


def _left_of_goal(obs: dict, params) -> jax.Array:
    """A stand-in safety mask for the tiny env: bool[A], the agent is left of its goal."""
    return obs["vector"][:, 0] < obs["vector"][:, 1]


def _metrics(updates: int = 6, **changes) -> dict:
    """Metrics [updates] of one seed (chunks of 2 updates)."""
    config = from_dict({**TINY_CONFIG, **changes})
    train = make_train(config)
    runner = train.init(jax.random.key(0))
    chunk = jax.jit(train.update_chunk)
    out = []
    for _ in range(updates // config.chunk_updates):
        runner, metrics = chunk(runner)
        out.append(jax.device_get(metrics))
    return {k: np.concatenate([m[k] for m in out]) for k in out[0]}


def _rollout(**changes):
    config = from_dict({**TINY_CONFIG, **changes})
    train = make_train(config)
    _, (traj, _) = jax.jit(train.rollout)(train.init(jax.random.key(0)))
    return train, traj


@pytest.mark.slow
def test_rollout_records_the_scripted_action_on_the_observation_acted_on(monkeypatch):
    _, traj = _rollout(teacher_coef=1.0)
    per_step = jax.vmap(jax.vmap(scripted_policy, (0, None)), (0, None))  # [T, N, A, ...]
    expected = per_step(traj.obs, TinyEnv().default_params())
    for part in ("continuous", "discrete"):
        np.testing.assert_array_equal(
            np.asarray(traj.extras["teacher_action"][part]), np.asarray(expected[part])
        )
    assert np.asarray(traj.extras["teacher_mask"]).all()  # teacher_where=all: every decision

    monkeypatch.setattr(TinyEnv, "scripted_safety_mask", staticmethod(_left_of_goal), raising=False)
    _, traj = _rollout(teacher_coef=1.0, teacher_where="safety")
    mask = np.asarray(traj.obs["vector"][..., 0] < traj.obs["vector"][..., 1])
    np.testing.assert_array_equal(np.asarray(traj.extras["teacher_mask"]), mask)
    assert 0 < mask.mean() < 1  # the test can tell "safety" from "all"


def test_the_loss_gains_exactly_the_annealed_imitation_term():
    config = from_dict(TINY_CONFIG)
    metrics = _metrics(teacher_coef=2.0, teacher_anneal_updates=2)
    base = (
        metrics["policy_loss"] + config.vf_coef * metrics["value_loss"] - config.ent_coef * metrics["entropy"]
    )
    coef = 2.0 * np.array([1.0, 0.5, 0.0, 0.0, 0.0, 0.0])  # 2 * (1 - min(u / 2, 1)), updates u = 0..5
    # loss, its parts and teacher_loss are means over the same minibatches: the identity holds for means
    np.testing.assert_allclose(metrics["loss"], base + coef * metrics["teacher_loss"], rtol=1e-4, atol=1e-5)
    assert np.all(metrics["teacher_loss"] > 0.1)  # a term that is really there before the anneal ends
    np.testing.assert_allclose(metrics["teacher_fraction"], 1.0)  # all decisions count (teacher_where=all)


@pytest.mark.slow  # two trainings each (feed-forward ~9 s, GRU ~30 s)
@pytest.mark.parametrize("recurrent", ["none", "gru"])
def test_imitation_moves_the_policy_to_the_scripted_action(recurrent):
    # the same run with a negligible and a strong coefficient: only the gradient of the term differs
    common = {"recurrent": recurrent, "gru_size": 8, "lr": 1e-2, "update_epochs": 4}
    weak = _metrics(updates=8, teacher_coef=1e-6, **common)
    strong = _metrics(updates=8, teacher_coef=5.0, **common)
    assert strong["step_reward"][0] == weak["step_reward"][0]  # the first rollout: same params and keys
    assert strong["teacher_loss"][-1] < 0.7 * weak["teacher_loss"][-1]


def test_no_teacher_is_the_default_program():
    absent = _metrics()
    off = _metrics(teacher_coef=0.0, teacher_where="all", teacher_anneal_updates=5)
    assert absent.keys() == off.keys() and "teacher_loss" not in absent
    for key in absent:
        np.testing.assert_array_equal(absent[key], off[key], err_msg=key)


# slow: a whole `hivex train` (~15 s) for two columns; the metrics they come from are checked above
@pytest.mark.slow
def test_metrics_csv_has_the_teacher_columns(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY_CONFIG, "num_seeds": 1, "teacher_coef": 1.0, "gif_frames": 0}))
    args = ["--config", str(path), "--out-dir", str(tmp_path), "--name", "t", "--no-progress"]
    assert train_main(args) == 0
    with open(tmp_path / "t" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    loss = [float(r["seed_0/teacher_loss"]) for r in rows]
    assert all(np.isfinite(loss)) and all(float(r["seed_0/teacher_fraction"]) == 1.0 for r in rows)


def test_refusals_before_compiling(monkeypatch):
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="teacher_coef must be a finite number"):
            from_dict({**TINY_CONFIG, "teacher_coef": bad})
    with pytest.raises(ConfigError, match="teacher_where must be one of"):
        from_dict({**TINY_CONFIG, "teacher_where": "border"})
    with pytest.raises(ConfigError, match="teacher_anneal_updates must be >= 0"):
        from_dict({**TINY_CONFIG, "teacher_anneal_updates": -1})
    # the tiny env has a scripted controller but no safety mask
    with pytest.raises(ConfigError, match="teacher_where=safety needs the env's scripted_safety_mask") as err:
        validate_env(from_dict({**TINY_CONFIG, "teacher_coef": 1.0, "teacher_where": "safety"}))
    assert "\n" not in str(err.value)
    validate_env(from_dict({**TINY_CONFIG, "teacher_coef": 0.0, "teacher_where": "safety"}))  # off: fine
    monkeypatch.delattr(TinyEnv, "scripted_policy")
    with pytest.raises(ConfigError, match="scripted controller; TinyTrainerTest-v0 has none"):
        make_train(from_dict({**TINY_CONFIG, "teacher_coef": 1.0}))


def test_ocean_plastic_safety_mask_is_either_scripted_safety_rule():
    import hivex_jax
    from hivex_jax.envs.ocean_plastic_collection import heuristics

    env, params = hivex_jax.make("OceanPlasticCollection-v0")
    # the rules read the vector only: observations of the space's shapes, no (eager, ~15 s) reset
    obs = {k: jnp.zeros(s.shape, s.dtype) for k, s in env.observation_space(params).spaces.items()}
    # a vessel at the border heading out, one with a vessel 5 m ahead, one in open water
    e = float(params.sea_half_extent)
    vector = np.zeros(obs["vector"].shape, np.float32)
    own = vector[:, -6:]
    own[:, 2:4] = [1.0, 0.0]  # heading +x
    own[0, 0:2], own[0, 4:6] = [0.95, 0.0], [-0.5, 0.5]
    own[1, 0:2], own[1, 4:6] = [0.0, 0.0], [5.0 / e, 0.0]
    own[2, 0:2], own[2, 4:6] = [0.0, 0.0], [-0.5, -0.5]
    vector[:, -6:] = own
    obs = {**obs, "vector": jnp.asarray(vector)}
    near_border, threat = heuristics.safety_rules(obs, params)
    assert np.asarray(near_border).tolist() == [True, False, False]
    assert np.asarray(threat).tolist() == [False, True, False]
    assert np.asarray(env.scripted_safety_mask(obs, params)).tolist() == [True, True, False]
