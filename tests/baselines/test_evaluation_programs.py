"""A run's held-out evaluation is compiled once per policy kind and reused: the in-training evaluations
(`eval_every`), the final one and `hivex evaluate` of the run in the same process all play the same two
compiled programs (the trained policy, greedy and stochastic, every seed; the baselines), the training
world pool is built once per run, and the trained program runs the actor once per step for both kinds."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.config import from_dict
from baselines.core import training_env
from baselines.core.ppo import make_train
from baselines.run.eval_policies import greedy_or_stochastic
from hivex_jax.eval import rollout
from hivex_jax.wrappers import PregeneratedWorldPool

pytestmark = pytest.mark.timeout(400)

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
#: train worlds no other test uses, so the process's program cache cannot already hold this run's programs
CONFIG = {**TINY_CONFIG, "train_worlds": "100:113", "eval_every": 1, "gif_frames": 0, "checkpoint_every": 3}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """Train 2 of 3 chunks, resume for the last (an evaluation after each chunk, then the final one), then
    `hivex evaluate` the run on its test worlds and on two other worlds, all in this process; what was
    built and compiled meanwhile."""
    tmp = tmp_path_factory.mktemp("run")
    config = tmp / "tiny.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    evaluators, calls, pools, compiled = [], [], [], []

    def on_compile(event, seconds, **kwargs):  # XLA compilations (or loads from the disk cache)
        if event == BACKEND_COMPILE and "held_out_episodes" in str(kwargs.get("fun_name")):
            compiled.append(kwargs["fun_name"])

    class CountedEvaluator(rollout.Evaluator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            evaluators.append(self)

        def __call__(self, *args, **kwargs):
            calls.append(self)
            return super().__call__(*args, **kwargs)

    class CountedPool(PregeneratedWorldPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    jax.monitoring.register_event_duration_secs_listener(on_compile)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rollout, "Evaluator", CountedEvaluator)
        patch.setattr(training_env, "PregeneratedWorldPool", CountedPool)
        run = ["--config", str(config), "--out-dir", str(tmp), "--no-progress", "--name", "r"]
        assert train_main([*run, "--max-chunks", "2"]) == 0  # stopped after 2 of 3 chunks
        assert train_main(["--no-progress", "--resume", str(tmp / "r")]) == 0
        assert evaluate_main([str(tmp / "r")]) == 0
        assert evaluate_main([str(tmp / "r"), "--worlds", "300:302"]) == 0
    jax.monitoring.unregister_event_duration_listener(on_compile)
    return {"dir": tmp / "r", "evaluators": evaluators, "calls": calls, "pools": pools, "compiled": compiled}


def test_every_evaluation_of_a_run_plays_one_compiled_program_per_policy_kind(one_run):
    """Two programs were built, the trained policy's (greedy and stochastic of every seed in one call)
    and the baselines' (scripted and random in one call), and each was compiled once: two compilations
    of an evaluation program in all (jax.monitoring's compile events; a jitted function's `_cache_size()`
    also counts dispatch entries that share one executable, e.g. for restored, differently placed params)."""
    trained, baselines = one_run["evaluators"]  # exactly two: the unpacking fails on any other count
    assert trained.worlds.tolist() == baselines.worlds.tolist() == [200, 201]
    calls = one_run["calls"]
    # 3 in-training evaluations (2 before the stop, 1 after the resume; the final evaluation reuses the
    # last), then the 2 `hivex evaluate` calls
    assert calls.count(trained) == 5
    assert calls.count(baselines) == 3  # the final evaluation and the 2 `hivex evaluate` calls
    assert len(one_run["compiled"]) == 2
    other = json.loads((one_run["dir"] / "eval_300-301.json").read_text())
    assert [w["world"] for w in other["policies"]["greedy"]["per_world"]] == [300, 301]
    # the same program on the run's own worlds gives the final evaluation's numbers
    final = json.loads((one_run["dir"] / "eval.json").read_text())
    again = json.loads((one_run["dir"] / "eval_test.json").read_text())
    for policy in ("greedy", "stochastic", "scripted", "random"):
        returns = [[w["return_mean"] for w in e["policies"][policy]["per_world"]] for e in (final, again)]
        np.testing.assert_array_equal(*returns)


def test_the_training_world_pool_is_built_once_per_run(one_run):
    """The pregenerated training pool (13 worlds) is built with the trainer, once: not again when the run
    resumes or for `hivex evaluate` (the program cache holds the trainer and its pool)."""
    (pool,) = one_run["pools"]
    assert pool.seeds.tolist() == list(range(100, 113))


def test_greedy_and_stochastic_rows_share_one_actor_call_per_step():
    """The trained program's policy runs the actor once per step for a row of either kind and gives what
    `train.act` gives for that flag: the distribution's mode on a greedy row, its sample on the other."""
    train = make_train(from_dict(TINY_CONFIG))
    params = jax.device_get(train.init(jax.random.PRNGKey(0)).params)
    obs = train.env.reset(jax.random.PRNGKey(1), train.env_params)[0]
    key = jax.random.PRNGKey(2)
    actor_calls = []
    step = train.policy.step

    def counted(*args):
        actor_calls.append(1)
        return step(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train.policy, "step", counted)
        policy = greedy_or_stochastic(train)
        rows = {flag: policy((params, jnp.asarray(flag)), key, obs, None) for flag in (True, False)}
    assert len(actor_calls) == 2  # once per row, not once per kind per row
    for flag, action in rows.items():
        jax.tree.map(np.testing.assert_array_equal, action, train.act(params, obs, key, flag))
    assert not np.array_equal(rows[True]["continuous"], rows[False]["continuous"])
