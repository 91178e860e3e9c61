"""Training worlds per fused member (`baselines.core.training_env`): members whose
`train_worlds` differ share one pool of all their worlds and each draws from its own share, so a member
plays the worlds its run alone plays; `train_worlds` is a data key (such members fuse into one program)."""

import csv

import jax
import numpy as np
import pytest
from trainer_fake_env import ENV_ID, TINY_CONFIG

import hivex_jax
from baselines.config import from_dict, keys_of_kind
from baselines.core.ppo import make_train
from baselines.core.training_env import MemberWorldPool, MemberWorlds, union_and_tables
from baselines.run.fused import run_fused
from baselines.run.fused_plan import plan_programs
from baselines.run.fused_population import FusedPopulation
from baselines.run.population import Population
from baselines.run.runner import run_training
from hivex_jax.wrappers import PregeneratedWorldPool, WorldPool

BASE = {**TINY_CONFIG, "gif_frames": 0, "checkpoint_every": 0, "eval_every": 0}


def test_union_and_tables_put_each_spec_s_worlds_in_its_own_order():
    union, tables = union_and_tables(["7,3,5", "3:5", "9"])
    assert union.tolist() == [3, 4, 5, 7, 9]
    assert [t["train_world_index"].tolist() for t in tables] == [[3, 0, 2], [0, 1, 0], [4, 0, 0]]
    assert [int(t["train_world_count"]) for t in tables] == [3, 2, 1]
    assert all(t["train_world_index"].dtype == np.int32 for t in tables)


@pytest.mark.parametrize("pregenerate", [False, True])
def test_a_member_draws_the_worlds_its_own_pool_draws(pregenerate):
    env, params = hivex_jax.make(ENV_ID)
    own = "104,101,107"
    union, tables = union_and_tables(["100:106", own])
    pool_class = PregeneratedWorldPool if pregenerate else WorldPool
    alone = pool_class(env, own, params) if pregenerate else pool_class(env, own)
    shared = MemberWorldPool(pool_class(env, union, params) if pregenerate else pool_class(env, union))
    worlds = MemberWorlds(params, tables[1]["train_world_index"], tables[1]["train_world_count"])
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    alone_goals = jax.vmap(lambda k: alone.reset(k, params)[1].goal)(keys)
    shared_goals = jax.jit(jax.vmap(lambda k: shared.reset(k, worlds)[1].goal))(keys)
    np.testing.assert_array_equal(np.asarray(shared_goals), np.asarray(alone_goals))
    assert len({tuple(g) for g in np.asarray(alone_goals).round(6)}) == 3  # all three worlds drawn
    # the other member draws from its six worlds
    other = MemberWorlds(params, tables[0]["train_world_index"], tables[0]["train_world_count"])
    other_goals = jax.vmap(lambda k: shared.reset(k, other)[1].goal)(keys)
    assert len({tuple(g) for g in np.asarray(other_goals).round(6)}) == 6


def test_train_worlds_is_data_and_members_that_differ_in_it_fuse():
    assert "train_worlds" in keys_of_kind("data")
    configs = [from_dict({**BASE, "train_worlds": w}) for w in ("100:101", "100:110", "300:302")]
    assert plan_programs(configs) == [[0, 1, 2]]
    population = FusedPopulation([Population(make_train(c)) for c in configs])
    assert population.train.training_env.per_member
    assert population.train.training_env.pool.seeds.tolist() == [*range(100, 110), 300, 301]
    assert population.member_rows["train_world_count"].tolist() == [1, 1, 10, 10, 2, 2]  # x 2 seeds


def _numbers(run_dir):
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.reader(f))
    keep = [i for i, name in enumerate(rows[0]) if name != "wall_s"]
    return np.array([[float(r[i]) if r[i] else np.nan for i in keep] for r in rows[1:]])


@pytest.mark.slow  # a 2-member fused training and 2 alone runs (~40 s on the loaded 2-core CPU)
def test_fused_members_with_their_own_worlds_equal_their_alone_runs(tmp_path):
    configs = [from_dict({**BASE, "train_worlds": w}) for w in ("100:101", "300:306")]
    for i, config in enumerate(configs):
        run_training(config, tmp_path / f"alone{i}", progress=False, log=lambda *a: None)
    dirs = [tmp_path / f"fused{i}" for i in range(2)]
    summaries = run_fused(configs, dirs, progress=False, log=lambda *a: None)
    assert [s["fused_members"] for s in summaries] == [2, 2]
    for i in range(2):  # float summation order of 4 batched rows vs 2 (docs/sweeps.md)
        np.testing.assert_allclose(_numbers(dirs[i]), _numbers(tmp_path / f"alone{i}"), rtol=1e-4, atol=1e-5)
    # the two members really trained on different worlds: their training returns differ
    assert not np.allclose(_numbers(dirs[0]), _numbers(dirs[1]))
