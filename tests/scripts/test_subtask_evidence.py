"""baselines.studies.subtask_evidence: reward-event counts per agent-episode, discounted returns and the
return's terms, on hand-computed per-step arrays; its rollout plays the held-out evaluation's episodes."""

import numpy as np
import pytest

from baselines.studies import subtask_evidence as evidence
from hivex_jax.envs.drone_based_reforestation.params import REWARD_TERM_NAMES  # noqa: E402

DBR = evidence.ENVS["dbr"]
STAT_KEYS = sorted({key for kind, key in DBR.events.values() if kind == "stat"})


def _steps(w: int, t: int, a: int) -> dict:
    """Zero per-step arrays of `play`'s shape, every step live."""
    k = len(REWARD_TERM_NAMES)
    return {
        "reward": np.zeros((w, t, a)),
        "terms": np.zeros((w, t, a, k)),
        "raw_terms": np.zeros((w, t, a, k)),
        "stats": {key: np.zeros((w, t, a)) for key in STAT_KEYS},
        "live": np.ones((w, t), bool),
    }


def test_count_events_counts_live_steps_per_drone_episode():
    # one world, 4 steps, 2 drones: drone 0 has the event at steps 1 and 3, but step 3 is after the end
    mask = np.zeros((1, 4, 2), bool)
    mask[0, 1, 0] = mask[0, 3, 0] = True
    live = np.array([[True, True, True, False]])
    counts = evidence.count_events({"e": mask}, live)["e"]
    assert counts == {"per_episode": 0.5, "episodes_with": 0.5, "first_step": 1.0}
    # two worlds: 2 events in one drone-episode of four, first at steps 0 and 2
    mask = np.zeros((2, 3, 2), bool)
    mask[0, 0, 1] = mask[0, 2, 1] = mask[1, 2, 0] = True
    counts = evidence.count_events({"e": mask}, np.ones((2, 3), bool))["e"]
    assert counts["per_episode"] == pytest.approx(3 / 4)
    assert counts["episodes_with"] == pytest.approx(2 / 4)
    assert counts["first_step"] == pytest.approx((0 + 2) / 2)
    # never seen: no first step
    assert np.isnan(
        evidence.count_events({"e": np.zeros((1, 2, 1), bool)}, np.ones((1, 2), bool))["e"]["first_step"]
    )


def test_discounted_returns_weight_live_steps_by_gamma_to_the_t():
    reward = np.array([[[1.0], [2.0], [4.0]]])  # [W=1, T=3, A=1]
    assert evidence.discounted_returns(reward, np.ones((1, 3), bool), 0.5)[0, 0] == pytest.approx(3.0)
    assert evidence.discounted_returns(reward, np.array([[True, True, False]]), 0.5)[0, 0] == pytest.approx(
        2.0
    )
    assert evidence.discounted_returns(reward, np.ones((1, 3), bool), 1.0)[0, 0] == pytest.approx(7.0)


def test_event_masks_read_the_named_term_or_statistic():
    steps = _steps(1, 3, 1)
    steps["raw_terms"][0, 1, 0, REWARD_TERM_NAMES.index("pick_up_seed")] = 1.0
    steps["raw_terms"][0, 2, 0, REWARD_TERM_NAMES.index("drop_seed")] = 12.5
    steps["stats"]["tree_drop_count"][0, 2, 0] = 1.0
    steps["stats"]["seed_pick_up_count"][0, 1, 0] = 1.0
    masks = evidence.event_masks(steps["raw_terms"], steps["stats"], REWARD_TERM_NAMES, DBR.events)
    assert masks["paid pick-up"][0, :, 0].tolist() == [False, True, False]
    assert masks["seed pick-up"][0, :, 0].tolist() == [False, True, False]
    assert masks["valid drop"][0, :, 0].tolist() == [False, False, True]
    assert masks["drop"][0, :, 0].tolist() == [False, False, True]
    assert not masks["drop success"].any() and not masks["return paid"].any()


