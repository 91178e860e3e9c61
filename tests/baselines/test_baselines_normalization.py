"""Running observation normalisation and return scaling in the trainer (`obs_normalization`,
`reward_scaling`): the running stats are the exact statistics of what was seen, they travel in
checkpoints and evaluation, the defaults leave the state as it was, and options the env cannot serve are
refused before compiling."""

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG, TinyEnv

import hivex_jax
from baselines.cli.train import train_main
from baselines.config import ConfigError, from_dict, validate_env
from baselines.core.kernels import merge_stats, normalize, running_stats_init
from baselines.core.ppo import make_train
from baselines.run import checkpoint
from baselines.run.evaluation import get_evaluation
from baselines.run.population import get_population
from baselines.run.runner import run_training
from hivex_jax.core import spaces
from hivex_jax.core.registry import _REGISTRY

pytestmark = pytest.mark.timeout(300)


def _config(**changes):
    return from_dict({**TINY_CONFIG, **changes})


# ----------------------------------------------------------------------------------------- kernel
def test_merge_stats_of_uneven_weighted_batches_equals_numpy():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (n, 4)).astype(np.float32) for n in (1, 7, 50)]
    masks = [rng.random(len(b)) < 0.6 for b in batches]
    masks[0][:] = True
    stats = running_stats_init((4,))
    unweighted = running_stats_init((4,))
    for batch, mask in zip(batches, masks, strict=True):
        stats = merge_stats(stats, jnp.asarray(batch), jnp.asarray(mask))
        unweighted = merge_stats(unweighted, jnp.asarray(batch))
    everything = np.concatenate(batches)
    kept = everything[np.concatenate(masks)]
    np.testing.assert_allclose(stats.mean, kept.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, kept.var(0), rtol=1e-4)
    assert float(stats.count) == len(kept)
    np.testing.assert_allclose(unweighted.mean, everything.mean(0), rtol=1e-5)
    np.testing.assert_allclose(unweighted.var, everything.var(0), rtol=1e-4)
    # an all-masked batch changes nothing (no division by zero)
    same = merge_stats(stats, jnp.ones((3, 4)), jnp.zeros(3))
    np.testing.assert_array_equal(same.mean, stats.mean)
    np.testing.assert_allclose(same.var, stats.var, rtol=1e-6)
    # normalising: hand-computed, then clipped
    x = jnp.array([[3.0, 5.0]])
    hand = running_stats_init((2,)).replace(mean=jnp.array([1.0, 1.0]), var=jnp.array([4.0, 0.01]))
    np.testing.assert_allclose(normalize(hand, x, clip=10.0), [[1.0, 10.0]], rtol=1e-5)


# ---------------------------------------------------------------------------- inside the update
def _two_updates(config):
    """One seed: the state after init, after 1 and 2 updates, and each update's rollout (re-run from
    the state the update started from: the rollout is a pure function of it)."""
    train = make_train(config)
    update = jax.jit(train.update_chunk)
    rollout = jax.jit(train.rollout)
    state0 = jax.jit(train.init)(jax.random.PRNGKey(3))
    state1, metrics1 = update(state0)
    state2, _ = update(state1)
    return train, (state0, state1, state2), (rollout(state0), rollout(state1)), metrics1


def test_running_obs_stats_are_numpys_over_every_observation_seen():
    # MAPPO: the actor's stats (IPPO's, whose critic shares them) and the critic's own
    config = _config(algo="mappo", obs_normalization=True, chunk_updates=1)
    train, (state0, _, state2), ((_, (traj1, _)), (after2, (traj2, _))), _ = _two_updates(config)
    # every observation handed to the policy, once: both rollouts' inputs, then where the second stopped
    seen = np.concatenate(
        [
            np.asarray(traj1.obs["vector"]),
            np.asarray(traj2.obs["vector"]),
            np.asarray(after2.obs["vector"])[None],
        ]
    )
    rows = seen.reshape(-1, seen.shape[-1])
    stats = state2.params["obs_norm"]["actor"]
    np.testing.assert_allclose(stats.mean, rows.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.var, rows.var(0), rtol=1e-4, atol=1e-6)
    assert float(stats.count) == len(rows)
    # at init: the reset observations (the first rollout's first inputs) only
    reset_rows = np.asarray(traj1.obs["vector"][0]).reshape(-1, seen.shape[-1])
    np.testing.assert_allclose(
        state0.params["obs_norm"]["actor"].mean, reset_rows.mean(0), rtol=1e-5, atol=1e-6
    )
    # the critic's own stats: the one-hot ids' columns average exactly 1 / A
    critic = state2.params["obs_norm"]["critic"]
    assert float(critic.count) == float(stats.count)
    a = train.env.num_agents
    np.testing.assert_allclose(critic.mean[-a:], np.full(a, 1.0 / a), rtol=1e-5)
    np.testing.assert_allclose(critic.var[-a:], np.full(a, (1.0 / a) * (1 - 1.0 / a)), rtol=1e-4)


