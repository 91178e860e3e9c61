"""The trainer with the message channel (`hivex_jax.make(..., message_vocab=v | message_dims=k)`):
config keys forwarded into `env_options`, bad options refused before compiling, the scripted and random
baselines acting in the widened action space, `hivex evaluate` overrides of the channel (zero-shot
`message_loss=1`), and (slow) IPPO / MAPPO runs with discrete and continuous messages, GRU and obs
normalisation, plus a referential game where only a trained speaker-listener pair scores fully."""

import json

import jax
import numpy as np
import pytest
import yaml
from message_game_env import EPISODE_STEPS, SIGNAL_CONFIG
from message_game_env import register as register_signal_game
from trainer_fake_env import ENV_ID, TINY_CONFIG

import hivex_jax
from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.config import ConfigError, from_dict, load_config, make_env, validate_env
from baselines.core.kernels import share_rewards
from baselines.core.ppo import make_train
from baselines.run.eval_policies import baseline_policies
from baselines.run.evaluation import HeldOutEvaluation
from baselines.run.transfer import eval_config
from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import seed_range, world_key

pytestmark = pytest.mark.timeout(600)


def _write(tmp_path, **changes):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY_CONFIG, **changes}))
    return str(path)


# ------------------------------------------------------------------------------- config (no compile)
def test_message_keys_are_forwarded_into_env_options(tmp_path):
    config = load_config(_write(tmp_path), ["message_vocab=2", "message_loss=0.5"])
    assert config.env_options == {"message_vocab": 2, "message_loss": 0.5}
    # the command line replaces the file's value, and leaves its other options alone
    path = _write(tmp_path, env_options={"message_vocab": 2, "message_noise": 0.1})
    config = load_config(path, ["message_vocab=3"])
    assert config.env_options == {"message_vocab": 3, "message_noise": 0.1}
    env, params = make_env(load_config(path, ["message_vocab=null", "message_noise=null"]))  # channel off
    assert env.observation_space(params)["vector"].shape == (3, 6) and env.discrete_branches == (2, 3)
    with pytest.raises(ConfigError, match="message_vocab or env_options.message_vocab"):
        from_dict({**TINY_CONFIG, "message_vocab": 2, "env_options": {"message_vocab": 2}})
    # the env the trainer builds hears the 2 other agents: 2 one-hot slots of 3 at the end of `vector`
    env, params = make_env(load_config(_write(tmp_path), ["message_vocab=3"]))
    assert env.observation_space(params)["vector"].shape == (3, 3 + 3 + 2 * 3)
    assert env.discrete_branches == (2, 3, 3)
    env, params = make_env(load_config(_write(tmp_path), ["message_dims=2"]))
    assert env.continuous_dims == 1 + 2
    assert env.observation_space(params)["vector"].shape == (3, 6 + 2 * (2 + 1))


@pytest.mark.parametrize(
    ("override", "named"),
    [
        (["message_vocab=1"], "message_vocab"),
        (["message_dims=0"], "message_dims"),
        (["message_vocab=2", "message_loss=1.5"], "message_loss"),
        (["message_dims=1", "message_noise=-1"], "message_noise"),
        (["message_loss=0.5"], "message_dims=k"),  # loss without a channel
        (["message_vocab=2", "message_dims=1"], "exactly one"),
        (["message_vocab=2", "message_range=far"], "message_range"),
    ],
)
def test_bad_message_options_are_one_line_errors_before_compiling(tmp_path, capsys, override, named):
    assert train_main(["--config", _write(tmp_path), "--out-dir", str(tmp_path), *override]) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and "\n" not in err
    assert not list(tmp_path.glob("*/config.yaml"))  # nothing started


@pytest.mark.parametrize(
    "channel", [{"message_vocab": 3}, pytest.param({"message_dims": 2}, marks=pytest.mark.slow)]
)
def test_baselines_act_in_the_widened_action_space(channel):
    env, params = hivex_jax.make(ENV_ID, num_agents=3, **channel)
    plain_env, _ = hivex_jax.make(ENV_ID, num_agents=3)
    names, policy = baseline_policies(env, params)
    assert names == ["scripted", "random"]

    @jax.jit  # one program: eager calls cost more here than compiling once
    def run(key):
        obs, state = env.reset(key, params)
        plain_obs, _ = plain_env.reset(key, params)
        scripted = policy(0, key, obs, state)
        randoms = jax.vmap(lambda k: policy(1, k, obs, state))(jax.random.split(key, 8))  # [8, A, ...]
        stepped = env.step(key, state, scripted, params)[0]  # a valid action of the wrapped env
        return scripted, plain_env.scripted_policy(plain_obs, params), randoms, stepped

    scripted, plain, randoms, stepped = run(jax.random.PRNGKey(0))
    # the env's own controller on its part of the action, and a neutral message (symbol 0 / zeros)
    np.testing.assert_array_equal(scripted["discrete"][:, :2], plain["discrete"])
    np.testing.assert_array_equal(scripted["continuous"][:, :1], plain["continuous"])
    message = scripted["discrete"][:, 2:] if "message_vocab" in channel else scripted["continuous"][:, 1:]
    assert message.shape == (3, 1 if "message_vocab" in channel else 2) and not np.any(message)
    if "message_vocab" in channel:  # random speaks every symbol
        assert set(np.unique(randoms["discrete"][..., 2]).tolist()) == {0, 1, 2}
    else:
        assert np.asarray(randoms["continuous"][..., 1:]).std() > 0.1
    assert stepped["vector"].shape == env.observation_space(params)["vector"].shape


