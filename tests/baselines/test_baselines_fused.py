"""Fused sweeps: combinations that differ only in data keys train as members of one program.

A member computes what its config computes alone: a one-member program gives the alone run's
metrics.csv (less wall_s) and eval.json byte for byte, with every data key away from its default (the
data path folds the same f32 constants). Several members: equal up to float summation order, because
XLA's CPU kernels batch the matmuls and reductions of 2 rows differently from those of 8 (documented in
docs/sweeps.md)."""

import csv
import json
import shutil

import jax
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.sweep import sweep_main
from baselines.config import from_dict
from baselines.core.ppo import make_train
from baselines.core.training_env import shared_pool_builder
from baselines.run import fused_plan
from baselines.run.fused import run_fused
from baselines.run.fused_plan import describe_plan, plan_programs, plan_sweep
from baselines.run.fused_population import FusedPopulation
from baselines.run.population import Population
from baselines.run.runner import run_training

BASE = {**TINY_CONFIG, "gif_frames": 0, "checkpoint_every": 3}
# every PPO data key away from its default, and an EnvParams field (the episode length)
ODD = {
    "lr": 3e-4,
    "gamma": 0.98,  # f32(0.98) * f32(0.9) != f32(0.98 * 0.9): the product must be the constant's
    "gae_lambda": 0.9,
    "clip_eps": 0.15,
    "clip_value_eps": 0.3,
    "vf_coef": 0.7,
    "ent_coef": 0.02,
    "ent_coef_discrete": 0.01,
    "max_grad_norm": 0.3,
    "env_params": {"max_steps": 10},
    # the training reward's weights, their anneal and sharing: a member's own arrays
    "train_reward_weights": {"closeness": 2.0},
    "train_reward_weights_anneal_updates": 5,
    "train_reward_sharing": 0.3,
    # the training env's curriculum: a member's own end values (the episode length 6 -> 10)
    "train_env_params": {"max_steps": 6},
    "train_env_params_anneal_updates": 4,
}
GRID = [("lr", ["1e-3", "3e-4"]), ("env_params.max_steps", ["10", "12"])]


def _rows(run_dir):
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.reader(f))
    drop = rows[0].index("wall_s")
    return [r[:drop] + r[drop + 1 :] for r in rows]


