"""An evaluation counts each distinct episode once: on a file world of an env whose episode there depends
only on the world and the actions (each env's worlds.py says, `FILE_WORLD_SEED_FREE`), repeated seeds
are dropped; every env's declaration is checked against two seeds' rollouts on one exported world."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.seeding import rollout_key, rollout_step_keys, world_key
from hivex_jax.worlds import save_world, with_file_worlds, world_of_seed, worlds_module
from hivex_jax.worlds.wrapper import distinct_episode_seeds, load_worlds

pytestmark = pytest.mark.timeout(300)

ENVS = [
    "WindFarmControl-v0",
    "WildfireResourceManagement-v0",
    "DroneBasedReforestation-v0",
    "OceanPlasticCollection-v0",
    "AerialWildfireSuppression-v0",
]
STEPS = 8


def _file_env(env_id, folder, fields=None):
    env, params = hivex_jax.make(env_id)
    world = world_of_seed(env, params, 6000)
    if fields is not None:
        world = {k: v for k, v in world.items() if k in fields}
    save_world(world, folder, env, seed=6000)
    return with_file_worlds(env, load_worlds([str(folder)], env, params), params), params


def _rollouts(env, params, seeds):
    """Observations and rewards of STEPS fixed actions from each seed's reset (keys as the evaluation
    derives them), all seeds in one compiled program."""
    space = env.action_space()
    actions = [space.sample(jax.random.PRNGKey(100 + t)) for t in range(STEPS)]
    actions = jax.tree.map(lambda *xs: jnp.stack(xs), *actions)

    def one(seed):
        obs, state = env.reset(world_key(seed), params)
        key = rollout_key(jax.random.PRNGKey(0), seed)

        def body(carry, t):
            obs, state = carry
            _, k_env = rollout_step_keys(key, t)
            action = jax.tree.map(lambda a: a[t], actions)
            obs, state, reward, *_ = env.step(k_env, state, action, params)
            return (obs, state), (obs, reward)

        _, (obs_t, reward_t) = jax.lax.scan(body, (obs, state), jnp.arange(STEPS))
        return obs, obs_t, reward_t

    return jax.jit(jax.vmap(one))(jnp.asarray(seeds, jnp.uint32))


@pytest.mark.parametrize("env_id", ENVS)
def test_each_envs_declaration_is_true_and_the_seed_list_follows_it(env_id, tmp_path):
    env, params = _file_env(env_id, tmp_path / "w")
    seed_free = worlds_module(env).FILE_WORLD_SEED_FREE
    out = _rollouts(env, params, [6000, 6001])
    leaves = jax.tree.leaves(out)
    same = all(np.array_equal(np.asarray(x[0]), np.asarray(x[1])) for x in leaves)
    assert same == seed_free, f"{env_id}: declared seed-free {seed_free}, rollouts identical {same}"
    assert float(np.abs(np.asarray(out[2])).sum()) > 0  # the episodes do something
    seeds, record = distinct_episode_seeds(env, [6000, 6001, 6002])
    if seed_free:  # one file world: one distinct episode
        assert seeds.tolist() == [6000]
        assert record["dropped_seeds"] == [6001, 6002] and record["seeds_given"] == 3
        assert "nothing" in record["why"] and env_id in record["why"]
    else:
        assert seeds.tolist() == [6000, 6001, 6002] and record is None


def test_a_file_world_that_leaves_fields_out_keeps_every_seed(tmp_path):
    """WRM heights only: the fire, flammability and weather come from each seed's generated world."""
    env, params = _file_env("WildfireResourceManagement-v0", tmp_path / "w", fields=("heights",))
    out = _rollouts(env, params, [6000, 6001])
    assert not np.array_equal(np.asarray(out[2][0]), np.asarray(out[2][1]))
    seeds, record = distinct_episode_seeds(env, [6000, 6001])
    assert seeds.tolist() == [6000, 6001] and record is None