def test_summarize_returns_terms_and_events_of_live_steps():
    steps = _steps(2, 2, 1)
    pick = REWARD_TERM_NAMES.index("pick_up_seed")
    # world 0: a paid pick-up worth 100 at step 1; world 1: one at step 1 after the episode ended at step 0
    for w in (0, 1):
        steps["reward"][w, 1, 0] = 100.0
        steps["terms"][w, 1, 0, pick] = 100.0
        steps["raw_terms"][w, 1, 0, pick] = 1.0
    steps["live"][1, 1] = False
    out = evidence.summarize(steps, REWARD_TERM_NAMES, [0.5, 1.0], DBR.events)
    assert out["return"] == pytest.approx(50.0)  # (100 + 0) / 2 drone-episodes
    assert out["discounted_returns"] == {"0.5": pytest.approx(25.0), "1.0": pytest.approx(50.0)}
    assert out["terms"] == {"pick_up_seed": pytest.approx(50.0)}
    assert out["events"]["paid pick-up"]["per_episode"] == pytest.approx(0.5)
    assert out["length"] == pytest.approx(1.5)


@pytest.mark.parametrize("name", sorted(evidence.ENVS))
def test_each_envs_events_name_its_reward_terms_and_statistics(name):
    """Every event reads a term of the env's `reward_term_names` or a key of the `info["stats"]` its step
    returns (shapes only: `jax.eval_shape`, nothing compiled), and the task names are the env's."""
    import jax

    import hivex_jax

    subtask_env = evidence.ENVS[name]
    env, params = hivex_jax.make(subtask_env.env_id)
    key = jax.random.PRNGKey(0)
    _, state = jax.eval_shape(env.reset, key, params)
    action = env.action_space().noop()
    info = jax.eval_shape(env.step, key, state, action, params)[-1]
    for event, (kind, key_name) in subtask_env.events.items():
        names = env.reward_term_names if kind == "term" else info["stats"]
        assert key_name in names, (event, kind, key_name)
    assert subtask_env.first_event in subtask_env.events
    assert len(subtask_env.task_names) == len(params.task_weights)


def test_aws_event_masks_read_pick_ups_and_crashes():
    from hivex_jax.envs.aerial_wildfire_suppression.params import REWARD_TERM_NAMES as AWS_TERMS

    aws = evidence.ENVS["aws"]
    stats = {key: np.zeros((1, 3, 2)) for kind, key in aws.events.values() if kind == "stat"}
    raw = np.zeros((1, 3, 2, len(AWS_TERMS)))
    stats["water_pickup"][0, 1, 1] = 1.0  # plane 1 picks up water at step 1
    stats["crash_count"][0, 2, 0] = 1.0  # plane 0 crashes at step 2
    raw[0, 0, :, AWS_TERMS.index("find_fire")] = 1.0  # both find the fire at step 0
    masks = evidence.event_masks(raw, stats, AWS_TERMS, aws.events)
    assert masks["water pick-up"][0].tolist() == [[False, False], [False, True], [False, False]]
    assert masks["crash"][0, :, 0].tolist() == [False, False, True]
    assert masks["fire found"][0, 0].tolist() == [True, True]
    assert not masks["village found"].any()
    counts = evidence.count_events(masks, np.ones((1, 3), bool))
    assert counts["water pick-up"] == {"per_episode": 0.5, "episodes_with": 0.5, "first_step": 1.0}


@pytest.mark.slow
def test_play_matches_the_held_out_evaluators_returns():
    """`play` steps the episodes `rollout.evaluate` does (same world and step keys): same returns."""
    import jax

    import hivex_jax
    from hivex_jax.eval import rollout

    # Drop Seed: random drones drop early, which ends them one by one
    env, params = hivex_jax.make("DroneBasedReforestation-v0", task=3)
    params = params.replace(max_steps=jax.numpy.int32(20))
    key = jax.random.PRNGKey(12345)
    policy = rollout.random_policy(env)
    steps = evidence.play(env, params, policy, [6000, 6001], key=key)
    totals = rollout.evaluate(env, params, policy, [6000, 6001], key=key)
    played = (steps["reward"] * steps["live"][:, :, None]).sum(axis=1)
    np.testing.assert_allclose(played, totals["return"], rtol=1e-5, atol=1e-5)
    stats = {k: v.sum(axis=1) for k, v in steps["stats"].items()}
    np.testing.assert_allclose(stats["tree_drop_count"], totals["stats"]["tree_drop_count"])
    assert stats["tree_drop_count"].sum() > 0  # the case the comparison is about happened
