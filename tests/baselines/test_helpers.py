"""Helper processes on idle CPU cores (`baselines.run.helpers`): the seeds they train, the parts of the
trained rows they play and the baselines they play are the numbers this process computes, bit for bit (a
whole run's files too); a helper that cannot build the env leaves its work to this process, with one line."""

from types import SimpleNamespace

import jax
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG, TinyEnv, register

import hivex_jax
from baselines.config import ConfigError, from_dict
from baselines.config.checks import MAX_CPU_HELPERS
from baselines.core.ppo import make_train
from baselines.run import helpers as helpers_module
from baselines.run.evaluation import HeldOutEvaluation
from baselines.run.helpers import Helpers, helper_count
from baselines.run.population import Population
from baselines.run.runner import run_training
from baselines.run.split_training import SplitTraining

register()
#: three seeds: six trained rows, split 2 / 2 / 2 over this process and two helpers
CONFIG = {**TINY_CONFIG, "num_seeds": 3, "test_worlds": "200:204"}


def _evaluation(values: dict) -> tuple[HeldOutEvaluation, object]:
    config = from_dict(values)
    population = Population(make_train(config))
    return HeldOutEvaluation(population.train, config.test_worlds), population.init().params


def _same(a: dict, b: dict) -> bool:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.array_equal(np.asarray(x), np.asarray(y), equal_nan=np.asarray(x).dtype.kind == "f")
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


@pytest.mark.xla_default_code  # programs of 2 and 3 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_helpers_play_the_same_numbers_as_this_process():
    evaluation, params = _evaluation(CONFIG)
    assert evaluation.trained.in_turn  # the tiny env has a camera: rows in turn on one CPU device
    alone_trained, alone_baselines = evaluation.trained_totals(params), evaluation.baseline_totals()
    lines = []
    helped = evaluation.on(evaluation.worlds)
    helped.helpers = Helpers(from_dict(CONFIG), evaluation.worlds, 2, log=lines.append)
    try:
        assert helped.helpers.wait()  # built from the config in processes of their own
        trained, baselines = helped.trained_totals(params), helped.baseline_totals()
        assert helped.helpers.parts_played == 2 and helped.helpers.failed is None and lines == []
        # this process's rows played a row at a time by the program a helper compiled at its start
        assert len(helped.trained.loaded) == 1 and helped.trained.loaded_calls == 2
    finally:
        helped.helpers.close()
    assert _same(trained, alone_trained)
    assert _same(baselines, alone_baselines)
    assert trained["greedy"]["return"].shape == (3, 4, 3)  # [seeds, worlds, agents]
    assert not helped.helpers._processes  # closed


def _two_chunks(config, helpers=None, kill=False):
    """Two chunks of the population, or of its `SplitTraining` with `helpers` (closed after; with `kill`,
    the first helper killed once it is built)."""
    population = Population(make_train(config))
    state = population.init()
    if helpers is None:
        first = population.chunk(state)
        return first, population.chunk(first[0])
    split = SplitTraining(population, helpers, 2)
    try:
        split.compile()  # and handed to the helper, which says it is ready once it has loaded it
        if kill:
            assert helpers.wait()
            helpers._processes[0].kill()  # gone before its first piece comes back
        first = split.chunk(state)
        return first, split.chunk(first[0])
    finally:
        helpers.close()


@pytest.mark.xla_default_code  # programs of 1 and 3 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_seeds_trained_in_pieces_with_a_helper_are_the_seeds_trained_here():
    config = from_dict(CONFIG)  # 3 seeds of 2 updates: seed 0 and seed 1's 2nd update here, the rest there
    alone = _two_chunks(config)
    lines = []
    helpers = Helpers(config, [200, 201, 202, 203], 1, [1], log=lines.append)
    helped = _two_chunks(config, helpers)
    assert lines == [] and helpers.failed is None
    assert _same(helped, alone)
    assert helped[0][1]["loss"].shape == alone[0][1]["loss"].shape == (3, 2)  # [seeds, chunk updates]


@pytest.mark.slow  # a helper process started and killed: ≈ 20 s
@pytest.mark.xla_default_code  # programs of 1 and 3 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_a_helper_killed_mid_run_leaves_its_pieces_to_this_process():
    config = from_dict(CONFIG)
    alone = _two_chunks(config)
    lines = []
    helpers = Helpers(config, [200, 201, 202, 203], 1, [1], log=lines.append)
    helped = _two_chunks(config, helpers, kill=True)
    assert _same(helped, alone)
    assert len(lines) == 1 and lines[0] == "cpu helper 0 ended; its work runs in this process"


