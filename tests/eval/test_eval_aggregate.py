"""Robust aggregates (rliable) against hand-computed values: normalisation, IQM/mean/median/optimality gap,
probability of improvement, sweep pooling over tasks, and the files a sweep writes. No training."""

import json

import numpy as np
import pytest
from fake_results import fake_results

from hivex_jax.eval import aggregate as ag
from hivex_jax.eval.rliable_compat import rliable_modules, seeded_global_numpy
from hivex_jax.eval.score import SCRIPTED_NOT_ABOVE_RANDOM
from hivex_jax.eval.stats import iqm

pytestmark = pytest.mark.timeout(300)
REPS = 200  # bootstrap replicates: enough to exercise the intervals, cheap on CPU


def test_normalise_by_hand_and_degenerate_worlds_left_out():
    scores = np.array([[2.0, 5.0, 7.0], [4.0, 1.0, 3.0]])
    scripted, random = np.array([4.0, 3.0, 2.0]), np.array([0.0, 1.0, 2.0])  # world 3: gap 0
    normalised = ag.normalise(scores, scripted, random)
    np.testing.assert_allclose(normalised[:, :2], [[0.5, 2.0], [1.0, 0.0]])  # (R - Rr) / (Rs - Rr)
    assert np.isnan(normalised[:, 2]).all()
    # where random beats scripted there is no scale: no score (the references never swap)
    assert np.isnan(ag.normalise([[1.0, 3.0, 5.0]], [1.0] * 3, [3.0] * 3)).all()


def test_usable_worlds_relative_threshold():
    # gap 0.5 <= 1e-3 * 1000 -> too small; gap 2 > 1 -> usable; both zero -> unusable; random 2 above
    # scripted -> unusable however wide the gap
    ok = ag.usable_worlds([1000.0, 1000.0, 0.0, 1.0, -264.0], [999.5, 998.0, 0.0, 0.0, -103.0])
    assert ok.tolist() == [False, True, False, True, False]


def test_normalised_columns_excludes_and_reports_worlds():
    r = fake_results({"greedy": [[2.0, 5.0, 7.0, 2.0]] * 2}, [4.0, 3.0, 2.0, 0.0], [0.0, 1.0, 2.0, 4.0])
    columns, info = ag.normalised_columns(r, "greedy", cell=("0", "None"))
    # 6002: scripted == random; 6003: random beats scripted. Both are left out and listed, never swapped
    excluded = {"normalised": True, "excluded_worlds": [6002, 6003], "random_above_scripted_worlds": [6003]}
    assert info == excluded
    assert sorted(columns) == [("0", "None", 6000), ("0", "None", 6001)]
    np.testing.assert_allclose(columns[("0", "None", 6001)], [2.0, 2.0])
    np.testing.assert_allclose(columns[("0", "None", 6000)], [0.5, 0.5])
    raw, info = ag.normalised_columns(fake_results({"greedy": [[2.0, 5.0]]}), "greedy")
    assert info["normalised"] is False and raw[(6001,)].tolist() == [5.0]


def test_aggregates_match_hand_computed_values_and_the_ci_contains_them():
    scores = np.array([[1.0, 2.0, 3.0, 100.0], [4.0, 5.0, 6.0, -50.0]])
    out = ag.aggregate_intervals({"a": scores}, normalised=True, reps=REPS)["a"]
    # sorted: -50 1 2 3 4 5 6 100; IQM = mean(2, 3, 4, 5)
    assert out["iqm"]["point"] == pytest.approx(3.5) == iqm(scores)
    assert out["mean"]["point"] == pytest.approx(71 / 8)
    assert out["median"]["point"] == pytest.approx(4.0)  # median of column means 2.5, 3.5, 4.5, 25
    assert out["optimality_gap"]["point"] == pytest.approx(1 - (7 - 50) / 8)  # 1 - mean(min(s, 1))
    for stats in out.values():
        lo, hi = stats["ci95"]
        assert lo <= stats["point"] <= hi
    assert out["mean"]["ci95"][0] < out["mean"]["ci95"][1]  # runs differ: the interval has width
    raw = ag.aggregate_intervals({"a": scores}, normalised=False, reps=REPS)["a"]
    assert "optimality_gap" not in raw  # no score where 1 means "as good as scripted"


def test_bootstrap_is_seeded_and_leaves_numpy_global_state_alone():
    scores = np.random.default_rng(1).normal(size=(5, 6))
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    first = ag.aggregate_intervals({"a": scores}, reps=REPS, seed=7)
    assert np.random.random() == expected_next
    assert ag.aggregate_intervals({"a": scores}, reps=REPS, seed=7) == first
    assert ag.aggregate_intervals({"a": scores}, reps=REPS, seed=8) != first