def test_two_file_worlds_keep_one_seed_per_world_played(tmp_path):
    env, params = hivex_jax.make("WildfireResourceManagement-v0")
    for seed in (6000, 6001):
        save_world(world_of_seed(env, params, seed), tmp_path / f"w{seed}", env, seed=seed)
    worlds = load_worlds([str(tmp_path / "w6000"), str(tmp_path / "w6001")], env, params)
    file_env = with_file_worlds(env, worlds, params)
    seeds = np.arange(6000, 6012)
    played = file_env.env.played_worlds(seeds)
    kept, record = distinct_episode_seeds(file_env, seeds)
    assert sorted(set(played.tolist())) == [0, 1]  # 12 seeds reach both files
    first = [int(seeds[played.tolist().index(i)]) for i in (0, 1)]
    assert kept.tolist() == sorted(first) and record["distinct"] == 2 and record["seeds_given"] == 12


def test_the_evaluation_header_says_how_many_distinct_episodes(tmp_path):
    from baselines.run.eval_worlds import distinct_worlds
    from baselines.run.files import _worlds_kind, format_results

    env, _ = _file_env("WildfireResourceManagement-v0", tmp_path / "w")
    worlds, record = distinct_worlds(env, "6000:6004")
    assert worlds == (6000,)
    results = {
        "worlds": list(worlds),
        "world_files": [str(tmp_path / "w")],
        "distinct_episodes": record,
        "policies": {"random": {"summary": {"mean": 1.0, "ci95": 0.0, "iqm": 1.0, "num_seeds": 1}}},
    }
    assert (
        _worlds_kind(results) == "distinct episode(s) over 1 file world(s) (4 seeds given, repeats dropped)"
    )
    text = format_results(results)
    assert text.startswith("1 distinct episode(s) over 1 file world(s)")
    assert "3 seed(s) dropped (6001, 6002, 6003)" in text


# slow: a WRM training and evaluation (~25 s); distinct_worlds and the header are checked above
@pytest.mark.slow
def test_hivex_evaluate_plays_a_wrm_file_world_once_and_says_so(tmp_path, capsys):
    """The case reported: `hivex evaluate RUN --world-files DIR --worlds 6000:6004` on WRM played the one
    file world 4 times and reported 4 samples; now 1 world, the JSON and the header say why."""
    import json

    import yaml

    from baselines.cli.evaluate import evaluate_main
    from baselines.cli.train import train_main

    config = {
        "algo": "ippo",
        "env_id": "WildfireResourceManagement-v0",
        "train_worlds": "5000:5002",
        "test_worlds": "6000:6002",
        "num_seeds": 1,
        "num_envs": 2,
        "num_steps": 4,
        "total_env_steps": 8,
        "chunk_updates": 1,
        "update_epochs": 1,
        "num_minibatches": 1,
        "hidden_sizes": [8],
        "eval_every": 0,
        "checkpoint_every": 1,
        "gif_frames": 0,
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    argv = [
        "--config",
        str(tmp_path / "tiny.yaml"),
        "--out-dir",
        str(tmp_path),
        "--name",
        "r",
        "--no-progress",
    ]
    assert train_main(argv) == 0
    env, _ = _file_env("WildfireResourceManagement-v0", tmp_path / "w")
    out = tmp_path / "files.json"
    capsys.readouterr()
    argv = [str(tmp_path / "r"), "--world-files", str(tmp_path / "w"), "--worlds", "6000:6004"]
    assert evaluate_main([*argv, "--steps", "3", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["worlds"] == [6000]
    assert results["distinct_episodes"]["dropped_seeds"] == [6001, 6002, 6003]
    assert all(p["summary"]["num_worlds"] == 1 for p in results["policies"].values())
    said = capsys.readouterr().out
    assert "1 distinct episode(s) over 1 file world(s) (4 seeds given, repeats dropped)" in said
    assert "3 seed(s) dropped (6001, 6002, 6003): WildfireResourceManagement-v0" in said
