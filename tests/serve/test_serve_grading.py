"""The grade's score (`hivex_jax.serve.grading`): the project's one normalised score
`(R - R_random) / (R_scripted - R_random)` from the session's episode and the reference episodes the
server plays on its world, none (with the reason) where scripted does not beat random or the references
were cut; `fraction_of_scripted` only where the scripted return is positive.

The hand-computed cases run in the default suite; the slow test grades standing still, random and
scripted sessions on Ocean Plastic Collection tasks 0 and 3 and Drone-Based Reforestation task 1, world
6000, in process (each env's pool and references compile for tens of seconds)."""

from __future__ import annotations

import asyncio

import jax
import numpy as np
import pytest

import hivex_jax

pytest.importorskip("fastapi")

from hivex_jax.eval.rollout import find_scripted_policy  # noqa: E402
from hivex_jax.eval.score import SCRIPTED_NOT_ABOVE_RANDOM, SCRIPTED_NOT_POSITIVE  # noqa: E402
from hivex_jax.serve.codec import encode_action  # noqa: E402
from hivex_jax.serve.config import ServeConfig  # noqa: E402
from hivex_jax.serve.grading import scores  # noqa: E402
from hivex_jax.serve.server import HivexServer  # noqa: E402


def reference(value: float, complete: bool = True, cap: int = 1000) -> dict:
    return {"return": value, "complete": complete, "step_cap": cap}


def test_scores_by_hand():
    # scripted 10 beats random 2: an agent of 6 is half way, of 2 is random's 0, of 14 is 1.5
    for agent, expected in ((6.0, 0.5), (2.0, 0.0), (14.0, 1.5), (-2.0, -0.5)):
        got = scores(agent, reference(10.0), reference(2.0))
        assert got["normalised_score"] == pytest.approx(expected) and got["notes"] == []
        assert got["fraction_of_scripted"] == pytest.approx(agent / 10.0)
    # both negative, scripted above random (-40 vs -100): the score rises with the return; no fraction
    low, high = (scores(agent, reference(-40.0), reference(-100.0)) for agent in (-70.0, -10.0))
    assert (low["normalised_score"], high["normalised_score"]) == (pytest.approx(0.5), pytest.approx(1.5))
    assert low["fraction_of_scripted"] is None and low["notes"] == [SCRIPTED_NOT_POSITIVE]
    # Ocean Plastic Collection task 3's figures (scripted -264, random -103): no score, and said so
    got = scores(-0.67, reference(-264.0), reference(-103.0))
    assert got == {
        "normalised_score": None,
        "fraction_of_scripted": None,
        "notes": [SCRIPTED_NOT_ABOVE_RANDOM, SCRIPTED_NOT_POSITIVE],
    }
    # a reference cut at the step cap: nothing to compare with
    got = scores(5.0, reference(10.0, complete=False, cap=300), reference(2.0))
    assert got["normalised_score"] is None and got["fraction_of_scripted"] is None
    assert "cut at the step cap of 300 steps" in got["notes"][0]


async def play(server: HivexServer, env_id: str, task: int, steps: int, kind: str) -> dict:
    """One episode of `kind` (standing still, random or the scripted controller from the served
    observations) on world 6000, then its grade."""
    env, params = hivex_jax.make(env_id, max_steps=steps)
    params = env.variant_params(params, task=task)
    opened = await server.reset(
        {"env_id": env_id, "world_seed": 6000, "task": task, "options": {"max_steps": steps}}
    )
    session, observation, done = opened["session_id"], opened["observation"], False
    rng, controller = np.random.default_rng(0), jax.jit(find_scripted_policy(env))
    a, c, branches = env.num_agents, env.continuous_dims, env.discrete_branches
    while not done:
        if kind == "still":
            action = {
                "continuous": np.zeros((a, c), np.float32),
                "discrete": np.zeros((a, len(branches)), np.int32),
            }
        elif kind == "random":
            discrete = np.stack([rng.integers(0, n, a) for n in branches], -1).astype(np.int32)
            action = {"continuous": rng.uniform(-1, 1, (a, c)).astype(np.float32), "discrete": discrete}
        else:
            agents = observation["agents"]
            obs = {"vector": np.asarray([x["vector"] for x in agents], np.float32)}
            if "visual" in agents[0]:
                obs["visual"] = np.asarray([x["visual"] for x in agents], np.uint8)
            action = jax.tree.map(np.asarray, controller(obs, params))
        reply = await server.step({"session_id": session, "action": encode_action(env, action)})
        observation, done = reply["observation"], reply["done"]
    return await server.grade(session)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "task", "steps"),
    [
        ("OceanPlasticCollection-v0", 3, 300),
        ("OceanPlasticCollection-v0", 0, 300),
        ("DroneBasedReforestation-v0", 1, 399),
    ],
)
def test_standing_still_random_and_scripted_are_scored_in_the_order_of_their_returns(env_id, task, steps):
    """Where scripted beats random the three normalised scores are ordered as the three returns (and the
    scripted session, whose steps draw no randomness here, scores 1); where it does not, every grade
    says there is no score."""

    async def grades() -> dict[str, dict]:
        server = HivexServer(ServeConfig(envs=(env_id,)))
        return {
            kind: await play(server, env_id, task, steps, kind) for kind in ("still", "random", "scripted")
        }

    graded = asyncio.run(grades())
    returns = {kind: g["episode"]["return"] for kind, g in graded.items()}
    scripted, random = graded["still"]["scripted"]["return"], graded["still"]["random"]["return"]
    if scripted - random > 1e-3 * max(abs(scripted), abs(random)):
        normalised = {kind: g["normalised_score"] for kind, g in graded.items()}
        assert sorted(normalised, key=normalised.get) == sorted(returns, key=returns.get), (
            normalised,
            returns,
        )
        assert normalised["scripted"] == pytest.approx(1.0, abs=1e-4)
        for kind, g in graded.items():
            assert g["normalised_score"] == pytest.approx((returns[kind] - random) / (scripted - random))
    else:
        for g in graded.values():
            assert g["normalised_score"] is None and SCRIPTED_NOT_ABOVE_RANDOM in g["notes"], g
