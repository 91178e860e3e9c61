"""`hivex serve` against hostile and careless clients: the session limit and per-client quota
hold under concurrent resets, a grade never blocks steps, one grade per client at a time, repeated grades
come from the cache, a grade plays at most `--max-grade-steps`, compiled pools are evicted least recently
used, options the server does not serve are refused, huge and non-finite continuous actions follow the
library's rule, and every refusal is a one-line 4xx. One real server subprocess for the module; clients
get distinct addresses (127.0.0.N) so per-client limits can be told apart."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from server_process import running_server

import hivex_jax

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from hivex_jax.serve.app import HivexServer, ServeConfig  # noqa: E402
from hivex_jax.serve.codec import decode_action  # noqa: E402

WFC = "WindFarmControl-v0"
AWS = "AerialWildfireSuppression-v0"
MAX_SESSIONS = 12
PER_CLIENT = 4
MAX_POOLS = 3
GRADE_CAP = 300_000  # scripted steps one grade plays (a 1,000,000-step session is cut here)
WFC_ACTION = [{"discrete": [1]}] * 8


@pytest.fixture(scope="module")
def base_url():
    flags = ["--env", WFC, "--env", AWS, "--max-sessions", str(MAX_SESSIONS)]
    flags += ["--max-sessions-per-client", str(PER_CLIENT), "--max-pools", str(MAX_POOLS)]
    flags += ["--allow-static-options", "--max-grade-steps", str(GRADE_CAP)]
    # the public step keys: two AerialWildfireSuppression sessions on one world are compared draw for draw
    flags += ["--expose-state"]
    with running_server(*flags) as (_, _, url):
        yield url


def client(base_url: str, address: int = 1) -> httpx.Client:
    """A client connecting from 127.0.0.`address` (the server tells clients apart by address)."""
    transport = httpx.HTTPTransport(local_address=f"127.0.0.{address}")
    return httpx.Client(base_url=base_url, timeout=300, transport=transport)


def reset(c: httpx.Client, env_id: str = WFC, world_seed: int = 0, **options) -> httpx.Response:
    return c.post("/reset", json={"env_id": env_id, "world_seed": world_seed, "options": options})


def opened(c: httpx.Client, env_id: str = WFC, world_seed: int = 0, **options) -> str:
    r = reset(c, env_id, world_seed, **options)
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


def refused(r: httpx.Response, status: int, words: str) -> None:
    detail = r.json()["detail"]
    assert r.status_code == status, (r.status_code, detail, words)
    assert isinstance(detail, str) and "\n" not in detail and words in detail, (detail, words)


def close_all(base_url: str, session_ids, address: int = 1) -> None:
    """Close sessions opened from 127.0.0.`address` (only their owner may)."""
    with client(base_url, address) as c:
        for s in session_ids:
            assert c.delete(f"/session/{s}").status_code in (200, 404)


def test_40_concurrent_resets_at_the_limit_never_exceed_it(base_url):
    """40 clients (distinct addresses) reset at once into a fresh pool whose first reset compiles: the
    server opens exactly its limit, refuses the rest with 429, and counts them all."""

    def one(i: int) -> httpx.Response:
        with client(base_url, 20 + i) as c:
            return reset(c, world_seed=i, max_steps=50)

    with ThreadPoolExecutor(40) as pool:
        replies = list(pool.map(one, range(40)))
    ok = {20 + i: r.json()["session_id"] for i, r in enumerate(replies) if r.status_code == 200}
    for r in replies:
        if r.status_code != 200:
            refused(r, 429, f"maximum of {MAX_SESSIONS} sessions")
    try:
        assert len(ok) == MAX_SESSIONS
        assert httpx.get(f"{base_url}/health").json()["sessions"] == MAX_SESSIONS
    finally:
        for address, session in ok.items():
            close_all(base_url, [session], address)
    assert httpx.get(f"{base_url}/health").json()["sessions"] == 0


def test_per_client_quota_holds_under_concurrency_and_leaves_others_room(base_url):
    def one(i: int) -> httpx.Response:
        with client(base_url, 2) as c:
            return reset(c, world_seed=i, max_steps=50)

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(one, range(8)))
    mine = [r.json()["session_id"] for r in replies if r.status_code == 200]
    try:
        assert len(mine) == PER_CLIENT
        for r in replies:
            if r.status_code != 200:
                refused(r, 429, f"client 127.0.0.2 holds its quota of {PER_CLIENT} sessions")
        with client(base_url, 3) as other:  # another address still gets sessions
            theirs = opened(other, max_steps=50)
        close_all(base_url, [theirs], 3)
    finally:
        close_all(base_url, mine, 2)


def test_grade_runs_beside_steps_one_per_client_capped_and_cached(base_url):
    """A long grade (a 1,000,000-step session, cut at the server's cap) runs while another session
    steps: 20 steps complete before the grade answers. The same client's second grade meanwhile is a 429,
    another client's is served; the grade says it was cut; grading it again comes from the cache."""
    a, b = client(base_url, 2), client(base_url, 3)
    long_session = opened(a, world_seed=11, max_steps=1_000_000)
    short_a = opened(a, world_seed=12, max_steps=50)
    short_b = opened(b, world_seed=13, max_steps=50)
    stepper = opened(b, world_seed=14, max_steps=4999)
    try:
        with ThreadPoolExecutor(1) as pool:
            grading = pool.submit(a.post, f"/grade/{long_session}")
            while not grading.done():  # until the server says the grade is being played
                pools = httpx.get(f"{base_url}/health").json()["pools"]
                if any(p["grading"] for p in pools):
                    break
                time.sleep(0.01)
            steps_while_grading = 0
            while not grading.done() and steps_while_grading < 20:
                r = b.post("/step", json={"session_id": stepper, "action": WFC_ACTION})
                assert r.status_code == 200, r.text
                steps_while_grading += 1
            second_from_a = a.post(f"/grade/{short_a}")
            still_grading = not grading.done()
            from_b = b.post(f"/grade/{short_b}")
            graded = grading.result()
        assert steps_while_grading == 20 and still_grading
        refused(second_from_a, 429, "already has a grade running")
        assert from_b.status_code == 200 and from_b.json()["scripted"]["complete"], from_b.text

        assert graded.status_code == 200, graded.text
        scripted = graded.json()["scripted"]
        assert scripted["length"] == GRADE_CAP and scripted["step_cap"] == GRADE_CAP
        assert scripted["complete"] is False and scripted["cached"] is False
        random = graded.json()["random"]
        assert random["length"] == GRADE_CAP and random["complete"] is False
        # no score against reference episodes cut short, and the grade says why
        assert graded.json()["fraction_of_scripted"] is None and graded.json()["normalised_score"] is None
        assert "cut at the step cap" in graded.json()["notes"][0]

        again = a.post(f"/grade/{long_session}").json()["scripted"]
        assert again["cached"] is True and again["return"] == scripted["return"]
        # the same world and options in another session (another client) is the same cached episode
        twin = opened(b, world_seed=11, max_steps=1_000_000)
        assert b.post(f"/grade/{twin}").json()["scripted"] == {**scripted, "cached": True}
        b.delete(f"/session/{twin}")
        # the short session graded twice: complete, the fraction defined, the second from the cache
        first, second = (a.post(f"/grade/{short_a}").json() for _ in range(2))
        assert first["scripted"]["complete"] and first["scripted"]["length"] == 50
        assert first["fraction_of_scripted"] is not None and first["random"]["length"] == 50
        assert (first["scripted"]["cached"], second["scripted"]["cached"]) == (False, True)
        assert second["random"] == {**first["random"], "cached": True}
    finally:
        close_all(base_url, [long_session, short_a], 2)
        close_all(base_url, [short_b, stepper], 3)
        a.close()
        b.close()


def test_unserved_options_and_bad_requests_get_one_line_4xx(base_url):
    with client(base_url) as c:
        session = opened(c, world_seed=3, max_steps=50)
        closed = opened(c, world_seed=4, max_steps=50)
        assert c.delete(f"/session/{closed}").status_code == 200
        cases = [
            (reset(c, world_files=6), 400, "not served"),  # never a folder named ./6
            (reset(c, world_files=[6, 7]), 400, "not served"),
            (reset(c, stress_worlds=1), 400, "not served"),
            (reset(c, message_dims=4), 400, "message_dims"),  # not silently dropped
            (reset(c, message_vocab=3, message_loss=0.1), 400, "not served"),
            (reset(c, max_steps=2**40), 400, "max_steps"),  # beyond int32: make's ValueError, not a 500
            (reset(c, max_steps=1e308), 400, "max_steps"),
            (reset(c, num_agents=10**6), 400, "num_agents"),  # a static option beyond make's bounds
            (reset(c, AWS, camera_size=0), 400, "camera_size"),
            (c.post("/reset", json={"env_id": WFC, "options": [1, 2]}), 400, "options must be an object"),
            (c.post("/reset", json={"env_id": WFC, "task": "1"}), 400, "task must be an integer"),
            (c.post("/reset", json={"env_id": WFC, "world_seed": 1.5}), 400, "world_seed"),
            (c.post("/reset", json={"env_id": 7}), 404, "unknown env_id"),
            (c.post("/step", json={"session_id": 5, "action": WFC_ACTION}), 404, "unknown session_id"),
            (c.post("/step", json={"session_id": session, "action": "left"}), 400, "action must be"),
            (c.post("/step", json={"session_id": closed, "action": WFC_ACTION}), 404, closed),
            (c.post(f"/grade/{closed}"), 404, closed),
            (c.get(f"/state/{closed}"), 404, closed),
            (c.delete(f"/session/{closed}"), 404, closed),
        ]
        for response, status, words in cases:
            refused(response, status, words)
        r = c.post("/step", json={"session_id": session, "action": WFC_ACTION})
        assert r.status_code == 200 and r.json()["info"]["step"] == 1
        c.delete(f"/session/{session}")


def test_huge_and_non_finite_continuous_actions_are_clipped_like_the_library(base_url):
    """1e39, 1e308, 1e400 (infinity), 10**400 and NaN in a JSON action play exactly like +-1 and 0."""
    env, _ = hivex_jax.make(AWS)
    assert (env.num_agents, env.continuous_dims) == (3, 1)
    hostile = [  # raw JSON: 1e400 parses to infinity, NaN is Python's JSON extension
        '[{"continuous": [1e39], "discrete": [1]}, {"continuous": [-1e400], "discrete": [0]},'
        ' {"continuous": [NaN], "discrete": [1]}]',
        '[{"continuous": [1e308], "discrete": [0]}, {"continuous": [-1e308], "discrete": [1]},'
        f' {{"continuous": [{10**400}], "discrete": [0]}}]',
    ]
    tame = [[1.0, -1.0, 0.0], [1.0, -1.0, 1.0]]
    with client(base_url) as c:
        sessions = [opened(c, AWS, world_seed=5, max_steps=5) for _ in range(2)]
        try:
            replies = [[], []]
            for t in range(2):
                body = f'{{"session_id": "{sessions[0]}", "action": {hostile[t]}}}'
                replies[0].append(c.post("/step", content=body, headers={"content-type": "application/json"}))
                action = [
                    {"continuous": [x], "discrete": [d["discrete"][0]]}
                    for x, d in zip(
                        tame[t],
                        json.loads(hostile[t].replace("NaN", "0").replace(str(10**400), "1")),
                        strict=True,
                    )
                ]
                replies[1].append(c.post("/step", json={"session_id": sessions[1], "action": action}))
            for hostile_reply, tame_reply in zip(*replies, strict=True):
                assert hostile_reply.status_code == 200, hostile_reply.text
                assert hostile_reply.json()["observation"] == tame_reply.json()["observation"]
                assert hostile_reply.json()["reward"] == tame_reply.json()["reward"]
        finally:
            close_all(base_url, sessions)


def test_compiled_pools_are_evicted_least_recently_used(base_url):
    """With --max-pools 3, a new static-option set drops the least recently used pool without sessions;
    only when every pool holds a session is a new set refused (429)."""
    with client(base_url) as c:
        aws = opened(c, AWS, world_seed=1, max_steps=5)  # the AWS pool is now more recent than WFC's
        c.delete(f"/session/{aws}")
        one = opened(c, num_agents=1, max_steps=5)
        two = opened(c, num_agents=2, max_steps=5)  # a 4th set: evicts the idle default WFC pool
        pools = c.get("/health").json()["pools"]
        named = {(p["env_id"], tuple(sorted(p["static_options"].items()))) for p in pools}
        assert named == {(AWS, ()), (WFC, (("num_agents", "1"),)), (WFC, (("num_agents", "2"),))}
        aws = opened(c, AWS, world_seed=1, max_steps=5)
        refused(reset(c, num_agents=4, max_steps=5), 429, "with open sessions")  # nothing to evict
        c.delete(f"/session/{one}")
        four = opened(c, num_agents=4, max_steps=5)  # the num_agents=1 pool is idle again: evicted
        r = c.post("/step", json={"session_id": two, "action": [{"discrete": [1]}] * 2})
        assert r.status_code == 200  # the pools kept serve on
        close_all(base_url, [two, four, aws])


def test_huge_continuous_values_decode_to_the_action_bounds():
    """The codec's rule is the library's: NaN -> 0, everything else clipped to [-1, 1] before float32
    (1e39 and beyond would be +-inf in float32; 10**400 is no float at all)."""
    env, _ = hivex_jax.make(AWS)
    cases = [
        (1e39, 1.0),
        (1e308, 1.0),
        (-1e308, -1.0),
        (float("nan"), 0.0),
        (float("inf"), 1.0),
        (-float("inf"), -1.0),
        (10**400, 1.0),
        (-(10**400), -1.0),
        (-0.25, -0.25),
    ]
    for value, expected in cases:
        action = decode_action(env, [{"continuous": [value], "discrete": [0]}] * 3)
        assert action["continuous"].dtype == np.float32
        np.testing.assert_array_equal(action["continuous"], np.full((3, 1), expected, np.float32))


def test_idle_time_counts_from_the_end_of_the_first_reset():
    """A fresh pool's first reset compiles for seconds; a 50 ms idle timeout must not close the session
    the moment it opens, only once it has really been idle."""

    async def scenario():
        server = HivexServer(ServeConfig(idle_timeout_s=0.05, initial_slots=1, envs=(WFC,)))
        s = await server.reset({"env_id": WFC, "world_seed": 5, "options": {"max_steps": 4}})
        assert await server.close_idle() == 0
        await asyncio.sleep(0.1)
        assert await server.close_idle() == 1
        assert s["session_id"] not in server.sessions

    asyncio.run(scenario())
