"""End to end on the tiny env (visual + vector obs, hybrid actions, early termination): `hivex train`,
resume, `hivex evaluate`, per-seed outputs, MAPPO's critic alignment, and the throughput helper."""

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

import hivex_jax
from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.config import from_dict
from baselines.core.kernels import flatten_batch, shuffled_minibatches
from baselines.core.ppo import make_train
from baselines.run import checkpoint
from baselines.run.eval_policies import rows_in_turn
from baselines.run.files import cpu_model, format_results
from baselines.run.population import Population, get_population, seeds_in_turn
from hivex_jax.eval import score

pytestmark = pytest.mark.timeout(300)


def _write_config(tmp_path, **changes):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY_CONFIG, **changes}))
    return str(path)


def _csv(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_resume_evaluate_and_outputs(tmp_path, capsys):
    config = _write_config(tmp_path, num_seeds=4)
    common = ["--config", config, "--out-dir", str(tmp_path), "--no-progress"]
    assert train_main([*common, "--name", "straight"]) == 0
    # the same run, stopped after one chunk and resumed twice (a chunk per call, then the rest)
    assert train_main([*common, "--name", "split", "--max-chunks", "1"]) == 0
    split = tmp_path / "split"
    assert checkpoint.latest_step(split) == 2
    assert not (split / "eval.json").exists()
    assert train_main(["--resume", str(split), "--no-progress", "--max-chunks", "1"]) == 0
    assert train_main(["--resume", str(split), "--no-progress"]) == 0

    straight = tmp_path / "straight"
    for name in ("config.yaml", "metrics.csv", "learning_curve.png", "eval.json", "eval.png", "episode.gif"):
        assert (straight / name).stat().st_size > 0, name
    # resume continues exactly: same per-update metrics, evaluation and final parameters
    rows = _csv(straight / "metrics.csv")
    assert rows == _csv(split / "metrics.csv")
    assert len(rows) == 6
    a, b = (json.loads((d / "eval.json").read_text()) for d in (straight, split))
    assert a["policies"] == b["policies"]
    cfg = from_dict(yaml.safe_load((straight / "config.yaml").read_text()))
    abstract = Population(make_train(cfg)).abstract_state()
    state_a, meta = checkpoint.restore(straight, abstract)
    state_b, _ = checkpoint.restore(split, abstract)
    for x, y in zip(jax.tree.leaves(state_a), jax.tree.leaves(state_b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert meta["env_id"] == "TinyTrainerTest-v0" and meta["jax_version"] == jax.__version__
    assert meta["config"]["num_seeds"] == 4

    # one CSV column set per seed
    header = list(rows[0])
    for s in range(4):
        assert f"seed_{s}/step_reward" in header and f"seed_{s}/test_return_greedy" in header
    assert "seed_4/step_reward" not in header
    assert rows[3]["seed_2/test_return_greedy"] != "" and rows[2]["seed_2/test_return_greedy"] == ""

    # eval.json: per test world, every seed, both trained variants and the baselines
    assert a["worlds"] == [200, 201]
    assert a["episode_steps"] is None  # the run plays full episodes: its header says so, not "--steps"
    assert "full episodes" in format_results(a) and "--steps" not in format_results(a)
    assert set(a["policies"]) == {"greedy", "stochastic", "scripted", "random"}
    world = a["policies"]["greedy"]["per_world"][0]
    assert len(world["return_per_seed"]) == 4 and set(world["reward_terms"]) == {
        "closeness",
        "direction_bonus",
        "branch_bonus",
    }
    assert "distance" in world["stats"]
    means = {n: p["summary"]["mean"] for n, p in a["policies"].items()}
    expected = score.as_json(score.normalised_score(means["greedy"], means["scripted"], means["random"]))
    assert a["normalised_score"]["greedy"] == expected and "ratio_to_scripted" not in a
    agents = np.asarray(world["return_per_agent"])  # [seeds, agents]: the return is their mean
    assert agents.shape == (4, 3) and np.allclose(agents.mean(-1), world["return_per_seed"], rtol=1e-6)
    scripted = a["policies"]["scripted"]["per_world"][1]
    assert np.mean(scripted["return_per_agent"]) == pytest.approx(scripted["return_mean"], rel=1e-6)

    # hivex evaluate on other worlds
    assert evaluate_main([str(straight), "--worlds", "300:302"]) == 0
    other = json.loads((straight / "eval_300-301.json").read_text())
    assert (straight / "eval_300-301.png").stat().st_size > 0
    assert other["worlds"] == [300, 301] and other["updates_done"] == 6
    assert other["worlds_in_train_pool"] == 0 and other["episode_steps"] is None
    assert set(other["normalised_score"]) == {"greedy", "stochastic"}  # hivex evaluate's JSON too
    # shorter episodes go to their own file and say so; the full-episode file stays
    assert evaluate_main([str(straight), "--worlds", "300:302", "--steps", "3"]) == 0
    short = json.loads((straight / "eval_300-301__steps3.json").read_text())
    assert short["episode_steps"] == 3 and max(short["policies"]["greedy"]["per_world"][0]["length"]) <= 3
    assert "episodes cut at 3 steps" in capsys.readouterr().out
    assert json.loads((straight / "eval_300-301.json").read_text()) == other
    # on training worlds (the generalisation gap's other side) the results say so
    assert evaluate_main([str(straight), "--worlds", "109:111", "--no-baselines"]) == 0
    assert json.loads((straight / "eval_109-110.json").read_text())["worlds_in_train_pool"] == 1
    assert "2 worlds (1 of them in the train pool)" in capsys.readouterr().out
    assert len(other["policies"]["stochastic"]["per_world"][1]["return_per_seed"]) == 4
    assert other["protocol"] == "held-out"
    assert other["aggregates"]["interval"] == "rliable stratified bootstrap 95% CI"  # robust
    assert other["aggregates"]["policies"]["greedy"]["num_runs"] == 4  # aggregates over seeds x worlds

    # HIVEX's protocol: run i = seed i, one world after another, windows of agent steps
    hivex = ["--protocol", "hivex", "--agent-steps", "72", "--summary-freq", "36", "--runs", "2"]
    assert evaluate_main([str(straight), *hivex]) == 0
    h = json.loads((straight / "eval_hivex.json").read_text())
    assert h["protocol"] == "hivex" and h["test_run"]["agent_steps"] == 72
    assert set(h["policies"]) == {"stochastic", "scripted", "random"}
    assert len(h["policies"]["stochastic"]["runs"]) == 2 and len(h["policies"]["scripted"]["runs"]) == 1
    assert len(h["policies"]["random"]["runs"]) == 1  # parameter-free: a second run would repeat it
    stochastic = h["policies"]["stochastic"]
    assert stochastic["cell"] == pytest.approx(np.mean([r["mean"] for r in stochastic["runs"]]))
    assert all(r["agent_steps"] == 72 and 1 <= len(r["summary_points"]) <= 2 for r in stochastic["runs"])
    assert evaluate_main([str(straight), *hivex[:3]]) == 2  # the tiny env has no HIVEX budget: one-line error
    assert (
        evaluate_main(
            [
                str(straight),
                "--protocol",
                "hivex",
                "--runs",
                "5",
                "--agent-steps",
                "36",
                "--summary-freq",
                "36",
            ]
        )
        == 2
    )  # more runs than seeds


# slow: a two-combination sweep, rerun twice (~12-25 s); the default run keeps hivex sweep end to end in
# test_baselines_fused (a fused sweep with a frozen member) and sweep.json of a stubbed one-program-per-
# combination sweep in test_baselines_nonfinite
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sweep_tabulates_every_combination(tmp_path, capsys):
    from baselines.cli.sweep import sweep_main

    config = _write_config(tmp_path, num_seeds=4, gif_frames=0)
    args = ["--config", config, "--grid", "checkpoint_every=1,3", "--out-dir", str(tmp_path), "--no-progress"]
    assert sweep_main(args) == 0
    rows = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [r["combination"] for r in rows] == ["checkpoint_every=1", "checkpoint_every=3"]
    assert rows[0]["greedy"]["num_seeds"] == 4 and "ci95" in rows[1]["stochastic"]
    assert rows[0]["greedy"] == rows[1]["greedy"]  # host-only key: same training, same numbers
    assert "± " in (tmp_path / "sweep" / "sweep.md").read_text()
    assert (tmp_path / "sweep" / "sweep.png").stat().st_size > 0
    table = (tmp_path / "sweep" / "sweep.md").read_text().splitlines()
    assert table[2].count("±") == 2  # greedy and stochastic have 4 seeds; scripted and random ran once
    assert table[0].endswith("| normalised score (greedy / stochastic) |")
    aggregates = json.loads((tmp_path / "sweep" / "aggregates.json").read_text())
    assert list(aggregates["groups"]) == ["checkpoint_every=1", "checkpoint_every=3"]
    poi = aggregates["probability_of_improvement"]["checkpoint_every=3 over checkpoint_every=1"]
    assert poi["point"] == 0.5  # host-only key: the same scores, neither improves on the other
    assert (tmp_path / "sweep" / "profiles.png").stat().st_size > 0

    # a rerun reuses the finished combinations (a host-only key may change) ...
    before = (tmp_path / "sweep" / "sweep.json").read_text()
    assert sweep_main([*args, "gif_stride=3"]) == 0
    assert (tmp_path / "sweep" / "sweep.json").read_text() == before
    # ... but one with another training config is refused, naming what changed, before anything runs
    assert sweep_main([*args, "num_seeds=2"]) == 2
    err = capsys.readouterr().err
    assert "was trained with another config (num_seeds 4 -> 2)" in err and "--name" in err
    assert (tmp_path / "sweep" / "sweep.json").read_text() == before


@pytest.mark.slow  # two trainings (~20 s); test_baselines_fused's frozen member reaches and misses a target
@pytest.mark.timeout(300)
def test_stop_at_test_return_ends_at_the_first_evaluation_that_reaches_it(tmp_path):
    common = ["--out-dir", str(tmp_path), "--no-progress", "eval_every=1", "gif_frames=0"]
    # any return reaches -1e9: the run stops after its first chunk (update 2 of 6) with full outputs
    assert (
        train_main(
            ["--config", _write_config(tmp_path), *common, "--name", "low", "stop_at_test_return=-1e9"]
        )
        == 0
    )
    low = tmp_path / "low"
    summary = json.loads((low / "summary.json").read_text())
    assert summary["finished"] and summary["updates_done"] == 2
    target = summary["target"]
    assert target["reached"] and target["update"] == 2 and target["env_steps_per_seed"] == 2 * 32
    assert target["seconds_total"] >= summary["compile_s"] + target["wall_s"] and target["wall_s"] > 0
    rows = _csv(low / "metrics.csv")
    assert len(rows) == 2
    first_test = np.mean([float(rows[1][f"seed_{s}/test_return_greedy"]) for s in range(2)])
    assert target["test_return_greedy"] == pytest.approx(first_test, rel=1e-5)
    assert (low / "eval.json").exists() and checkpoint.latest_step(low) == 2
    # a target no policy reaches: every update runs and the summary says it was not reached
    assert (
        train_main(
            ["--config", _write_config(tmp_path), *common, "--name", "high", "stop_at_test_return=1e9"]
        )
        == 0
    )
    summary = json.loads((tmp_path / "high" / "summary.json").read_text())
    assert summary["updates_done"] == 6 and summary["target"] == {
        "stop_at_test_return": 1e9,
        "reached": False,
    }


@pytest.mark.timeout(300)
def test_cli_errors_come_before_compiling(tmp_path, capsys):
    assert train_main(["--resume", str(tmp_path / "nothing"), "--no-progress"]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    assert train_main(["--config", _write_config(tmp_path), "num_envs=3", "num_steps=3"]) == 2
    assert "not divisible into num_minibatches" in capsys.readouterr().err
    assert train_main(["--config", _write_config(tmp_path), "lerning_rate=1"]) == 2
    assert "unknown config key" in capsys.readouterr().err
    assert train_main(["--config", _write_config(tmp_path), "stop_at_test_return=10", "eval_every=0"]) == 2
    assert "needs eval_every >= 1" in capsys.readouterr().err
    assert evaluate_main([str(tmp_path)]) == 2


@pytest.mark.timeout(300)
@pytest.mark.parametrize("algo", ["ippo", pytest.param("mappo", marks=pytest.mark.slow)])
def test_population_metrics_are_per_seed_and_finite(algo):
    config = from_dict({**TINY_CONFIG, "algo": algo, "num_seeds": 4})
    population = get_population(config)  # IPPO: the program of the run above, from the cache
    state = population.init()
    state, metrics = population.chunk(state)
    for name, value in metrics.items():
        assert value.shape == (4, config.chunk_updates), name
        assert np.all(np.isfinite(value)), name
    assert np.all(metrics["active_fraction"] <= 1.0) and np.any(metrics["active_fraction"] < 1.0)
    assert int(state.update[0]) == config.chunk_updates
    assert not np.allclose(metrics["loss"][0], metrics["loss"][1])  # seeds are independent runs
    if algo == "ippo":  # seed i is the same run whatever the number of seeds
        solo = Population(make_train(config.replace(num_seeds=1)))
        _, solo_metrics = solo.chunk(solo.init())
        np.testing.assert_allclose(solo_metrics["loss"][0], metrics["loss"][0], rtol=1e-5, atol=1e-6)


def test_seeds_run_in_turn_only_on_one_cpu_device():
    class Device:
        def __init__(self, platform):
            self.platform = platform

    assert seeds_in_turn(jax.devices("cpu")[:1])
    assert not seeds_in_turn([Device("cpu"), Device("cpu")])  # sharded over devices: vmapped
    assert not seeds_in_turn([Device("gpu")])
    assert Population(make_train(from_dict(TINY_CONFIG))).in_turn == seeds_in_turn(jax.devices())


def test_evaluation_rows_run_in_turn_on_one_cpu_device_for_camera_envs_only():
    class Device:
        def __init__(self, platform):
            self.platform = platform

    one_cpu = jax.devices("cpu")[:1]
    for env_id, camera in [("AerialWildfireSuppression-v0", True), ("WindFarmControl-v0", False)]:
        env, params = hivex_jax.make(env_id)
        assert rows_in_turn(env, params, one_cpu) is camera, env_id
        assert not rows_in_turn(env, params, [Device("cpu"), Device("cpu")])
        assert not rows_in_turn(env, params, [Device("gpu")])


@pytest.mark.timeout(300)
def test_seeds_in_turn_are_the_vmapped_population():
    """Running the seeds in turn (`lax.map`, one CPU device) gives each seed the run the vmapped
    population gives it (to float32 rounding), with its own metrics row."""
    config = from_dict({**TINY_CONFIG, "num_seeds": 3, "chunk_updates": 2})
    runs = {}
    for in_turn in (True, False):
        population = Population(make_train(config))
        population.in_turn = in_turn
        state, metrics = population.chunk(population.init())
        runs[in_turn] = (jax.device_get(state.params), metrics)
    (params, metrics), (vmapped_params, vmapped_metrics) = runs[True], runs[False]
    assert metrics["loss"].shape == (3, 2)
    assert not np.allclose(metrics["loss"][0], metrics["loss"][2])  # each row its own seed
    for name, value in metrics.items():
        np.testing.assert_allclose(value, vmapped_metrics[name], rtol=1e-4, atol=1e-5, err_msg=name)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), params, vmapped_params)


@pytest.mark.timeout(300)
def test_mappo_critic_inputs_line_up_with_agents():
    """Each flattened (and shuffled) sample's critic input carries the global state of the sample's own
    env and time step and the one-hot id of the sample's own agent (JaxMARL's MAPPO once mixed them)."""
    config = from_dict({**TINY_CONFIG, "algo": "mappo", "num_envs": 4, "num_steps": 6})
    assert config.critic_agent_id and config.critic_local_obs
    train = make_train(config)
    runner = jax.jit(train.init)(jax.random.PRNGKey(3))
    _, (traj, _) = jax.jit(train.rollout)(runner)
    a, d = train.env.num_agents, 3 + train.env.num_agents  # tiny env: vector = x, goal, time, one-hot
    s = 3 * a + 1  # tiny env global state: every x, every goal, every alive flag, time
    assert traj.critic_obs["vector"].shape == (6, 4, a, s + d + a)
    batch = shuffled_minibatches(jax.random.PRNGKey(0), flatten_batch(traj), 3)
    obs = batch.obs["vector"].reshape(-1, d)
    critic = batch.critic_obs["vector"].reshape(-1, s + d + a)
    agent = jnp.argmax(obs[:, 3:], axis=-1)
    np.testing.assert_array_equal(critic[:, -a:], obs[:, 3:])  # own one-hot id
    np.testing.assert_array_equal(critic[:, s : s + d], obs)  # own local observation
    own_x = jnp.take_along_axis(critic[:, :a], agent[:, None], axis=1)[:, 0]
    own_goal = jnp.take_along_axis(critic[:, a : 2 * a], agent[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(own_x, obs[:, 0])  # global state of the sample's own env and step
    np.testing.assert_array_equal(own_goal, obs[:, 1])
    np.testing.assert_array_equal(critic[:, s - 1], obs[:, 2])  # same time step


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_mappo_critic_local_visual_gives_the_critic_each_agents_own_image():
    """With `critic_local_visual` the critic's input carries the agent's own `visual` obs beside the global
    state, and the critic gains a CNN of its own; off (the default), neither."""
    base = {**TINY_CONFIG, "algo": "mappo", "num_envs": 4, "num_steps": 6}
    assert not from_dict(base).critic_local_visual
    train = make_train(from_dict({**base, "critic_local_visual": True}))
    runner = jax.jit(train.init)(jax.random.PRNGKey(3))
    _, (traj, _) = jax.jit(train.rollout)(runner)
    np.testing.assert_array_equal(traj.critic_obs["visual"], traj.obs["visual"])
    assert not np.all(traj.obs["visual"] == traj.obs["visual"][:, :, :1])  # the agents' images differ
    plain = make_train(from_dict(base))
    plain_runner = jax.jit(plain.init)(jax.random.PRNGKey(3))
    _, (plain_traj, _) = jax.jit(plain.rollout)(plain_runner)
    assert "visual" not in plain_traj.critic_obs
    # the same global state, own vector obs and id on the same reset worlds
    np.testing.assert_array_equal(plain_traj.critic_obs["vector"][0], traj.critic_obs["vector"][0])

    def convolutions(runner):
        return [
            k for k in jax.tree_util.tree_flatten_with_path(runner.params["critic"])[0] if "Conv" in str(k[0])
        ]

    assert convolutions(runner) and not convolutions(plain_runner)


@pytest.mark.timeout(300)
def test_early_termination_masks_inactive_agents():
    # 64-step rollouts: long enough that random walks leave [-0.95, 0.95] for some agents
    config = {**TINY_CONFIG, "num_seeds": 4, "num_steps": 64, "total_env_steps": 512}
    train = get_population(from_dict(config)).train
    runner = jax.jit(train.init)(jax.random.PRNGKey(0))
    rollout = jax.jit(train.rollout)
    runner, (first, _) = rollout(runner)
    _, (second, _) = rollout(runner)  # 16 steps: past the 12-step episodes
    traj = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), first, second)
    inactive = ~traj.active
    assert bool(jnp.any(inactive)), "the tiny env should retire some agents early"
    # an inactive agent earns nothing and counts as terminated (no bootstrap, masked out of the loss)
    assert float(jnp.abs(jnp.where(inactive, traj.reward, 0.0)).max()) == 0.0
    assert bool(jnp.all(jnp.where(inactive, traj.terminated, True)))


@pytest.mark.slow  # a benchmark helper's own compile and timed chunks (~12 s)
@pytest.mark.timeout(300)
def test_train_throughput_helper():
    from baselines.cli.bench import train_throughput

    overrides = [f"{k}={json.dumps(v)}" for k, v in {**TINY_CONFIG, "num_seeds": 4, "level": None}.items()]
    out = train_throughput(None, overrides, 2)
    assert {"env_steps_per_s", "agent_steps_per_s", "compile_s", "num_envs", "num_seeds"} <= set(out)
    assert out["agent_steps_per_s"] == pytest.approx(3 * out["env_steps_per_s"])
    assert out["num_envs"] == 4 and out["num_seeds"] == 4 and out["env_steps_per_s"] > 0
    assert out["seeds"] == ("in_turn" if seeds_in_turn(jax.devices()) else "vmap")
    assert train_throughput(None, overrides, 1, seeds="vmap")["seeds"] == "vmap"
    with pytest.raises(ValueError, match="seeds must be auto, vmap or in_turn"):
        train_throughput(None, overrides, 1, seeds="pmap")


@pytest.mark.timeout(120)
def test_critic_inputs_rows_follow_agents():
    from baselines.core.ppo import critic_inputs

    state = jnp.arange(10.0).reshape(2, 5)  # 2 envs, S = 5
    out = np.asarray(critic_inputs(state, 3, agent_id=True)["vector"])
    assert out.shape == (2, 3, 8)
    for n in range(2):
        for a in range(3):
            np.testing.assert_array_equal(out[n, a, :5], state[n])
            np.testing.assert_array_equal(out[n, a, 5:], np.eye(3)[a])
    local = jnp.arange(12.0).reshape(2, 3, 2) + 100
    out = np.asarray(critic_inputs(state, 3, agent_id=False, local_vector=local)["vector"])
    assert out.shape == (2, 3, 7)
    np.testing.assert_array_equal(out[1, 2, 5:], local[1, 2])


@pytest.mark.timeout(300)
def test_final_evaluation_reuses_the_last_chunks_held_out_play(tmp_path, monkeypatch):
    """The trained policy is played on the test worlds once per evaluation chunk, not once more for
    eval.json: 3 chunks with `eval_every: 2` evaluate after chunks 2 and 3, and eval.json's per-seed
    returns are the last chunk's `test_return_*` cells."""
    from baselines.run.evaluation import HeldOutEvaluation

    calls = []
    played = HeldOutEvaluation.trained_totals

    def counted(self, params):
        calls.append(1)
        return played(self, params)

    monkeypatch.setattr(HeldOutEvaluation, "trained_totals", counted)
    config = _write_config(tmp_path, gif_frames=0)
    assert train_main(["--config", config, "--out-dir", str(tmp_path), "--no-progress", "--name", "r"]) == 0
    assert len(calls) == 2
    last = _csv(tmp_path / "r" / "metrics.csv")[-1]
    policies = json.loads((tmp_path / "r" / "eval.json").read_text())["policies"]
    for variant in ("greedy", "stochastic"):
        per_seed = np.mean([w["return_per_seed"] for w in policies[variant]["per_world"]], axis=0)
        logged = [float(last[f"seed_{s}/test_return_{variant}"]) for s in range(2)]
        np.testing.assert_allclose(per_seed, logged, rtol=1e-5)  # the CSV keeps 6 digits
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["device"] == cpu_model() and summary["backend"] == "cpu"  # what it was measured on
