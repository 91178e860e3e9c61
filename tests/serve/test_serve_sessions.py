"""The server's logic without HTTP: session limits, the idle timeout, batching sessions of different tasks
into one compiled call, and the JSON codec (named actions, base64 visuals)."""

from __future__ import annotations

import asyncio
import base64
import time

import numpy as np
import pytest

import hivex_jax

pytest.importorskip("fastapi")

from hivex_jax.serve.app import HivexServer, ServeConfig  # noqa: E402
from hivex_jax.serve.codec import decode_action, encode_observation  # noqa: E402
from hivex_jax.serve.sessions import RequestError  # noqa: E402

ENV_ID = "WindFarmControl-v0"
ACTION = [{"discrete": [1]}] * 8


def reset_body(world_seed: int, **extra) -> dict:
    return {"env_id": ENV_ID, "world_seed": world_seed, "options": {"max_steps": 4}, **extra}


def test_session_limit_idle_timeout_and_mixed_tasks_in_one_batched_program():
    async def scenario():
        server = HivexServer(
            ServeConfig(max_sessions=2, initial_slots=2, idle_timeout_s=3600, envs=(ENV_ID,))
        )
        a = await server.reset(reset_body(1, task=0, level=0))
        b = await server.reset(reset_body(2, task=1, level=5))
        with pytest.raises(RequestError) as full:
            await server.reset(reset_body(3))
        assert full.value.status == 429 and "2 sessions" in full.value.message

        # two sessions of different tasks and patterns: one batch, one compiled step for both
        (worker,) = server.workers.values()
        await asyncio.gather(
            server.step({"session_id": a["session_id"], "action": ACTION}),
            server.step({"session_id": b["session_id"], "action": ACTION}),
        )
        assert (worker.batches, worker.session_steps) == (1, 2)
        await server.step({"session_id": b["session_id"], "action": ACTION})  # alone: waits the window
        assert (worker.batches, worker.session_steps) == (2, 3)
        assert worker.pool._step._cache_size() == 1
        assert [server.sessions[s["session_id"]].task for s in (a, b)] == [0, 1]

        # closing one frees room for another; idle sessions are closed by the sweep
        await server.close(a["session_id"])
        c = await server.reset(reset_body(3))
        assert len(server.sessions) == 2
        server.sessions[c["session_id"]].last_used -= 7200  # untouched for two hours
        assert await server.close_idle() == 1
        with pytest.raises(RequestError) as gone:
            await server.step({"session_id": c["session_id"], "action": ACTION})
        assert gone.value.status == 404
        assert list(server.sessions) == [b["session_id"]]

    asyncio.run(scenario())


def test_named_and_listed_actions_decode_alike_and_bad_ones_name_the_agent():
    env, _ = hivex_jax.make("AerialWildfireSuppression-v0")  # hybrid: 1 continuous + 1 discrete branch
    listed = [{"continuous": [0.5 - i], "discrete": [i % 2]} for i in range(env.num_agents)]
    named = {f"agent_{i}": a for i, a in enumerate(listed)}
    for form in (listed, named):
        action = decode_action(env, form)
        # -1.5 is outside the action bounds: clipped to -1 (the library's rule, as the env would)
        np.testing.assert_array_equal(action["continuous"], [[0.5], [-0.5], [-1.0]])
        np.testing.assert_array_equal(action["discrete"], [[0], [1], [0]])
    bad = [dict(a) for a in listed]
    bad[2] = {"continuous": [0.0], "discrete": [True]}
    with pytest.raises(RequestError, match="integers"):
        decode_action(env, bad)


def test_visual_observation_base64_round_trips_and_list_form_matches():
    env, _ = hivex_jax.make("AerialWildfireSuppression-v0")
    rng = np.random.default_rng(0)
    a, d = env.num_agents, env.observation_space()["vector"].shape[-1]
    h, w, c = env.observation_space()["visual"].shape[1:]
    obs = {"vector": rng.normal(size=(a, d)).astype(np.float32), "visual": rng.integers(0, 256, (a, h, w, c))}
    obs["visual"] = obs["visual"].astype(np.uint8)
    as_list = encode_observation(env, obs, "list")
    as_b64 = encode_observation(env, obs, "base64")
    for i in range(a):
        np.testing.assert_array_equal(np.asarray(as_list["agents"][i]["visual"], np.uint8), obs["visual"][i])
        packed = as_b64["agents"][i]["visual"]
        raw = np.frombuffer(base64.b64decode(packed["base64"]), packed["dtype"]).reshape(packed["shape"])
        np.testing.assert_array_equal(raw, obs["visual"][i])
        for name, part in env.observation_layout().items():
            assert as_list["agents"][i]["fields"][name] == obs["vector"][i, part].tolist()


def test_idle_sessions_time_out_by_the_clock():
    async def scenario():
        server = HivexServer(ServeConfig(idle_timeout_s=0.05, initial_slots=1, envs=(ENV_ID,)))
        s = await server.reset(reset_body(5))
        time.sleep(0.1)
        assert await server.close_idle() == 1
        assert s["session_id"] not in server.sessions

    asyncio.run(scenario())
