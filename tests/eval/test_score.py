"""`hivex_jax.eval.score`: the normalised score (R - R_random) / (R_scripted - R_random) rises with the
agent's return whatever the baselines' signs, is None/NaN (and said to be) where the scripted controller
does not beat random, and fraction_of_scripted exists only where the scripted return is positive. Checked
by hand and on real episodes of world 6000: Ocean Plastic Collection task 3 and Drone-Based Reforestation
tasks 1 and 4, where the scripted controller scores below zero, and the main tasks for an ordered case."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from baselines.run.files import format_results
from hivex_jax.eval import rollout, score

pytestmark = pytest.mark.timeout(300)


def test_normalised_score_by_hand():
    # (R - Rr) / (Rs - Rr): 0 at random, 1 at scripted, linear between and beyond, any signs
    assert score.normalised_score(5.0, 10.0, 0.0) == pytest.approx(0.5)
    assert score.normalised_score(-50.0, -10.0, -110.0) == pytest.approx(0.6)  # both baselines < 0
    assert score.normalised_score(-120.0, -10.0, -110.0) == pytest.approx(-0.1)  # below random
    assert score.normalised_score(30.0, 10.0, -10.0) == pytest.approx(2.0)  # above scripted
    # broadcast: agent [runs, worlds] against baselines [worlds]
    got = score.normalised_score([[2.0, 5.0], [4.0, 1.0]], [4.0, 3.0], [0.0, 1.0])
    np.testing.assert_allclose(got, [[0.5, 2.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    ("scripted", "random"),
    [(-264.0, -107.0), (-0.997, -0.742), (-0.997, -0.997), (0.0, 0.0), (1000.0, 999.5), (np.nan, 0.0)],
)
def test_no_normalised_score_where_scripted_does_not_beat_random(scripted, random):
    assert not score.scripted_beats_random(scripted, random)
    assert np.isnan(score.normalised_score(-0.67, scripted, random))
    assert score.as_json(score.normalised_score(-0.67, scripted, random)) is None


def test_the_score_rises_with_the_return_whatever_the_baselines_signs():
    rng = np.random.default_rng(0)
    returns = np.sort(rng.normal(scale=300.0, size=50))
    for _ in range(200):
        random = rng.normal(scale=300.0)
        scripted = random + abs(rng.normal(scale=300.0)) + 1.0  # scripted beats random, either sign
        scores = score.normalised_score(returns, scripted, random)
        assert np.all(np.diff(scores) > 0)
        assert score.normalised_score(random, scripted, random) == pytest.approx(0.0, abs=1e-12)
        assert score.normalised_score(scripted, scripted, random) == pytest.approx(1.0)


def test_fraction_of_scripted_only_where_the_scripted_return_is_positive():
    assert score.fraction_of_scripted(3.0, 4.0) == pytest.approx(0.75)
    # the old ratio on OPC task 3: standing still (-0.67) would score 0.0025 and random (-107) 0.41
    for scripted in (-264.0, -0.997, 0.0):
        assert np.isnan(score.fraction_of_scripted(-0.67, scripted))
    np.testing.assert_array_equal(
        np.isnan(score.fraction_of_scripted([1.0, 1.0], [2.0, -2.0])), [False, True]
    )


def test_score_fields_say_which_score_exists_and_why_not():
    fields = score.score_fields({"greedy": 5.0, "stochastic": 2.5, "scripted": 10.0, "random": 0.0})
    assert fields["normalised_score"] == {"greedy": 0.5, "stochastic": 0.25}
    assert fields["fraction_of_scripted"] == {"greedy": 0.5, "stochastic": 0.25}
    assert fields["score_definition"] == score.DEFINITION and "normalised_score_note" not in fields
    upside_down = score.score_fields({"greedy": -0.67, "scripted": -264.0, "random": -107.0})
    assert upside_down == {
        "normalised_score": {"greedy": None},
        "normalised_score_note": score.SCRIPTED_NOT_ABOVE_RANDOM,
        "fraction_of_scripted_note": score.SCRIPTED_NOT_POSITIVE,
        "score_definition": score.DEFINITION,
    }
    json.dumps(upside_down)  # JSON as is: None, never NaN
    # scripted above random but negative: a normalised score, no fraction
    negative = score.score_fields({"greedy": -5.0, "scripted": -1.0, "random": -9.0})
    assert negative["normalised_score"] == {"greedy": 0.5} and "fraction_of_scripted" not in negative
    assert score.score_fields({"greedy": 1.0}) == {}  # no baseline: no score
    assert score.score_fields({"greedy": 1.0, "scripted": 2.0}) == {
        "fraction_of_scripted": {"greedy": 0.5},
        "score_definition": score.DEFINITION,
    }
    lines = score.score_lines(upside_down)
    assert lines == [score.SCRIPTED_NOT_ABOVE_RANDOM, score.SCRIPTED_NOT_POSITIVE]
    assert score.score_lines(fields)[0].endswith("(R_scripted - R_random): greedy 0.500, stochastic 0.250")


def test_over_seeds_and_format_score():
    stats = score.over_seeds([0.5, 0.7])
    assert stats["mean"] == pytest.approx(0.6) and stats["per_seed"] == [0.5, 0.7] and stats["ci95"] > 0
    assert score.over_seeds([0.5, np.nan]) is None and score.over_seeds([]) is None
    assert score.format_score(0.12345) == "0.123" and score.format_score(None) == "n/a"
    assert score.format_score(float("nan"), 2, "—") == "—"


# ------------------------------------------------------------------------------- real episodes, world 6000
def _returns(env_id: str, tasks: tuple[int, ...]) -> dict[int, dict[str, float]]:
    """`{task: {"scripted", "random", "still": per-agent mean return}}` of full episodes on world 6000,
    every task and policy in one compiled program (a row index picks the policy; "still" = the no-op
    action every step, which for a vessel or drone means staying where it is)."""
    env, _ = hivex_jax.make(env_id)
    stack = hivex_jax.stack_params([hivex_jax.make(env_id, task=t)[1] for t in tasks])
    noop = env.action_space().noop()

    def make_policy(env_params):
        scripted = rollout.scripted_policy(env, env_params)
        random = rollout.random_policy(env)

        def policy(index, key, obs, state):
            actions = [scripted(None, key, obs, state), random(None, key, obs, state), noop]
            return jax.tree.map(lambda *xs: jnp.stack(xs)[index], *actions)

        return policy

    totals = rollout.evaluate_params(env, stack, make_policy, [6000], jnp.arange(3), key=0, batched=True)
    per_agent = totals["return"].mean(-1)[:, :, 0]  # [policies, tasks]
    return {
        t: dict(zip(("scripted", "random", "still"), map(float, per_agent[:, i]), strict=True))
        for i, t in enumerate(tasks)
    }


@pytest.fixture(scope="module")
def world_6000():
    return {
        "OceanPlasticCollection-v0": _returns("OceanPlasticCollection-v0", (0, 3)),
        "DroneBasedReforestation-v0": _returns("DroneBasedReforestation-v0", (0, 1, 4)),
    }


NEGATIVE_SCRIPTED = [
    ("OceanPlasticCollection-v0", 3),
    ("DroneBasedReforestation-v0", 1),
    ("DroneBasedReforestation-v0", 4),
]


@pytest.mark.parametrize(("env_id", "task"), NEGATIVE_SCRIPTED)
def test_negative_scripted_tasks_get_no_score_and_the_report_says_so(world_6000, env_id, task):
    r = world_6000[env_id][task]
    assert r["scripted"] < 0  # the tasks the old ratio ran backwards on
    assert r["random"] >= r["scripted"]  # ... because the scripted controller does not beat random there
    for policy in ("still", "random", "scripted"):
        assert np.isnan(score.normalised_score(r[policy], r["scripted"], r["random"]))
        assert np.isnan(score.fraction_of_scripted(r[policy], r["scripted"]))
    results = {
        "worlds": [6000],
        "policies": {
            name: {"summary": {"mean": r[key], "ci95": 0.0, "iqm": r[key], "num_seeds": 1}}
            for name, key in (("greedy", "still"), ("scripted", "scripted"), ("random", "random"))
        },
    }
    text = format_results(results)
    assert score.SCRIPTED_NOT_ABOVE_RANDOM in text and score.SCRIPTED_NOT_POSITIVE in text


def test_opc_task_3_returns_as_measured(world_6000):
    # what the old fraction got wrong: standing still far above scripted, random in between
    r = world_6000["OceanPlasticCollection-v0"][3]
    assert r["still"] > r["random"] > r["scripted"]
    assert r["still"] / r["scripted"] < r["random"] / r["scripted"]  # the old ratio ran backwards


@pytest.mark.parametrize("env_id", ["OceanPlasticCollection-v0", "DroneBasedReforestation-v0"])
def test_main_task_scores_order_as_the_returns_do(world_6000, env_id):
    r = world_6000[env_id][0]
    assert score.scripted_beats_random(r["scripted"], r["random"])
    scores = {p: float(score.normalised_score(v, r["scripted"], r["random"])) for p, v in r.items()}
    assert scores["random"] == pytest.approx(0.0) and scores["scripted"] == pytest.approx(1.0)
    by_return = sorted(r, key=r.get)
    assert sorted(scores, key=scores.get) == by_return and len(set(r.values())) == 3


def _totals(returns: np.ndarray) -> dict[str, np.ndarray]:
    """Episode totals with per-agent `returns` `[..., W, A]` (no reward terms or statistics)."""
    returns = np.asarray(returns, np.float32)
    return {
        "return": returns,
        "reward_terms": np.zeros((*returns.shape, 0), np.float32),
        "stats": {},
        "length": np.full(returns.shape[:-1], 5, np.int32),
    }


@pytest.mark.parametrize(
    ("scripted", "random", "normalised", "fraction"),
    [(10.0, 0.0, {"greedy": 0.5, "stochastic": 0.25}, {"greedy": 0.5, "stochastic": 0.25}),
     (-264.0, -107.0, {"greedy": None, "stochastic": None}, None)],
)  # fmt: skip
def test_the_evaluation_json_carries_the_normalised_score(scripted, random, normalised, fraction):
    """What `hivex train` and `hivex evaluate` write to eval.json (`HeldOutEvaluation.full`), here on
    hand-made totals: 2 seeds x 2 worlds x 1 agent, greedy mean 5, stochastic mean 2.5."""
    from baselines.run.evaluation import HeldOutEvaluation

    evaluation = object.__new__(HeldOutEvaluation)  # no compiled programs: only the JSON is under test
    evaluation.worlds, evaluation.distinct_episodes, evaluation.reward_term_names = (
        np.array([6000, 6001]),
        None,
        (),
    )
    evaluation.baseline_totals = lambda: {
        "scripted": _totals([[scripted], [scripted]]),
        "random": _totals([[random], [random]]),
    }
    trained = {"greedy": _totals([[[4.0], [6.0]], [[4.0], [6.0]]]), "stochastic": _totals([[[2.5]] * 2] * 2)}
    out = json.loads(json.dumps(evaluation.full(None, trained=trained)))  # as saved
    assert out["normalised_score"] == normalised and "ratio_to_scripted" not in out
    assert out.get("fraction_of_scripted") == fraction
    assert ("normalised_score_note" in out) == (normalised["greedy"] is None)
    text = format_results(out)  # what `hivex evaluate` prints: the same scores
    assert ("0.500" in text.splitlines()[2]) == (normalised["greedy"] is not None)
    no_baselines = evaluation.full(None, baselines=False, trained=trained)
    assert "normalised_score" not in no_baselines and "fraction_of_scripted" not in no_baselines


def test_transfer_cells_and_tables_carry_the_normalised_score():
    from baselines.config import load_config
    from baselines.run import transfer_matrix as tm

    config = load_config(None, [])
    per_seed_world = np.array([[-0.7, -0.6], [-50.0, -40.0]])  # 2 seeds x 2 worlds: seed means -0.65, -45
    ordered = tm.cell(per_seed_world, {"scripted": 10.0, "random": -90.0}, config, 3)
    assert ordered["normalised_score"]["per_seed"] == pytest.approx([0.8935, 0.45])  # (R + 90) / 100
    assert ordered["fraction_of_scripted"]["per_seed"] == pytest.approx([-0.065, -4.5])
    upside_down = tm.cell(per_seed_world, {"scripted": -264.0, "random": -107.0}, config, 3)
    assert upside_down["normalised_score"] is None and upside_down["fraction_of_scripted"] is None
    matrix = {
        "env_id": "WindFarmControl-v0",
        "worlds": [6000, 6001],
        "eval_seed": 0,
        "eval_settings": {"task=0": {}, "task=3": {}},
        "runs": {"a": {}},
        "cells": {"a": {"task=0": ordered, "task=3": upside_down}},
    }
    lines = tm.markdown(matrix).splitlines()
    assert lines[6:9] == ["| run | task=0 | task=3 |", "|---|---|---|", "| a | 0.67 ± 2.82 | n/a |"]
    assert f"n/a: {score.SCRIPTED_NOT_ABOVE_RANDOM} (or no scripted controller)." in lines


def test_the_sweep_table_cell_is_the_normalised_score_or_says_why_not():
    from baselines.cli.sweep import _normalised_text

    def row(*means):  # greedy, stochastic, scripted, random
        return {
            n: {"mean": v} for n, v in zip(("greedy", "stochastic", "scripted", "random"), means, strict=True)
        }

    assert _normalised_text(row(5.0, 2.5, 10.0, 0.0)) == "0.500 / 0.250"
    assert _normalised_text(row(-0.67, -50.0, -264.0, -107.0)) == "none (scripted does not beat random)"