@pytest.mark.xla_default_code  # programs of 2 and 3 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_a_run_with_a_helper_writes_the_files_of_a_run_without(tmp_path):
    values = {**CONFIG, "gif_frames": 0, "checkpoint_every": 0}
    quiet = {"progress": False, "log": lambda *a: None}
    logs = []
    summary = run_training(
        from_dict({**values, "cpu_helpers": 1}), tmp_path / "helped", progress=False, log=logs.append
    )
    assert 0 < summary["test_eval_s"] < summary["train_s"]  # the held-out evaluation is inside the loop
    run_training(from_dict({**values, "cpu_helpers": 0}), tmp_path / "alone", **quiet)
    said = "cpu_helpers: 1 process(es) beside this one: seeds 1.5 + 1.5 in programs of 1 update"
    assert any(line.startswith(said) for line in logs)
    assert (tmp_path / "helped" / "eval.json").read_bytes() == (tmp_path / "alone" / "eval.json").read_bytes()
    helped, alone = (
        np.genfromtxt(tmp_path / r / "metrics.csv", delimiter=",", names=True) for r in ("helped", "alone")
    )
    columns = [c for c in alone.dtype.names if c != "wall_s"]
    assert all(np.array_equal(helped[c], alone[c], equal_nan=True) for c in columns)


@pytest.mark.xla_default_code  # programs of 2 and 3 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_a_helper_that_cannot_build_the_env_leaves_the_evaluation_to_this_process():
    class LocalTiny(TinyEnv):  # a class local to a function does not pickle: a helper has no such env
        env_id = "TinyLocalOnly-v0"

    if LocalTiny.env_id not in hivex_jax.registered_envs():
        hivex_jax.register(LocalTiny.env_id, LocalTiny)
    values = {**CONFIG, "env_id": LocalTiny.env_id}
    evaluation, params = _evaluation(values)
    alone = evaluation.trained_totals(params)
    lines = []
    helpers = Helpers(from_dict(values), evaluation.worlds, 1, log=lines.append)
    try:
        assert not helpers.wait()  # it reported an error instead
        helped = evaluation.on(evaluation.worlds)
        helped.helpers = helpers
        assert _same(helped.trained_totals(params), alone)
        assert helpers.baselines() is None and helpers.parts_played == 0
    finally:
        helpers.close()
    assert len(lines) == 1 and LocalTiny.env_id in lines[0] and lines[0].endswith("runs in this process")
    assert "\n" not in lines[0]


def test_how_many_helpers(monkeypatch):
    monkeypatch.setattr(helpers_module, "usable_cores", lambda: 8)
    config = from_dict({**CONFIG, "cpu_helpers": None})  # 3 seeds: 6 trained rows
    train = object()  # the population's trainer: an evaluation of its own setting holds the same
    in_turn, vmapped = SimpleNamespace(in_turn=True, train=train), SimpleNamespace(in_turn=False, train=train)

    def evaluation(in_turn=True, stack=None, worlds=32, steps=3000, setting=train):
        trained = SimpleNamespace(in_turn=in_turn, num_steps=steps)
        return SimpleNamespace(trained=trained, params_stack=stack, worlds=range(worlds), train=setting)

    def count(config, evaluation, population=in_turn):
        return helper_count(config, evaluation, population)

    assert count(config, evaluation()) == 5  # 7 idle cores, 6 rows: 5 helpers and this process
    assert count(config.replace(cpu_helpers=2), evaluation()) == 2
    assert count(config.replace(cpu_helpers=9), evaluation()) == 5  # at most the rows less one
    assert count(config.replace(cpu_helpers=0), evaluation()) == 0
    assert count(config, evaluation(), vmapped) == 0  # seeds vmapped (accelerators, several devices)
    assert count(config.replace(cpu_helpers=1), evaluation(), vmapped) == 0
    assert count(config, evaluation(worlds=2, steps=12)) == 0  # too short to pay a helper's start
    assert count(config.replace(cpu_helpers=1), evaluation(worlds=2, steps=12)) == 1
    # rows that helpers may not play (vmapped: a vector env's; env params as data): only seeds to share
    assert count(config, evaluation(in_turn=False)) == 0
    assert count(config.replace(cpu_helpers=4), evaluation(in_turn=False)) == 2  # the seeds less one
    assert count(config.replace(cpu_helpers=4), evaluation(stack="params")) == 2
    assert count(config.replace(cpu_helpers=4), evaluation(setting=object())) == 2  # stress worlds, transfer
    assert count(config, evaluation(setting=object())) == 0
    monkeypatch.setattr(helpers_module, "usable_cores", lambda: 1)
    assert count(config, evaluation()) == 0  # no idle core


def test_rows_that_are_not_shared_play_here():
    calls = []
    helpers = Helpers(from_dict(CONFIG), [200, 201], 0, share_rows=False)  # no process started
    rows = {"w": np.arange(6.0)}
    assert helpers.play(rows, lambda r: calls.append(r) or {"x": r["w"] * 2})["x"].tolist() == [
        0,
        2,
        4,
        6,
        8,
        10,
    ]
    assert len(calls) == 1 and calls[0] is rows  # all six rows in one call: vmapped rows keep their batch


@pytest.mark.parametrize("value", [-1, MAX_CPU_HELPERS + 1])
def test_cpu_helpers_out_of_range_is_one_line(value):
    with pytest.raises(ConfigError, match=r"cpu_helpers must be null or 0\.\.\d+") as raised:
        from_dict({**CONFIG, "cpu_helpers": value})
    assert "\n" not in str(raised.value)