def test_return_scaling_stats_follow_the_discounted_return_and_reports_stay_unscaled():
    gamma = 0.9
    config = _config(reward_scaling="return_std", chunk_updates=1, gamma=gamma)
    _, (state0, _, state2), ((_, (traj1, _)), (_, (traj2, _))), metrics_scaled = _two_updates(config)
    # G_t = r_t + gamma * G_{t-1}, restarted after each episode end, by hand over both rollouts
    rewards = np.concatenate([traj1.reward, traj2.reward])
    ends = np.concatenate([traj1.episode_end, traj2.episode_end])
    active = np.concatenate([traj1.active, traj2.active])
    assert ends.any() and not active.all()  # the case covers restarts and inactive agents
    g = np.zeros(rewards.shape[1:], np.float64)
    returns = []
    for t in range(len(rewards)):
        g = gamma * g + rewards[t]
        returns.append(g.copy())
        g = np.where(ends[t], 0.0, g)
    returns = np.stack(returns)
    stats = state2.returns.stats
    np.testing.assert_allclose(stats.mean, returns[active].mean(), rtol=1e-4)
    np.testing.assert_allclose(stats.var, returns[active].var(), rtol=1e-3)
    assert float(stats.count) == active.sum()
    np.testing.assert_allclose(state2.returns.discounted_return, g, rtol=1e-4, atol=1e-6)
    # the reported metrics are the env's: same first rollout as without scaling, same numbers
    plain = make_train(_config(chunk_updates=1, gamma=gamma))
    plain_state = jax.jit(plain.init)(jax.random.PRNGKey(3))
    _, metrics_plain = jax.jit(plain.update_chunk)(plain_state)
    for key in ("step_reward", "episode_return_sum", "episodes"):
        np.testing.assert_array_equal(metrics_scaled[key], metrics_plain[key])
    assert not np.allclose(metrics_scaled["value_loss"], metrics_plain["value_loss"])  # targets scaled


def test_defaults_leave_the_state_as_without_the_switches():
    train = make_train(_config())
    state = jax.eval_shape(train.init, jax.random.PRNGKey(0))
    assert set(state.params) == {"actor", "critic"} and state.returns is None
    on = make_train(_config(obs_normalization=True, reward_scaling="return_std"))
    state_on = jax.eval_shape(on.init, jax.random.PRNGKey(0))
    assert set(state_on.params) == {"actor", "critic", "obs_norm"} and state_on.returns is not None
    # the optimiser state does not hold the stats (the optimiser never moves them)
    assert jax.tree.structure(state.opt_state) == jax.tree.structure(state_on.opt_state)


