"""`hivex serve` over real HTTP: the server runs as a subprocess on a free 127.0.0.1 port and httpx plays
full episodes against it. Short WindFarmControl episodes (max_steps overridden) keep it fast."""

from __future__ import annotations

import functools
import json
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np
import pytest
from server_process import running_server

import hivex_jax
from hivex_jax.core.seeding import adapter_episode_key, adapter_step_key, world_key
from hivex_jax.eval.rollout import find_scripted_policy
from hivex_jax.eval.score import SCRIPTED_NOT_ABOVE_RANDOM

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

ENV_ID = "WindFarmControl-v0"
MAX_STEPS = 6
CONCURRENT = 32
ULPS = 1e-5  # relative and absolute: float32 rounding, far below any reward or observation change


@pytest.fixture(scope="module")
def base_url():
    # slots for every session the tests open at once (the 32 concurrent ones plus a few), so one program;
    # a wide batch window so the concurrent test's batches are whole even on a loaded CPU; the state and
    # the public step keys exposed, so served episodes are compared with in-process ones whole
    flags = ["--env", ENV_ID, "--max-sessions", "48", "--initial-slots", "64", "--batch-window-ms", "200"]
    flags += ["--expose-state"]
    with running_server(*flags) as (_, _, url):
        yield url


def reset(client, world_seed: int, **extra) -> dict:
    body = {"env_id": ENV_ID, "world_seed": world_seed, "options": {"max_steps": MAX_STEPS}, **extra}
    r = client.post("/reset", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def as_json_action(discrete: np.ndarray) -> list[dict]:
    return [{"continuous": [], "discrete": [int(x) for x in row]} for row in discrete]


@functools.cache
def reference_env():
    """(env, params, jitted reset, jitted step), built once: params are jit arguments, as the server
    passes them (closed-over constants may differ by an ulp)."""
    env, params = hivex_jax.make(ENV_ID, max_steps=MAX_STEPS)
    return env, params, jax.jit(env.reset), jax.jit(env.step)


def in_process_episode(world_seed: int, actions: list[np.ndarray], task: int = 0, pattern: int = 0):
    """(first obs vector, [(obs vector, reward, terminated, truncated)] per step) with the server's keys."""
    env, params, reset_fn, step = reference_env()
    params = env.variant_params(params, task=task, level=pattern)
    obs, state = reset_fn(world_key(world_seed), params)
    episode_key = adapter_episode_key(world_seed)
    first, out = np.asarray(obs["vector"]), []
    for t, discrete in enumerate(actions):
        action = {"continuous": np.zeros((env.num_agents, 0), np.float32), "discrete": discrete}
        obs, state, reward, term, trunc, _ = step(adapter_step_key(episode_key, t), state, action, params)
        out.append((np.asarray(obs["vector"]), np.asarray(reward), np.asarray(term), np.asarray(trunc)))
    return first, out, state


def served_vector(observation: dict) -> np.ndarray:
    return np.asarray([agent["vector"] for agent in observation["agents"]], np.float32)


@pytest.mark.slow
@pytest.mark.xla_default_code  # the first observation: bit for bit with the default emitters (conftest)
def test_served_episode_equals_in_process_and_grades_the_scripted_controller_as_one(base_url):
    """The scripted controller played over HTTP: every observation, reward and end flag equals the
    in-process episode with the same world seed and step keys, the grader scores it 1.0 (normalised and
    as a fraction of the scripted return), and the exposed state matches the in-process state."""
    env, params = hivex_jax.make(ENV_ID, max_steps=MAX_STEPS)
    params = env.variant_params(params, task=1, level=3)
    controller = find_scripted_policy(env)
    world = 6001
    with httpx.Client(base_url=base_url, timeout=300) as client:
        first = reset(client, world, task=1, level=3)
        session = first["session_id"]
        assert first["info"]["task"] == 1 and first["info"]["level"] == 3
        layout = env.observation_layout()
        agent0 = first["observation"]["agents"][0]
        assert agent0["fields"]["facing"] == agent0["vector"][layout["facing"]]
        obs = {"vector": served_vector(first["observation"])}
        served, actions = [], []
        for _ in range(MAX_STEPS):
            discrete = np.asarray(controller(obs, params)["discrete"])
            actions.append(discrete)
            r = client.post("/step", json={"session_id": session, "action": as_json_action(discrete)})
            assert r.status_code == 200, r.text
            served.append(r.json())
            obs = {"vector": served_vector(served[-1]["observation"])}
        assert [s["done"] for s in served] == [False] * (MAX_STEPS - 1) + [True]

        reference_first, reference, reference_state = in_process_episode(world, actions, task=1, pattern=3)
        np.testing.assert_array_equal(served_vector(first["observation"]), reference_first)
        for s, (vector, reward, term, trunc) in zip(served, reference, strict=True):
            # a few float32 ulps: the server's step is vmapped over slots, which XLA compiles differently
            np.testing.assert_allclose(served_vector(s["observation"]), vector, rtol=ULPS, atol=ULPS)
            np.testing.assert_allclose(np.asarray(s["reward"], np.float32), reward, rtol=ULPS, atol=ULPS)
            assert s["terminated"] == term.tolist() and s["truncated"] == trunc.tolist()

        # an action after the end is refused, and the session still answers
        r = client.post("/step", json={"session_id": session, "action": as_json_action(actions[0])})
        assert r.status_code == 409 and "ended" in r.json()["detail"]

        grade = client.post(f"/grade/{session}").json()
        episode_return = float(np.mean(np.sum([ref[1] for ref in reference], axis=0)))
        assert grade["episode"]["length"] == MAX_STEPS
        assert grade["episode"]["return"] == pytest.approx(episode_return, rel=1e-6)
        assert grade["scripted"]["return"] == pytest.approx(episode_return, rel=1e-5)
        assert grade["fraction_of_scripted"] == pytest.approx(1.0, rel=1e-5)
        assert grade["random"]["complete"] and grade["random"]["length"] == MAX_STEPS
        if grade["random"]["return"] < episode_return - 1e-3 * abs(episode_return):  # a usable scale
            assert grade["normalised_score"] == pytest.approx(1.0, rel=1e-4)
        else:  # six steps can leave random level with scripted: no scale, said so
            assert grade["normalised_score"] is None and SCRIPTED_NOT_ABOVE_RANDOM in grade["notes"]

        state = client.get(f"/state/{session}").json()
        assert state["state_exposed"] is True and state["state"]["step"] == MAX_STEPS
        np.testing.assert_allclose(
            np.asarray(state["state"]["facing_angle"], np.float32),
            np.asarray(reference_state.facing_angle),
            rtol=ULPS,
            atol=ULPS,
        )
        assert state["params"]["task"] == 1 and state["params"]["max_steps"] == MAX_STEPS

        assert client.delete(f"/session/{session}").status_code == 200
        r = client.get(f"/state/{session}")
        assert r.status_code == 404 and session in r.json()["detail"]


def play_random(base_url: str, world_seed: int) -> tuple[list[np.ndarray], list[list[float]]]:
    """One full episode of seeded random actions over its own connection: (actions, rewards)."""
    rng = np.random.default_rng(world_seed)
    actions, rewards = [], []
    with httpx.Client(base_url=base_url, timeout=300) as client:
        session = reset(client, world_seed)["session_id"]
        done = False
        while not done:
            discrete = rng.integers(0, 3, size=(8, 1)).astype(np.int32)
            # half the clients name their agents, half send a list: both forms are one action
            action = as_json_action(discrete)
            if world_seed % 2:
                action = {f"agent_{i}": a for i, a in enumerate(action)}
            r = client.post("/step", json={"session_id": session, "action": action})
            assert r.status_code == 200, r.text
            actions.append(discrete)
            rewards.append(r.json()["reward"])
            done = r.json()["done"]
        assert client.delete(f"/session/{session}").status_code == 200
    return actions, rewards


def test_32_concurrent_sessions_are_batched_and_each_equals_its_in_process_episode(base_url):
    before = httpx.get(f"{base_url}/health").json()
    worlds = list(range(100, 100 + CONCURRENT))
    with ThreadPoolExecutor(CONCURRENT) as pool:
        played = list(pool.map(lambda w: play_random(base_url, w), worlds))
    after = httpx.get(f"{base_url}/health").json()
    (pool_before,) = before["pools"] or [{"batches": 0, "session_steps": 0}]
    (pool_after,) = after["pools"]
    steps = pool_after["session_steps"] - pool_before["session_steps"]
    batches = pool_after["batches"] - pool_before["batches"]
    assert steps == CONCURRENT * MAX_STEPS
    # one call per session step would make batches == steps; batching makes them a few per episode step
    assert batches <= steps / 4, (batches, steps)
    for world, (actions, rewards) in zip(worlds, played, strict=True):
        assert len(rewards) == MAX_STEPS
        _, reference, _ = in_process_episode(world, actions)
        np.testing.assert_allclose(
            np.asarray(rewards, np.float32), np.stack([r[1] for r in reference]), rtol=ULPS, atol=ULPS
        )


def test_bad_inputs_get_one_line_4xx_and_the_server_keeps_serving(base_url):
    with httpx.Client(base_url=base_url, timeout=300) as client:
        session = reset(client, 7)["session_id"]
        good = as_json_action(np.ones((8, 1), np.int32))
        headers = {"content-type": "application/json"}
        cases = [
            (client.post("/step", content=b'{"session_id": ', headers=headers), 400, "malformed JSON"),
            (client.post("/step", content=b"[1, 2]", headers=headers), 400, "JSON object"),
            (client.post("/reset", json={"env_id": "NoSuchEnv-v0"}), 404, "NoSuchEnv-v0"),
            (client.post("/reset", json={"env_id": ENV_ID, "world_seed": -1}), 400, "world_seed"),
            (client.post("/reset", json={"env_id": ENV_ID, "options": {"no_such": 1}}), 400, "no_such"),
            (client.post("/reset", json={"env_id": ENV_ID, "task": 9}), 400, "task"),
            (client.post("/reset", json={"env_id": ENV_ID, "options": {"num_agents": 4}}), 400, "num_agents"),
            (client.post("/step", json={"session_id": "nope", "action": good}), 404, "nope"),
            (
                client.post("/step", json={"session_id": session, "action": good[:7]}),
                400,
                "one entry per agent",
            ),
            (
                client.post("/step", json={"session_id": session, "action": [{"discrete": [1.5]}] * 8}),
                400,
                "integers",
            ),
            (
                client.post("/step", json={"session_id": session, "action": [{"discrete": [1, 1]}] * 8}),
                400,
                "1 entries",
            ),
            (
                client.post("/step", json={"session_id": session, "action": [{"discrete": [3]}] * 8}),
                400,
                "[0, 3)",
            ),
            (
                client.post(
                    "/step",
                    json={"session_id": session, "action": [{"discrete": [1], "continuous": [0.5]}] * 8},
                ),
                400,
                "no continuous",
            ),
            (
                client.post("/step", json={"session_id": session, "action": {"agent_0": good[0]}}),
                400,
                "missing agents",
            ),
            (client.post("/step", json={"session_id": session}), 400, "action"),
            (client.post("/grade/nope"), 404, "nope"),
            (client.delete("/session/nope"), 404, "nope"),
        ]
        for response, status, words in cases:
            detail = response.json()["detail"]
            assert response.status_code == status, (response.status_code, detail, words)
            assert isinstance(detail, str) and "\n" not in detail and words in detail, (detail, words)
        # the session refused above is untouched: its first step is still step 0 and plays normally
        r = client.post("/step", json={"session_id": session, "action": good})
        assert r.status_code == 200 and r.json()["info"]["step"] == 1
        assert client.get("/health").json()["status"] == "healthy"
        client.delete(f"/session/{session}")


def test_visual_encoding_choice_and_env_description(base_url):
    """The description matches the env, and an env without a camera sends no visual in either encoding."""
    env, params = hivex_jax.make(ENV_ID)
    with httpx.Client(base_url=base_url, timeout=300) as client:
        described = client.get(f"/envs/{ENV_ID}").json()
        meanings = described["action"].pop("meanings")
        assert described["action"] == {"continuous": 0, "discrete_branches": list(env.discrete_branches)}
        assert meanings["discrete"][0]["options"][0] == "no-op" and meanings["continuous"] == []
        assert described["observation"]["fields"] == {
            k: [v.start, v.stop] for k, v in env.observation_layout().items()
        }
        assert described["max_steps"] == int(params.max_steps)
        first = reset(client, 3, visual_encoding="base64")
        assert "visual" not in first["observation"]["agents"][0]
        assert json.dumps(first)  # plain JSON
        client.delete(f"/session/{first['session_id']}")