def test_probability_of_improvement_dominating_and_identical():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(4, 5))
    better = ag.probability_of_improvement(y + 10.0, y, reps=REPS)
    assert better["point"] == 1.0 and better["ci95"] == [1.0, 1.0]
    worse = ag.probability_of_improvement(y - 10.0, y, reps=REPS)
    assert worse["point"] == 0.0
    same = ag.probability_of_improvement(y, y.copy(), reps=REPS)
    assert same["point"] == 0.5 and same["ci95"][0] <= 0.5 <= same["ci95"][1]
    with pytest.raises(ValueError, match="same columns"):
        ag.probability_of_improvement(y, y[:, :3], reps=REPS)


def test_vectorised_improvement_equals_rliables_on_ties_and_unequal_runs():
    _, metrics = rliable_modules()
    rng = np.random.default_rng(3)
    x, y = np.round(rng.normal(size=(5, 7))), np.round(rng.normal(size=(3, 7)))  # rounding makes ties
    y[:, 0] = x[:3, 0]
    assert ag.pairwise_improvement(x, y) == pytest.approx(metrics.probability_of_improvement(x, y))


def test_eval_aggregates_block():
    greedy = [[6.0, 4.0, 3.0], [5.0, 4.0, 2.0]]  # normalised: [[1.2, 1.0, 1.5], [1.0, 1.0, 1.0]]
    stochastic = [[1.0, 2.0, 1.0], [2.0, 3.0, 1.0]]
    r = fake_results({"greedy": greedy, "stochastic": stochastic}, [5.0, 4.0, 2.0], [0.0, 0.0, 0.0])
    block = ag.eval_aggregates(r, reps=REPS)
    assert block["interval"] == ag.INTERVAL and block["normalised"] and block["excluded_worlds"] == []
    # sorted 1 1 1 1 1.2 1.5; trimming 25% drops one at each end: IQM = mean(1, 1, 1, 1.2)
    assert block["policies"]["greedy"]["iqm"]["point"] == pytest.approx(1.05)
    assert block["policies"]["greedy"]["mean"]["point"] == pytest.approx(6.7 / 6)
    assert block["policies"]["greedy"]["num_runs"] == 2 and block["policies"]["greedy"]["num_columns"] == 3
    poi = block["probability_of_improvement"]
    assert poi["greedy over stochastic"]["point"] == 1.0
    # greedy vs scripted (score 1) per world: P(x > 1) + P(x = 1) / 2 = 0.75, 0.5, 0.75
    assert poi["greedy over scripted"]["point"] == pytest.approx(2 / 3)
    text = ag.format_eval_aggregates(block)
    header = "IQM (rliable stratified bootstrap 95% CI, normalised by scripted/random on the same worlds)"
    assert header in text
    json.dumps(block)  # the block goes into eval JSON as is


def test_eval_aggregates_without_baselines_use_raw_returns():
    block = ag.eval_aggregates(fake_results({"greedy": [[1.0, 2.0], [3.0, 4.0]]}), reps=REPS)
    assert block["normalised"] is False and "raw" in block["normalisation"]
    assert block["policies"]["greedy"]["mean"]["point"] == 2.5
    assert "optimality_gap" not in block["policies"]["greedy"] and block["probability_of_improvement"] == {}


def test_eval_aggregates_where_scripted_never_beats_random_say_so():
    # OPC task 3 on world 6000: scripted -264, random -103; an agent standing still (-0.7) beats both
    r = fake_results({"greedy": [[-0.7, -0.7]]}, [-264.0, -264.0], [-103.0, -103.0])
    block = ag.eval_aggregates(r, reps=REPS)
    assert block["policies"] == {} and block["excluded_worlds"] == [6000, 6001]
    assert block["random_above_scripted_worlds"] == [6000, 6001]
    assert (
        ag.format_eval_aggregates(block)
        == f"robust aggregates: none ({SCRIPTED_NOT_ABOVE_RANDOM} on any world)"
    )


def test_sweep_leaves_out_a_task_whose_scripted_controller_does_not_beat_random():
    entries = _task_entries(0.0, "1")
    upside_down = fake_results({"greedy": [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]}, [-5.0] * 3, [0.0] * 3, task=3)
    block = ag.sweep_aggregates([*entries, ("lr=1,task=3", upside_down)], reps=REPS)
    assert block["normalised"] and block["groups"]["lr=1"]["num_columns"] == 6  # tasks 0 and 1 only
    assert block["excluded_worlds"] == {"lr=1,task=3": [6000, 6001, 6002]}
    assert block["random_above_scripted_worlds"] == {"lr=1,task=3": [6000, 6001, 6002]}
    assert block["groups"]["lr=1"]["mean"]["point"] == pytest.approx(0.3)  # as without task 3