def test_evaluate_overrides_reach_the_channel(tmp_path):
    config = load_config(_write(tmp_path), ["message_vocab=2"])
    lossy = eval_config(config, ["message_loss=1"])  # zero-shot ablation of a trained speaker
    assert lossy.env_options == {"message_vocab": 2, "message_loss": 1}
    assert eval_config(config, ["env_options.message_noise=0.3"]).env_options["message_noise"] == 0.3
    plain = load_config(_write(tmp_path))
    with pytest.raises(UserError):  # a policy without messages cannot read a widened observation
        eval_config(plain, ["message_vocab=2"])
    validate_env(lossy)


def test_reward_sharing_mixes_in_the_mean_of_the_active_agents(tmp_path):
    reward = np.asarray([[3.0, 0.0, 6.0], [1.0, 2.0, 9.0]], np.float32)  # [envs, agents]
    active = np.asarray([[True, True, True], [True, True, False]])
    team = share_rewards(reward, active, 1.0)
    np.testing.assert_allclose(team, [[3.0, 3.0, 3.0], [1.5, 1.5, 0.0]])  # the inactive 9 counts nowhere
    half = share_rewards(reward, active, 0.5)
    np.testing.assert_allclose(half, [[3.0, 1.5, 4.5], [1.25, 1.75, 0.0]])
    np.testing.assert_allclose(share_rewards(reward, active, 0.0), reward * active)
    with pytest.raises(ConfigError, match="train_reward_sharing"):
        load_config(_write(tmp_path), ["train_reward_sharing=1.5"])


# ------------------------------------------------------------------------------------ runs (slow)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("algo", "channel"),
    [("ippo", ["message_vocab=2"]), ("mappo", ["message_dims=2", "message_noise=0.2"])],
)
def test_runs_with_messages_train_checkpoint_and_evaluate(tmp_path, algo, channel):
    common = ["--config", _write(tmp_path, algo=algo), "--out-dir", str(tmp_path), "--no-progress"]
    assert train_main([*common, "--name", "run", "message_loss=0.5", *channel]) == 0
    run = tmp_path / "run"
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["env_options"]["message_loss"] == 0.5
    report = json.loads((run / "eval.json").read_text())
    assert set(report["policies"]) == {"greedy", "stochastic", "scripted", "random"}
    for policy in report["policies"].values():
        assert np.isfinite(policy["summary"]["mean"])
    assert evaluate_main([str(run), "--worlds", "300:302"]) == 0
    assert (run / "eval_300-301.json").is_file()
    out = tmp_path / "lossy.json"
    assert evaluate_main([str(run), "--worlds", "300:302", "--out", str(out), "message_loss=1"]) == 0
    lossy = json.loads(out.read_text())
    assert lossy["eval_setting"]["env_options"]["message_loss"] == 1


@pytest.mark.slow
def test_gru_and_obs_normalisation_see_the_message_block(tmp_path):
    from baselines.run import checkpoint
    from baselines.run.population import get_population

    path = _write(
        tmp_path, recurrent="gru", gru_size=8, obs_normalization=True, env_options={"message_vocab": 4}
    )
    assert train_main(["--config", path, "--out-dir", str(tmp_path), "--no-progress", "--name", "gru"]) == 0
    population = get_population(from_dict(yaml.safe_load((tmp_path / "gru" / "config.yaml").read_text())))
    state, _ = checkpoint.restore(tmp_path / "gru", population.abstract_state())
    mean = np.asarray(state.params["obs_norm"]["actor"].mean)
    assert mean.shape[-1] == 6 + 2 * 4  # the statistics cover the heard one-hots too
    # a one-hot slot's running mean is the frequency of its symbol: the four of a slot sum to at most 1
    slots = mean[..., 6:].reshape(mean.shape[:-1] + (2, 4)).sum(-1)
    assert np.all(slots <= 1.0 + 1e-5) and np.all(slots > 0.0)


@pytest.mark.slow
def test_messages_win_the_signalling_game_and_lose_it_when_every_message_is_dropped():
    register_signal_game()
    returns = {}
    for name, channel in {
        "none": {},
        "messages": {"message_vocab": 2},
        "lossy": {"message_vocab": 2, "message_loss": 1.0},
    }.items():
        config = from_dict({**SIGNAL_CONFIG, "env_options": channel})
        train = make_train(config)
        state, _ = jax.jit(train.update_chunk)(jax.jit(train.init)(jax.random.PRNGKey(0)))
        totals = HeldOutEvaluation(train, SIGNAL_CONFIG["test_worlds"]).trained_totals(
            jax.tree.map(lambda x: x[None], state.params)
        )
        returns[name] = float(totals["greedy"]["return"].mean())
    best = (EPISODE_STEPS - 1) + 0.5  # every step after the first, and chance on the first
    assert returns["messages"] >= 0.9 * best, returns
    # Without a channel (or through one that drops everything) an agent can only guess from its own bit,
    # which says nothing of the partner's: the best such guess on these worlds picks, for each own bit,
    # the partner bit most of them have.
    env, params = hivex_jax.make(SIGNAL_CONFIG["env_id"])
    bits = np.stack(
        [np.asarray(env.reset(world_key(w), params)[1].bit) for w in seed_range(SIGNAL_CONFIG["test_worlds"])]
    )
    pairs = np.stack([bits, bits[:, ::-1]], axis=-1).reshape(-1, 2)  # (own, partner) per agent and world
    counts = np.zeros((2, 2))
    np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
    uninformed = EPISODE_STEPS * counts.max(axis=1).sum() / len(pairs)
    assert uninformed < 0.75 * best  # the bound leaves the channel's gain visible
    assert returns["none"] <= uninformed + 1e-4 and returns["lossy"] <= uninformed + 1e-4, (
        returns,
        uninformed,
    )
