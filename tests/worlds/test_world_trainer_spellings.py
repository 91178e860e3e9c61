"""The trainer / evaluate spellings of worlds from files and stress worlds:
`hivex train world_files=GLOB`, `test_worlds=stress`, `hivex evaluate RUN --world-files GLOB` and
`--worlds stress` give the env of the `env_options.world_files` / `.stress_worlds` route."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

import hivex_jax
from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.config import from_dict, load_config, make_env
from baselines.config.values import ConfigError
from baselines.run.eval_worlds import world_setting
from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds import save_world, world_of_seed
from hivex_jax.worlds.stress import STRESS_SEEDS, StressWorlds, stress_names

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "baselines"))
from trainer_fake_env import TINY_CONFIG, register  # noqa: E402  (the tiny env: no worlds module)

pytestmark = pytest.mark.timeout(600)
ENV = "OceanPlasticCollection-v0"
BASE = [f"env_id={ENV}", "level=null"]  # OPC has no level
TINY_REAL = {  # a real env (it has worlds and stress worlds) with the smallest budget that trains
    "algo": "ippo",
    "env_id": ENV,
    "train_worlds": "5000:5004",
    "test_worlds": "stress",  # the run's own held-out evaluation on the stress pool
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


def _obs(env, params, seeds):
    reset = jax.jit(env.reset)
    return [jax.tree.map(np.asarray, reset(world_key(s), params)[0]) for s in seeds]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("worlds")
    env, params = hivex_jax.make(ENV)
    for seed in (6000, 6001):
        save_world(world_of_seed(env.unwrapped, params, seed), out / f"w{seed}", env.unwrapped, seed=seed)
    return out


def test_world_files_key_is_the_env_option(world_dir):
    glob = str(world_dir / "w*")
    spelled = load_config(None, [*BASE, f"world_files={glob}"])
    routed = load_config(None, [*BASE, f"env_options.world_files={glob}"])
    assert spelled == routed and spelled.env_options == {"world_files": glob}
    assert from_dict(spelled.to_dict()) == spelled  # a saved config.yaml reads back (no "both spellings")
    seeds = range(6)
    a, b = (_obs(*make_env(c), seeds) for c in (spelled, routed))
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    plain = _obs(*make_env(load_config(None, BASE)), seeds)
    assert not all(_same(x, y) for x, y in zip(a, plain, strict=True))  # the file worlds do change it


def test_world_files_refusals(world_dir):
    with pytest.raises(ConfigError, match="not both"):
        load_config(
            None, [f"env_id={ENV}", f"world_files={world_dir}/w*", f"env_options.world_files={world_dir}"]
        )
    with pytest.raises(ConfigError, match="matches no file"):
        load_config(None, [*BASE, f"world_files={world_dir}/none*.png"])


def test_test_worlds_stress_is_the_stress_pool():
    config = load_config(None, [*BASE, "test_worlds=stress"])
    assert config.test_worlds == "stress"
    evaluated, worlds, record = world_setting(config, config.test_worlds)
    assert (
        worlds == "9000:9032"
        and STRESS_SEEDS == "9000-9031"
        and evaluated.env_options == {"stress_worlds": "all"}
    )
    env, params = make_env(evaluated)
    assert record["stress_worlds"] == {"names": list(stress_names(env.unwrapped)), "seeds": "9000:9032"}
    seeds = (9000, 9001, 9002)
    same = {"num_agents": config.num_agents, "task": config.task}
    direct = _obs(*hivex_jax.make(ENV, stress_worlds="all", **same), seeds)
    assert all(_same(x, y) for x, y in zip(_obs(env, params, seeds), direct, strict=True))
    plain = _obs(*hivex_jax.make(ENV, **same), seeds)
    assert not all(_same(x, y) for x, y in zip(direct, plain, strict=True))
    # names given as env_options.stress_worlds are kept
    named = load_config(None, [*BASE, "env_options.stress_worlds=far_corner"])
    assert world_setting(named, "stress")[2]["stress_worlds"]["names"] == ["far_corner"]
    assert isinstance(make_env(world_setting(named, "stress")[0])[0].env, StressWorlds)


def test_stress_on_env_without_stress_worlds_is_a_user_error():
    register()
    config = from_dict({**TINY_CONFIG, "test_worlds": "stress"})
    with pytest.raises(UserError, match="has no stress worlds"):
        world_setting(config, "stress")


# slow: a training on a real env and two evaluations (~40 s); the spellings and refusals above stay
@pytest.mark.slow
def test_evaluate_on_stress_and_file_worlds_end_to_end(tmp_path, world_dir, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY_REAL))
    assert (
        train_main(["--config", str(path), "--out-dir", str(tmp_path), "--name", "r", "--no-progress"]) == 0
    )
    run = tmp_path / "r"
    assert json.loads((run / "eval.json").read_text())["worlds"] == list(range(9000, 9032))
    out = tmp_path / "stress.json"
    assert (
        evaluate_main([str(run), "--worlds", "stress", "--no-baselines", "--steps", "3", "--out", str(out)])
        == 0
    )
    results = json.loads(out.read_text())
    assert results["stress_worlds"] == {
        "names": list(stress_names(hivex_jax.make(ENV)[0])),
        "seeds": "9000:9032",
    }
    assert results["worlds"][0] == 9000 and len(results["worlds"]) == 32
    out = tmp_path / "files.json"
    glob = str(world_dir / "w*")
    argv = [
        str(run),
        "--world-files",
        glob,
        "--worlds",
        "0:2",
        "--no-baselines",
        "--steps",
        "3",
        "--out",
        str(out),
    ]
    assert evaluate_main(argv) == 0
    results = json.loads(out.read_text())
    assert results["world_files"] == [str(world_dir / "w6000"), str(world_dir / "w6001")]
    assert results["eval_setting"]["env_options"] == {"world_files": glob}
    capsys.readouterr()
    # one-line errors, exit 2
    assert evaluate_main([str(run), "--world-files", str(world_dir / "none*.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert "matches no file" in err and len(err.splitlines()) == 1