def _numbers(rows):
    return np.array([[float(x) if x else np.nan for x in r] for r in rows[1:]])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The grid as one fused `hivex sweep`, and each combination trained alone."""
    root = tmp_path_factory.mktemp("fused")
    config_file = root / "base.yaml"
    config_file.write_text(yaml.safe_dump({**BASE, "clip_value_eps": 0.2}))
    grid = [f"--grid={k}={','.join(v)}" for k, v in GRID]
    code = sweep_main(
        ["--config", str(config_file), *grid, "--name", "s", "--out-dir", str(root), "--no-progress"]
    )
    assert code == 0
    alone = {}  # two of the four (each alone run compiles its own programs): the diagonal
    for lr, steps in zip(GRID[0][1], GRID[1][1], strict=True):
        config = from_dict(
            {**BASE, "clip_value_eps": 0.2, "lr": float(lr), "env_params": {"max_steps": int(steps)}}
        )
        slug = f"lr={lr}_env_params.max_steps={steps}"
        run_training(config, root / "alone" / slug, progress=False, log=lambda *a: None)
        alone[slug] = root / "alone" / slug
    return root / "s", alone


@pytest.mark.slow  # an exact-equality check of two trainings (32 s of the default suite's 9 min)
@pytest.mark.xla_default_code  # bit for bit with XLA's default emitters (tests/conftest.py)
def test_one_member_program_is_the_alone_run_bit_for_bit(tmp_path):
    config = from_dict({**BASE, **ODD})
    run_training(config, tmp_path / "alone", progress=False, log=lambda *a: None)
    (summary,) = run_fused([config], [tmp_path / "fused"], progress=False, log=lambda *a: None)
    assert summary["finished"] and summary["fused_members"] == 1
    assert _rows(tmp_path / "fused") == _rows(tmp_path / "alone")
    assert (tmp_path / "fused" / "eval.json").read_bytes() == (tmp_path / "alone" / "eval.json").read_bytes()


@pytest.mark.slow  # a 4-member sweep and 2 alone runs: ~1 min on the loaded 2-core CPU
def test_fused_members_equal_their_alone_runs(sweep):
    sweep_dir, alone = sweep
    rows = json.loads((sweep_dir / "sweep.json").read_text())
    assert [r["combination"] for r in rows] == [
        f"lr={lr},env_params.max_steps={s}" for lr in GRID[0][1] for s in GRID[1][1]
    ]
    for slug, alone_dir in alone.items():
        member = sweep_dir / slug
        assert json.loads((member / "summary.json").read_text())["fused_members"] == 4
        fused_rows, alone_rows = _rows(member), _rows(alone_dir)
        assert fused_rows[0] == alone_rows[0] and len(fused_rows) == len(alone_rows)
        # float summation order of 8 batched rows vs 2: agreement to ~1e-6, far below lr's effect
        np.testing.assert_allclose(_numbers(fused_rows), _numbers(alone_rows), rtol=1e-4, atol=1e-5)
        fused_eval = json.loads((member / "eval.json").read_text())
        alone_eval = json.loads((alone_dir / "eval.json").read_text())
        for policy in ("greedy", "stochastic"):
            np.testing.assert_allclose(
                fused_eval["policies"][policy]["summary"]["mean"],
                alone_eval["policies"][policy]["summary"]["mean"],
                rtol=1e-4,
            )
        assert (member / "config.yaml").is_file() and any((member / "checkpoints").iterdir())
    # the members really differ: another lr, another episode length
    members = [sweep_dir / r["run_dir"].rsplit("/", 1)[-1] for r in rows]
    curves = {tuple(np.round(_numbers(_rows(m))[:, 3], 6)) for m in members}
    assert len(curves) == 4


def test_plan_fuses_data_keys_and_splits_static_ones():
    configs = [
        from_dict({**BASE, "lr": lr, "hidden_sizes": hidden, "init_log_std": std})
        for hidden in ([16], [8])
        for lr in (1e-3, 3e-4)
        for std in (-0.5,)
    ] + [from_dict({**BASE, "init_log_std": -1.0})]  # a data key the fused trainer does not take per member
    programs = plan_programs(configs)
    assert programs == [[0, 1], [2, 3], [4]]
    assert (
        describe_plan(programs, [2] * 5)
        == "3 programs: 2 members x 2 seeds, 2 members x 2 seeds, 1 member x 2 seeds"
    )
    assert plan_programs(configs, fuse=False) == [[0], [1], [2], [3], [4]]
    assert plan_programs(configs[:2] * 2, max_members=3) == [[0, 1, 2], [3]]
    assert plan_programs([from_dict({**BASE, "stop_at_test_return": 5.0})] * 2) == [[0, 1]]  # a run key
    # training-only env params are env data: one program (members split only if their pools differ)
    shorter = [from_dict({**BASE, "train_env_params": {"max_steps": m}}) for m in (4, 6)]
    assert plan_programs(shorter) == [[0, 1]]
    # training-reward weights and sharing are member arrays too, also beside a task grid
    weighted = [
        from_dict(
            {**BASE, "train_reward_weights": {"closeness": w}, "train_reward_sharing": share, "task": 0}
        )
        for w, share in ((2.0, 0.1), (0.5, 0.9))
    ]
    assert plan_programs(weighted) == [[0, 1]]
    rows = FusedPopulation([Population(make_train(c)) for c in weighted]).member_rows
    np.testing.assert_array_equal(rows["reward_start_weights"][:, 0], [2.0, 2.0, 0.5, 0.5])
    np.testing.assert_allclose(rows["reward_sharing"], [0.1, 0.1, 0.9, 0.9])
    # each member's rows carry its own training params; evaluation keeps the env's (12 steps)
    fused = FusedPopulation([Population(make_train(c)) for c in shorter])
    np.testing.assert_array_equal(fused.member_rows["env_params"].max_steps, [4, 4, 6, 6])
    assert [int(p.train.env_params.max_steps) for p in fused.members] == [12, 12]


# slow: a fused sweep whose diverging member compiles its own re-run (~20 s); the default run keeps the
# fused sweeps below (a frozen member, members split by pools) and test_baselines_nonfinite's divergence
@pytest.mark.slow
def test_a_diverging_member_is_tabulated_while_the_others_finish(tmp_path, capsys):
    config_file = tmp_path / "base.yaml"
    config_file.write_text(yaml.safe_dump(BASE))
    args = ["--config", str(config_file), "--grid", "lr=1e30,1e-3", "--name", "d", "--out-dir", str(tmp_path)]
    assert sweep_main([*args, "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "1 program: 2 members x 2 seeds" in out
    assert "hivex sweep: lr=1e30: seeds 0, 1 of 2: loss not finite (NaN/inf) at update" in err
    table = (tmp_path / "d" / "sweep.md").read_text()
    assert "| lr=1e30 | diverged (NaN/inf)" in table and "| lr=1e-3 | " in table
    assert json.loads((tmp_path / "d" / "lr=1e-3" / "summary.json").read_text())["finished"]


def test_max_members_must_be_positive(tmp_path, capsys):
    assert sweep_main(["--grid", "lr=1e-3,3e-4", "--max-members", "0", "--out-dir", str(tmp_path)]) == 2
    assert "--max-members must be at least 1; got 0" in capsys.readouterr().err


def test_members_that_fit_follow_the_memory_estimate(monkeypatch):
    # a stand-in population whose compiled chunk XLA estimates at 1 GiB per member, on a 2.5 GiB host
    from types import SimpleNamespace

    import baselines.run.memory
    from baselines.config.values import ConfigError
    from baselines.run.fused import members_that_fit

    gib = 2**30
    monkeypatch.setattr(baselines.run.memory, "device_memory_bytes", lambda device: int(2.5 * gib))

    def population(members):
        stats = SimpleNamespace(
            argument_size_in_bytes=members * gib, output_size_in_bytes=0, temp_size_in_bytes=0
        )
        fake = SimpleNamespace(
            members=[None] * members,
            config=from_dict(BASE),
            devices=[SimpleNamespace(platform="cpu", process_index=0)],
            abstract_state=lambda: None,
            compile_s=0.0,
        )
        fake.compile = lambda state: setattr(fake, "compiled", SimpleNamespace(memory_analysis=lambda: stats))
        return fake

    assert members_that_fit(population(2)) == 2
    assert members_that_fit(population(3)) == 2  # 3 GiB > 2.5: two members per program
    assert members_that_fit(population(8)) == 2
    monkeypatch.setattr(baselines.run.memory, "device_memory_bytes", lambda device: gib // 2)
    with pytest.raises(ConfigError, match="the run needs ~1.0 GiB"):
        members_that_fit(population(1))  # one member over the memory: refused as hivex train refuses it


@pytest.mark.slow
def test_members_whose_pools_differ_draw_from_their_own_pools_joined(monkeypatch):
    # Wildfire Resource Management's levels generate other worlds: their pregenerated pools differ
    wrm = {"env_id": "WildfireResourceManagement-v0", "train_worlds": "5000:5004", "num_envs": 2}
    configs = [from_dict({**wrm, "level": level}) for level in (1, 2)]
    programs, populations = plan_sweep(configs)
    assert programs == [[0, 1]]
    assert [populations[i].config.pregenerate_worlds for i in (0, 1)] == [True, True]
    assert [populations[i].config.level for i in (0, 1)] == [1, 2]
    fused = FusedPopulation([populations[0], populations[1]])
    joined = fused.train.training_env.pool
    own = [populations[i].train.training_env.pool for i in (0, 1)]
    assert joined.seeds.tolist() == [5000, 5001, 5002, 5003] * 2
    rows = jax.device_get(fused.member_rows)  # member-major rows: seeds of member 0, then member 1
    s = fused.config.num_seeds
    assert rows["train_world_index"][0].tolist() == [0, 1, 2, 3]
    assert rows["train_world_index"][s].tolist() == [4, 5, 6, 7]
    assert rows["train_world_count"].tolist() == [4] * (2 * s)
    for member in (0, 1):  # each member's segment is its own pool: its run alone's up to float rounding
        alone = make_train(configs[member]).training_env.pool  # the params as constants
        for x, y, z in zip(*(jax.tree.leaves(p.pool) for p in (own[member], joined, alone)), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y)[4 * member : 4 * member + 4])
            np.testing.assert_allclose(np.asarray(x), np.asarray(z), rtol=1e-6, atol=1e-6)
    assert not np.array_equal(*(np.asarray(jax.tree.leaves(p.pool)[0]) for p in own))
    # one compiled pool builder for both levels, the params as data
    keys = [populations[i].train.keys.setting_free for i in (0, 1)]
    assert keys[0] == keys[1]  # the levels differ only in their env setting
    builder = shared_pool_builder(keys[0], populations[0].train.env)
    assert builder is shared_pool_builder(keys[1], populations[1].train.env)
    assert builder._cache_size() == 1
    # one compiled init for both settings (their rows as data) gives each member its alone run's start
    assert fused._rows_init is not None
    state = jax.device_get(fused.init())
    for member in (0, 1):
        alone = jax.device_get(populations[member].init())
        rows = jax.tree.map(lambda x, m=member: x[m * s : (m + 1) * s], state)
        for x, y in zip(jax.tree.leaves(alone), jax.tree.leaves(rows), strict=True):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)
    # members whose pools agree keep one pregenerated pool
    same = [from_dict({**wrm, "level": 1, "lr": lr}) for lr in (1e-3, 3e-4)]
    programs, populations = plan_sweep(same)
    assert programs == [[0, 1]] and populations == {}
    # pools too big to hold together: the members generate their worlds at reset, still one program
    monkeypatch.setattr(fused_plan, "JOINED_POOL_MAX_BYTES", 1)
    programs, populations = plan_sweep(configs)
    assert programs == [[0, 1]]
    assert [populations[i].config.pregenerate_worlds for i in (0, 1)] == [False, False]


@pytest.mark.slow  # two fused sweeps (~1 min on the loaded CPU)
def test_a_stopped_population_resumes_as_one_and_ends_as_if_never_stopped(tmp_path, capsys):
    config_file = tmp_path / "base.yaml"
    config_file.write_text(yaml.safe_dump({**BASE, "checkpoint_every": 1}))
    args = [
        "--config",
        str(config_file),
        "--grid",
        "lr=1e-3,3e-4",
        "--out-dir",
        str(tmp_path),
        "--no-progress",
    ]
    assert sweep_main([*args, "--name", "s"]) == 0
    members = sorted(p for p in (tmp_path / "s").iterdir() if p.is_dir())
    whole = {m.name: (_rows(m), (m / "eval.json").read_text()) for m in members}
    for member in members:  # stopped after chunk 2 of 3: the last checkpoint and the final files gone
        shutil.rmtree(member / "checkpoints" / "6")  # named by update
        for name in ("summary.json", "eval.json"):
            (member / name).unlink()
    capsys.readouterr()
    assert sweep_main([*args, "--name", "s"]) == 0
    out = capsys.readouterr().out
    assert "1 program: 2 members x 2 seeds" in out and "resuming 2 members at update 4 of 6" in out
    for member in members:
        assert (_rows(member), (member / "eval.json").read_text()) == whole[member.name]


@pytest.mark.slow
def test_a_member_that_reaches_its_target_is_frozen_while_the_others_go_on(tmp_path, capsys):
    config_file = tmp_path / "base.yaml"
    config_file.write_text(yaml.safe_dump(BASE))  # 6 updates: evaluations after updates 4 and 6
    grid = ["--grid", "stop_at_test_return=-1e9,1e9"]
    args = ["--config", str(config_file), *grid, "--out-dir", str(tmp_path), "--name", "s", "--no-progress"]
    assert sweep_main(args) == 0
    assert "1 program: 2 members x 2 seeds" in capsys.readouterr().out
    reached = json.loads((tmp_path / "s" / "stop_at_test_return=-1e9" / "summary.json").read_text())
    assert reached["updates_done"] == 4 and reached["finished"]
    assert reached["target"]["reached"] and reached["target"]["update"] == 4
    assert [r[0] for r in _rows(tmp_path / "s" / "stop_at_test_return=-1e9")[1:]] == ["1", "2", "3", "4"]
    assert (tmp_path / "s" / "stop_at_test_return=-1e9" / "eval.json").is_file()
    missed = json.loads((tmp_path / "s" / "stop_at_test_return=1e9" / "summary.json").read_text())
    assert missed["updates_done"] == 6 and missed["target"] == {"stop_at_test_return": 1e9, "reached": False}
    assert len(_rows(tmp_path / "s" / "stop_at_test_return=1e9")) == 7  # header + 6 updates


def test_members_that_differ_in_update_only_keys_share_pool_init_and_evaluation(monkeypatch):
    """Configs that differ only in PPO scalars and `seed` (`member.UPDATE_ONLY_KEYS`) build one
    pregenerated pool, one compiled init and one held-out evaluation between them, not one per member;
    a fused population's rows still start where each member's own run starts (bit for bit). A key that
    reaches them (the level, `eval_seed`) does not share."""
    from baselines.run.evaluation import get_evaluation

    wrm = {"env_id": "WildfireResourceManagement-v0", "train_worlds": "5000:5004", "num_envs": 2}
    a = from_dict({**wrm, "lr": 1e-3})
    b = from_dict({**wrm, "lr": 3e-4, "ent_coef": 0.02, "gamma": 0.9, "seed": 7})
    train_a, train_b = make_train(a), make_train(b)  # built one after the other, as a sweep builds members
    assert train_a.training_env.pool is train_b.training_env.pool
    assert make_train(from_dict({**wrm, "level": 2})).training_env.pool is not train_a.training_env.pool

    members = [Population(train_a), Population(train_b)]
    evaluation_a, evaluation_b = (get_evaluation(m, "6000:6002") for m in members)
    assert evaluation_a.trained is evaluation_b.trained and evaluation_a.baselines is evaluation_b.baselines
    other_seed = get_evaluation(Population(make_train(a.replace(eval_seed=5))), "6000:6002")
    assert other_seed.trained is not evaluation_a.trained

    def not_compiled_again(key):
        raise AssertionError("member 1 compiled its own init")

    monkeypatch.setattr(members[1], "_init_one", not_compiled_again)
    state = FusedPopulation(members).init()
    alone = Population(make_train(b)).init()  # member 1's own run (seed 7)
    s = b.num_seeds
    for fused_leaf, alone_leaf in zip(jax.tree.leaves(state), jax.tree.leaves(alone), strict=True):
        np.testing.assert_array_equal(np.asarray(fused_leaf)[s : 2 * s], np.asarray(alone_leaf))


def test_baselines_of_exact_envs_play_every_setting_with_one_program(monkeypatch):
    """On an env listed in `BASELINES_EXACT_AS_DATA` the settings' baselines share one params-as-data
    program (no compile per setting) and score what each setting's own constant-params program scores."""
    import baselines.run.evaluation
    from baselines.run.evaluation import HeldOutEvaluation
    from baselines.run.fused import get_setting_evaluation

    monkeypatch.setattr(baselines.run.evaluation, "BASELINES_EXACT_AS_DATA", {TINY_CONFIG["env_id"]})
    configs = [from_dict({**BASE, "env_params": {"max_steps": n}}) for n in (10, 12)]
    populations = [Population(make_train(c)) for c in configs]
    shared = [get_setting_evaluation(p, BASE["test_worlds"], 12) for p in populations]
    assert shared[0].baselines.program is shared[1].baselines.program
    assert get_setting_evaluation(populations[1], BASE["test_worlds"], 12).baselines is shared[1].baselines
    for population, evaluation in zip(populations, shared, strict=True):
        own = HeldOutEvaluation(population.train, BASE["test_worlds"]).baseline_totals()
        for name, totals in evaluation.baseline_totals().items():
            for leaf, want in zip(jax.tree.leaves(totals), jax.tree.leaves(own[name]), strict=True):
                np.testing.assert_array_equal(leaf, want)
    lengths = [e.baseline_totals()["random"]["length"] for e in shared]
    assert lengths[0].max() <= 10 < lengths[1].max()  # each plays its own episode length