def test_group_label_drops_task_and_level():
    assert ag.group_label("lr=1e-3,task=2,level=1") == "lr=1e-3"
    assert ag.group_label("task=2") == "default"


def _task_entries(shift: float, lr: str) -> list:
    """Two tasks of one sweep group: scripted 10, random 0 on every world, greedy = shift + seed offsets."""
    entries = []
    for task in (0, 1):
        greedy = shift + np.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]) + task
        r = fake_results({"greedy": greedy}, [10.0] * 3, [0.0] * 3, task=task)
        entries.append((f"lr={lr},task={task}", r))
    return entries


def test_sweep_pools_tasks_and_ranks_entries():
    entries = _task_entries(0.0, "1") + _task_entries(5.0, "2")
    block = ag.sweep_aggregates(entries, reps=REPS)
    assert list(block["groups"]) == ["lr=1", "lr=2"] and block["baseline"] == "lr=1"
    assert block["groups"]["lr=1"]["num_columns"] == 6 and block["groups"]["lr=1"]["num_runs"] == 2
    # lr=1 normalised scores: tasks 0 and 1 -> (1..4 and 2..5) / 10; mean of all 12 = 0.3
    assert block["groups"]["lr=1"]["mean"]["point"] == pytest.approx(0.3)
    assert block["probability_of_improvement"]["lr=2 over lr=1"]["point"] == 1.0
    other = ag.sweep_aggregates(entries, baseline="lr=2", reps=REPS)
    assert other["probability_of_improvement"]["lr=1 over lr=2"]["point"] == 0.0
    with pytest.raises(ValueError, match="baseline entry"):
        ag.sweep_aggregates(entries, baseline="lr=3", reps=REPS)
    assert "lr=2 over lr=1" in ag.format_sweep_aggregates(block)


def test_sweep_refuses_to_mix_normalised_and_raw_entries():
    normalised = fake_results({"greedy": [[1.0]]}, [2.0], [0.0], level=None)
    with pytest.raises(ValueError, match="cannot compare"):
        ag.sweep_aggregates([("a=1", normalised), ("a=2", fake_results({"greedy": [[1.0]]}))], reps=REPS)


def test_write_sweep_aggregates_files(tmp_path):
    block = ag.write_sweep_aggregates(tmp_path, _task_entries(0.0, "1") + _task_entries(5.0, "2"), reps=REPS)
    saved = json.loads((tmp_path / "aggregates.json").read_text())
    assert saved["groups"]["lr=2"]["iqm"] == block["groups"]["lr=2"]["iqm"]
    taus = np.asarray(saved["profiles"]["tau"])
    fraction = np.asarray(saved["profiles"]["lr=1"]["fraction_above"])
    assert fraction[0] == 1.0 and fraction[-1] == 0.0 and np.all(np.diff(fraction) <= 0)  # a profile
    assert taus[0] < 0.1 and taus[-1] > 1.0  # spans every score (0.1 .. 1.0)
    for name in ("aggregates.png", "profiles.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fast_iqm_and_score_distribution_are_rliables_bit_for_bit():
    """The per-replicate IQM and score distribution (`_iqm`, `_score_distribution`) return exactly what
    rliable's `aggregate_iqm` and `score_distributions` return, ties included, and a performance profile
    built with them equals rliable's own, intervals and all."""
    library, metrics = rliable_modules()  # rliable imported through the project's pandas-3 shim
    rng = np.random.default_rng(3)
    for shape in [(3, 32), (5, 7), (1, 1), (2, 50)]:
        scores = np.round(rng.normal(size=shape), 1)  # rounded: many ties, some on the thresholds
        assert ag._iqm(scores) == metrics.aggregate_iqm(scores)
        taus = np.linspace(-2.0, 2.0, 41)
        assert np.array_equal(ag._score_distribution(scores, taus), library.score_distributions(scores, taus))
    matrices = {"a": np.round(rng.normal(size=(3, 8)), 1), "b": np.round(rng.normal(size=(3, 8)), 1)}
    got = ag.performance_profiles(matrices, num_taus=9, reps=REPS, seed=0)
    with seeded_global_numpy(0):  # rliable's own profile at the thresholds it chose
        expected = library.create_performance_profile(matrices, np.array(got["tau"]), reps=REPS)
    for name in matrices:
        assert got[name]["fraction_above"] == np.asarray(expected[0][name]).tolist()
        assert got[name]["ci95_low"] == np.asarray(expected[1][name][0]).tolist()
        assert got[name]["ci95_high"] == np.asarray(expected[1][name][1]).tolist()
