"""Recurrent policies (`recurrent: gru`): the GRU state starts afresh exactly on the first step of every
episode (not a step late, not a step early), the update replays each rollout from its stored first state
(ratio 1 before the first gradient step), whole env sequences make the minibatches, a cue that only the
first observation shows is recalled (a feed-forward actor cannot), and runs train, resume and evaluate.
Also the per-branch entropy coefficients."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from recurrent_memory_env import CUE_CONFIG, EPISODE_STEPS
from recurrent_memory_env import register as register_cue
from trainer_fake_env import TINY_CONFIG

from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.cli.transfer import transfer_main
from baselines.config import ConfigError, fit_saved_config, from_dict, validate_env
from baselines.core.kernels import env_minibatches, ppo_loss
from baselines.core.networks import Actor
from baselines.core.ppo import make_train
from baselines.run import checkpoint
from baselines.run.evaluation import HeldOutEvaluation
from baselines.run.guards import ResumeError, check_resume_config
from baselines.run.population import get_population

pytestmark = pytest.mark.timeout(600)

register_cue()


def _cue_config(**changes):
    return from_dict({**CUE_CONFIG, "recurrent": "gru", **changes})


def _sharpened(state):
    """The state with the policy head scaled up, so a different GRU state shows in the log-probs (the
    head is initialised near 0)."""
    actor = state.params["actor"]["params"]
    head = {**actor["policy_head"], "kernel": actor["policy_head"]["kernel"] * 300.0}
    params = {**state.params, "actor": {"params": {**actor, "policy_head": head}}}
    return state.replace(params=params)


def _two_rollouts(config):
    """The train, the sharpened initial state, and two consecutive rollouts with their start states."""
    train = make_train(config)
    state0 = _sharpened(jax.jit(train.init)(jax.random.PRNGKey(0)))
    rollout = jax.jit(train.rollout)
    state1, (traj1, _) = rollout(state0)
    _, (traj2, _) = rollout(state1)
    return train, (state0, state1), (traj1, traj2)


# ------------------------------------------------------------------------------------- resets
def test_only_the_first_step_of_every_episode_starts_from_the_initial_state():
    # episodes of 4 steps, rollouts of 8: episodes start at steps 0, 4, 8 (the second rollout's first
    # step: the reset crosses the rollout boundary in the runner state) and 12
    train, (state0, _), (traj1, traj2) = _two_rollouts(_cue_config(num_steps=2 * EPISODE_STEPS, num_envs=4))
    traj = jax.tree.map(lambda a, b: np.concatenate([a, b]), traj1, traj2)
    steps, num_envs, num_agents = traj.log_prob.shape
    first = np.zeros((steps, num_envs, num_agents), bool)
    first[::EPISODE_STEPS] = True  # hand-computed: the env never terminates early
    # the env agrees: an episode ended on the step before each of those
    np.testing.assert_array_equal(np.asarray(traj.episode_end)[EPISODE_STEPS - 1 :: EPISODE_STEPS], True)
    assert np.asarray(traj.episode_end).sum() == steps // EPISODE_STEPS * num_envs * num_agents
    # a fresh start on the same observation gives the rollout's log-prob exactly where an episode begins
    fresh_hidden = train.initial_memory((steps, num_envs, num_agents))
    _, fresh = train.policy_step(state0.params, traj.obs, fresh_hidden, jnp.ones(first.shape, bool))
    gap = np.abs(np.asarray(fresh.log_prob(traj.action)) - np.asarray(traj.log_prob))
    assert gap[first].max() < 1e-5
    assert gap[~first].min() > 1e-3  # elsewhere the GRU carries the episode so far
    np.testing.assert_array_equal(np.asarray(traj.episode_start), first)


@pytest.mark.slow
def test_the_update_replays_each_rollout_from_its_stored_first_state():
    # rollouts of 6 steps: the second one starts mid-episode, from a GRU state that is not the initial one
    config = _cue_config(num_steps=6, num_envs=4)
    train, states, trajs = _two_rollouts(config)
    replay = jax.jit(train.replay)
    for state, traj in zip(states, trajs, strict=True):
        log_prob, _, _ = replay(state.params, traj, state.memory.hidden)
        np.testing.assert_allclose(log_prob, traj.log_prob, atol=1e-5)
    # the check has power: the second rollout replayed from the initial state is not the rollout
    zeros = train.initial_memory(states[1].memory.hidden.shape[:-1])
    log_prob, _, _ = replay(states[1].params, trajs[1], zeros)
    assert np.abs(np.asarray(log_prob) - np.asarray(trajs[1].log_prob)).max() > 1e-3
    # inside the update: one epoch, one minibatch of every env (shuffled): the loss sees ratio 1
    one_step = make_train(config.replace(update_epochs=1, num_minibatches=1, chunk_updates=1))
    _, metrics = jax.jit(one_step.update_chunk)(states[1])
    assert float(metrics["approx_kl"][0]) < 1e-8 and float(metrics["clip_fraction"][0]) == 0.0


def test_a_replay_with_a_camera_encodes_its_steps_at_once_and_gives_the_rollout_log_probs():
    # the replay runs the encoder over every step in one batch, then the GRU step by step
    # (`encoder_features`); the rollout ran the encoder inside each step: the same log-probs
    config = from_dict({**TINY_CONFIG, "recurrent": "gru", "gru_size": 8, "num_seeds": 1})
    train = make_train(config)
    assert "visual" in train.env.observation_space(train.env_params).spaces
    rollout = jax.jit(train.rollout)
    state, _ = rollout(jax.jit(train.init)(jax.random.PRNGKey(0)))
    _, (traj, _) = rollout(state)  # starts mid-episode, from a GRU state that is not the initial one
    replay = jax.jit(train.replay)
    log_prob, _, _ = replay(state.params, traj, state.memory.hidden)
    np.testing.assert_allclose(log_prob, traj.log_prob, atol=1e-5)
    zeros = 0.0 * state.memory.hidden  # the check has power: the wrong first state is seen
    log_prob, _, _ = replay(state.params, traj, zeros)
    assert np.abs(np.asarray(log_prob) - np.asarray(traj.log_prob)).max() > 1e-3


def test_env_minibatches_keep_each_sequence_in_order_with_its_first_state():
    steps, num_envs, m = 3, 8, 4
    env = np.arange(num_envs)
    sequences = {"x": jnp.asarray(100 * env[None, :] + np.arange(steps)[:, None])}  # [T, N]: 100 n + t
    initial = jnp.asarray(100 * env)  # [N]
    mb_sequences, mb_initial = env_minibatches(jax.random.PRNGKey(1), (sequences, initial), m)
    x, first = np.asarray(mb_sequences["x"]), np.asarray(mb_initial)
    assert x.shape == (m, steps, num_envs // m) and first.shape == (m, num_envs // m)
    np.testing.assert_array_equal(x, first[:, None, :] + np.arange(steps)[None, :, None])
    assert sorted(first.ravel().tolist()) == (100 * env).tolist()  # every env once
    assert first.ravel().tolist() != (100 * env).tolist()  # shuffled


# ------------------------------------------------------------------------------------- learning
# slow: two trainings to a return threshold and their evaluations (~15-30 s); the default run keeps the
# GRU's per-episode resets and the update's replay above, which fail if the memory is carried wrongly
@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~1 min on a quiet CPU, 10x under load
def test_gru_recalls_the_first_step_cue_and_feed_forward_cannot():
    worlds = CUE_CONFIG["test_worlds"]
    results = {}
    for recurrent in ("gru", "none"):
        config = _cue_config(recurrent=recurrent, total_env_steps=16 * 16 * 16, chunk_updates=16)
        train = make_train(config)
        state, _ = jax.jit(train.update_chunk)(jax.jit(train.init)(jax.random.PRNGKey(0)))
        evaluation = HeldOutEvaluation(train, worlds)  # greedy and stochastic, the GRU memory carried
        totals = evaluation.trained_totals(jax.tree.map(lambda x: x[None], state.params))
        results[recurrent] = {k: float(v["return"].mean()) for k, v in totals.items()}
    best = EPISODE_STEPS - 1  # every step after the cue
    assert results["gru"]["greedy"] >= 0.95 * best and results["gru"]["stochastic"] >= 0.9 * best
    # feed-forward: the same observation on every later step, one greedy choice for both cues
    assert results["none"]["greedy"] <= 0.75 * best


# ----------------------------------------------------------------- runs: MAPPO, resume, evaluate
# slow: three trainings, two evaluations and a transfer, each compiling its recurrent program (~30 s);
# the default run keeps the GRU's resets and replay above and test_baselines_train's exact resume
@pytest.mark.slow
def test_recurrent_mappo_run_resumes_exactly_and_evaluates(tmp_path, capsys):
    values = {**TINY_CONFIG, "algo": "mappo", "recurrent": "gru", "gru_size": 8, "obs_normalization": True}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(values))
    common = ["--config", str(path), "--out-dir", str(tmp_path), "--no-progress"]
    assert train_main([*common, "--name", "straight"]) == 0
    assert train_main([*common, "--name", "split", "--max-chunks", "1"]) == 0
    assert train_main(["--resume", str(tmp_path / "split"), "--no-progress"]) == 0
    population = get_population(from_dict(values))
    straight, _ = checkpoint.restore(tmp_path / "straight", population.abstract_state())
    split, _ = checkpoint.restore(tmp_path / "split", population.abstract_state())
    assert straight.memory.hidden.shape == (2, 4, 3, 8)  # [seeds, envs, agents, gru_size]
    assert np.abs(np.asarray(straight.memory.hidden)).max() > 0
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(split), strict=True):
        np.testing.assert_array_equal(a, b)
    report = json.loads((tmp_path / "straight" / "eval.json").read_text())
    assert {"greedy", "stochastic", "scripted", "random"} <= set(report["policies"])
    assert (tmp_path / "straight" / "episode.gif").stat().st_size > 0
    # hivex evaluate reads the saved run the same way (same worlds, same numbers as the final evaluation)
    out = tmp_path / "again.json"
    assert evaluate_main([str(tmp_path / "straight"), "--out", str(out)]) == 0
    again = json.loads(out.read_text())
    for name in ("greedy", "stochastic"):
        assert again["policies"][name]["summary"] == report["policies"][name]["summary"]
    assert (
        evaluate_main(
            [str(tmp_path / "straight"), "--protocol", "hivex", "--agent-steps", "96", "--summary-freq", "48"]
        )
        == 0
    )
    capsys.readouterr()
    # hivex transfer carries the memory: in the training setting its cell is the final evaluation's greedy
    # result (same worlds, same key)
    argv = [str(tmp_path / "straight"), "--eval-grid", "num_agents=3", "--out", str(tmp_path / "t")]
    assert transfer_main([*argv, "--no-progress"]) == 0
    matrix = json.loads((tmp_path / "t" / "transfer.json").read_text())
    cells = matrix["cells"][next(iter(matrix["cells"]))]
    greedy = np.mean([w["return_per_seed"] for w in report["policies"]["greedy"]["per_world"]], axis=0)
    np.testing.assert_allclose(cells["num_agents=3"]["return_per_seed"], greedy, rtol=1e-5)
    assert cells["num_agents=3"]["scripted"] is not None


# -------------------------------------------------------------------------- per-branch entropy
def test_ppo_loss_entropy_bonus_replaces_the_single_coefficient():
    rng = np.random.default_rng(0)
    x = [jnp.asarray(rng.normal(size=6), jnp.float32) for _ in range(6)]
    mask = jnp.asarray([1, 1, 0, 1, 1, 1], bool)
    entropy, bonus = jnp.abs(x[3]), jnp.abs(x[5])
    args = (x[0], x[1], x[2], entropy, x[4], x[4], x[0], mask, 0.2, 0.0, 0.5)
    plain, metrics = ppo_loss(*args, 0.0)
    with_bonus, metrics_bonus = ppo_loss(*args, 0.0, True, bonus)
    kept = np.asarray(mask)
    np.testing.assert_allclose(plain - with_bonus, np.asarray(bonus)[kept].mean(), rtol=1e-5)
    assert metrics_bonus["entropy"] == metrics["entropy"]  # the metric stays the total entropy


# slow: four trainings, each its own program (~30 s); the loss-level check above stays in the default run
@pytest.mark.slow
def test_per_branch_entropy_coefficients_steer_each_part():
    # the cue env (a continuous dim and a discrete branch), feed-forward: small programs
    base = {**CUE_CONFIG, "total_env_steps": 16 * 16 * 4, "chunk_updates": 4}
    actor = Actor(1, (2,), (16,), ())  # its actor, as make_train builds it

    def trained(**changes):
        """Params, log_std and the mean discrete entropy on the last observations after one chunk."""
        train = make_train(from_dict({**base, **changes}))
        state, _ = jax.jit(train.update_chunk)(jax.jit(train.init)(jax.random.PRNGKey(0)))
        _, discrete = actor.apply(state.params["actor"], state.obs).entropy_parts()
        return state.params, np.asarray(state.params["actor"]["params"]["log_std"]), float(discrete.mean())

    default, default_log_std, default_discrete = trained()
    same, _, _ = trained(ent_coef_continuous=0.01, ent_coef_discrete=0.01)  # = ent_coef: the same run
    for a, b in zip(jax.tree.leaves(default), jax.tree.leaves(same), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    _, wide_log_std, wide_discrete = trained(ent_coef_continuous=1.0, ent_coef_discrete=0.0)
    assert np.all(wide_log_std > default_log_std + 1e-3) and wide_discrete < default_discrete + 1e-3
    _, flat_log_std, flat_discrete = trained(ent_coef_continuous=0.0, ent_coef_discrete=1.0)
    assert flat_discrete > default_discrete + 1e-3 and np.all(flat_log_std < wide_log_std)


# ------------------------------------------------------------------------- the cnn_channels rule
def test_cnn_channels_on_an_env_without_images_is_refused_but_old_runs_still_load():
    old = from_dict({"env_id": "WindFarmControl-v0", "cnn_channels": [16, 32]})  # the old default
    with pytest.raises(ConfigError, match=r"cnn_channels=\[16, 32\] builds convolutions") as error:
        validate_env(old)
    assert "\n" not in str(error.value)
    fitted = fit_saved_config(old)  # a saved run: the channels built nothing there
    assert fitted.cnn_channels == () and fitted.replace(cnn_channels=[16, 32]) == old
    validate_env(fitted)
    check_resume_config(old.to_dict(), fitted)  # resuming it is not a change of network
    # an env with images keeps its channels, and changing them on resume is refused
    tiny = from_dict(TINY_CONFIG)
    assert fit_saved_config(tiny) == tiny
    with pytest.raises(ResumeError, match="cannot change cnn_channels"):
        check_resume_config(tiny.to_dict(), tiny.replace(cnn_channels=[]))