@pytest.mark.slow
def test_members_in_other_env_settings_share_one_evaluation_program():
    """`get_setting_evaluation`: populations that differ only in env settings (here the episode length,
    an `EnvParams` field) evaluate the trained policy with one compiled program, the params as data, and
    score what their own constant-params evaluation scores; the baselines play each setting's own
    constant-params program (the reference every run shares), equal to the run alone's."""
    from baselines.run.evaluation import HeldOutEvaluation
    from baselines.run.fused import get_setting_evaluation

    configs = [from_dict({**BASE, "env_params": {"max_steps": n}}) for n in (10, 12)]
    populations = [Population(make_train(c)) for c in configs]
    shared = [get_setting_evaluation(p, BASE["test_worlds"], 12) for p in populations]
    assert shared[0].trained is shared[1].trained and shared[0].baselines is not shared[1].baselines
    again = get_setting_evaluation(populations[1], BASE["test_worlds"], 12)
    assert again.baselines is shared[1].baselines  # one baselines program per setting
    for population, evaluation in zip(populations, shared, strict=True):
        params = population.init().params
        own = HeldOutEvaluation(population.train, BASE["test_worlds"])
        assert evaluation.train is population.train
        for name in ("greedy", "stochastic"):
            got, want = evaluation.trained_totals(params)[name], own.trained_totals(params)[name]
            np.testing.assert_allclose(got["return"], want["return"], rtol=1e-5)
            np.testing.assert_array_equal(got["length"], want["length"])
        baselines = evaluation.baseline_totals()
        for name, want in own.baseline_totals().items():
            np.testing.assert_array_equal(baselines[name]["return"], want["return"])
    lengths = [e.baseline_totals()["random"]["length"] for e in shared]
    assert lengths[0].max() <= 10 < lengths[1].max()  # each plays its own episode length