# ------------------------------------------------------------------ checkpoints and evaluation
# slow: three trainings and two evaluations (~25 s); the stats' exactness above, their place in the state
# (test_defaults_leave_the_state_as_without_the_switches) and test_baselines_train's exact resume stay
@pytest.mark.slow
def test_resumed_run_has_the_same_stats_and_evaluation_reads_them(tmp_path):
    config = _config(obs_normalization=True, reward_scaling="return_std", gif_frames=0)
    quiet = {"progress": False, "log": lambda *a: None}
    run_training(config, tmp_path / "straight", outputs=False, **quiet)
    run_training(config, tmp_path / "resumed", max_chunks=1, **quiet)
    run_training(config, tmp_path / "resumed", resume=True, outputs=False, **quiet)
    population = get_population(config)
    straight, _ = checkpoint.restore(tmp_path / "straight", population.abstract_state())
    resumed, _ = checkpoint.restore(tmp_path / "resumed", population.abstract_state())
    init_count = population.init().params["obs_norm"]["actor"].count
    assert np.all(np.asarray(straight.params["obs_norm"]["actor"].count) > np.asarray(init_count))
    for a, b in zip(
        jax.tree.leaves((straight.params, straight.returns)),
        jax.tree.leaves((resumed.params, resumed.returns)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    # evaluation normalises with the saved stats: identity stats give another greedy result
    evaluation = get_evaluation(population, config.test_worlds)
    with_stats = evaluation.trained_totals(straight.params)["greedy"]["return"]
    identity = {
        k: s.replace(mean=jnp.zeros_like(s.mean), var=jnp.ones_like(s.var))
        for k, s in straight.params["obs_norm"].items()
    }
    without = evaluation.trained_totals({**straight.params, "obs_norm": identity})["greedy"]["return"]
    assert not np.allclose(with_stats, without)


# ------------------------------------------------------------------------------------ bad input
class _VisualOnlyEnv(TinyEnv):
    env_id = "TinyVisualOnly-v0"
    static_options: ClassVar[tuple[str, ...]] = ("num_agents",)

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"visual": spaces.Box(0, 255, (self.num_agents, 8, 8, 1), jnp.uint8)})

    def _observe(self, state, params) -> dict:
        return {"visual": super()._observe(state, params)["visual"]}


def test_options_the_env_cannot_serve_are_refused_in_one_line(tmp_path, capsys):
    if _VisualOnlyEnv.env_id not in _REGISTRY:
        hivex_jax.register(_VisualOnlyEnv.env_id, _VisualOnlyEnv, description="no vector obs")
    for changes, words in (
        ({"obs_normalization": True}, "obs_normalization normalises obs['vector']"),
        ({"algo": "mappo", "critic_local_obs": True}, "critic_local_obs appends obs['vector']"),
    ):
        config = _config(env_id=_VisualOnlyEnv.env_id, **changes)
        for check in (validate_env, make_train):
            with pytest.raises(ConfigError, match=r"\(3, 8, 8, 1\)") as error:
                check(config)
            assert words in str(error.value) and "\n" not in str(error.value)
    make_train(_config(env_id=_VisualOnlyEnv.env_id))  # the defaults fit a visual-only env
    with pytest.raises(ConfigError, match="reward_scaling must be one of"):
        _config(reward_scaling="reward_std")
    with pytest.raises(ConfigError, match="obs_norm_clip must be > 0"):
        _config(obs_norm_clip=0.0)
    # `hivex train` says it in one line, before compiling (exit status 2)
    path = tmp_path / "visual_only.yaml"
    path.write_text(yaml.safe_dump({**TINY_CONFIG, "env_id": _VisualOnlyEnv.env_id}))
    assert train_main(["--config", str(path), "--no-progress", "obs_normalization=true"]) == 2
    err = capsys.readouterr().err.strip()
    assert "obs_normalization normalises" in err and len(err.splitlines()) == 1


class _VectorOnlyEnv(TinyEnv):
    env_id = "TinyVectorOnly-v0"
    static_options: ClassVar[tuple[str, ...]] = ("num_agents",)

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"vector": super().observation_space(params).spaces["vector"]})

    def _observe(self, state, params) -> dict:
        return {"vector": super()._observe(state, params)["vector"]}


def test_a_critic_image_the_env_does_not_have_is_refused_in_one_line():
    if _VectorOnlyEnv.env_id not in _REGISTRY:
        hivex_jax.register(_VectorOnlyEnv.env_id, _VectorOnlyEnv, description="no visual obs")
    config = _config(env_id=_VectorOnlyEnv.env_id, algo="mappo", cnn_channels=[], critic_local_visual=True)
    for check in (validate_env, make_train):
        with pytest.raises(
            ConfigError, match=r"critic_local_visual gives MAPPO's critic obs\['visual'\]"
        ) as error:
            check(config)
        assert "\n" not in str(error.value) and "set critic_local_visual=false" in str(error.value)
    make_train(config.replace(critic_local_visual=False))  # the same config without it fits
