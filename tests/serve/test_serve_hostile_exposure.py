"""What a graded agent can see and reach on `hivex serve`, in process (starlette's TestClient; one
WindFarmControl pool compiled for the module):

- by default no reply carries the simulator state (`/state/{id}`, `GET /state`, the /ws `state`
  message, the MCP `state` tool), and a session's step keys carry a secret of its own, so neither the
  state nor the keys follow from the seed the agent chose; `expose_state` serves both as before;
- a session belongs to the token, address or /ws connection that opened it: another caller's step,
  state, grade, close or reset of it is refused in one line (403), over HTTP, /ws and MCP alike;
- web pages of other origins are refused (403) on /ws and on HTTP; loopback pages and clients that send
  no Origin are accepted, and `allowed_origins` adds more.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from starlette.testclient import TestClient, WebSocketDenialResponse  # noqa: E402

from hivex_jax.core.seeding import adapter_episode_key  # noqa: E402
from hivex_jax.serve.app import ServeConfig, create_app  # noqa: E402

WFC = "WindFarmControl-v0"
ALICE, BOB = {"authorization": "Bearer alice-token"}, {"authorization": "Bearer bob-token"}
ACTION = [{"discrete": [1]}] * 8
KEYED = {f"agent_{i}": {"discrete": [1]} for i in range(8)}
FOREIGN = "belongs to another client"


def basic(token: str) -> dict[str, str]:
    """HTTP Basic authentication with `token` as the password (what a URL's user:token@ sends)."""
    return {"authorization": "Basic " + base64.b64encode(f"anyone:{token}".encode()).decode()}


@pytest.fixture(scope="module")
def hidden():
    """A client of a default server (state hidden) with two tokens, one per client."""
    app = create_app(
        ServeConfig(envs=(WFC,), initial_slots=8, max_sessions=8), token=["alice-token", "bob-token"]
    )
    with TestClient(app) as client:
        yield client


@pytest.fixture(scope="module")
def exposed():
    """A client of a server started with --expose-state (no token)."""
    with TestClient(
        create_app(ServeConfig(envs=(WFC,), initial_slots=8, max_sessions=8, expose_state=True))
    ) as c:
        yield c


def reset(client: TestClient, headers: dict, world_seed: int = 6000) -> str:
    r = client.post(
        "/reset",
        json={"env_id": WFC, "world_seed": world_seed, "options": {"max_steps": 20}},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


def test_no_reply_carries_the_simulator_state_unless_exposed(hidden, exposed):
    session = reset(hidden, ALICE)
    assert (
        hidden.post("/step", json={"session_id": session, "action": ACTION}, headers=ALICE).status_code == 200
    )
    replies = [
        hidden.get(f"/state/{session}", headers=ALICE).json(),
        hidden.get("/state", params={"session_id": session}, headers=ALICE).json(),
    ]
    mcp_state = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "state", "arguments": {"session_id": session}},
    }
    replies.append(hidden.post("/mcp", json=mcp_state, headers=ALICE).json()["result"]["data"])
    with hidden.websocket_connect("/ws", headers=ALICE) as ws:
        ws.send_json({"type": "reset", "data": {"seed": 6000}})
        ws.receive_json()
        ws.send_json({"type": "state"})
        replies.append(ws.receive_json()["data"])
    for reply in replies:
        assert reply["state_exposed"] is False and "state" not in reply, sorted(reply)
        assert reply["world_seed"] == 6000 and reply["episode"]["length"] in (0, 1)
    assert "main_wind_angle" not in json.dumps(replies) and "swing_phase" not in json.dumps(replies)

    open_session = reset(exposed, {})
    state = exposed.get(f"/state/{open_session}").json()
    assert state["state_exposed"] is True and {"main_wind_angle", "swing_phase"} <= set(state["state"])


def test_step_keys_carry_a_secret_per_session_unless_exposed(hidden, exposed):
    """The root of every step key (`adapter_step_key(root, t)`) of two sessions on one world: distinct,
    and neither the public rule's, on a default server; the public rule's (as in-process) when exposed."""
    public = np.asarray(adapter_episode_key(6000))
    server = hidden.app.state.server
    roots = []
    for _ in range(2):
        session = server.sessions[reset(hidden, BOB)]
        roots.append(session.pool.episode_keys[session.slot].copy())
        assert session.secret is not None
    assert not np.array_equal(roots[0], roots[1])
    assert not np.array_equal(roots[0], public) and not np.array_equal(roots[1], public)
    session = exposed.app.state.server.sessions[reset(exposed, {})]
    assert session.secret is None and np.array_equal(session.pool.episode_keys[session.slot], public)
    # the grader's reference episodes: a secret of the server's own, none when exposed
    assert server.grading.secret is not None and exposed.app.state.server.grading.secret is None


def test_another_tokens_session_is_refused_on_every_route_and_basic_auth_is_the_same_token(hidden):
    session = reset(hidden, ALICE)
    for method, path, body in (
        ("POST", "/step", {"session_id": session, "action": ACTION}),
        ("GET", f"/state/{session}", None),
        ("GET", f"/state?session_id={session}", None),
        ("POST", f"/grade/{session}", None),
        ("DELETE", f"/session/{session}", None),
    ):
        r = hidden.request(method, path, json=body, headers=BOB)
        assert r.status_code == 403 and FOREIGN in r.json()["detail"] and "\n" not in r.json()["detail"], (
            path,
            r.text,
        )
    # alice's own, with her token as Bearer or as the Basic password: untouched by bob's attempts (step 0)
    r = hidden.post("/step", json={"session_id": session, "action": ACTION}, headers=basic("alice-token"))
    assert r.status_code == 200 and r.json()["info"]["step"] == 1
    assert (
        hidden.post(
            "/step", json={"session_id": session, "action": ACTION}, headers=basic("mallory")
        ).status_code
        == 401
    )
    assert hidden.delete(f"/session/{session}", headers=ALICE).json()["closed"] is True


def test_a_websocket_connections_session_is_its_own(hidden):
    """A session opened over /ws is reachable through that connection only: the same token over HTTP,
    over another connection (its `mcp` messages) and over /mcp is refused, and the connection plays on."""
    with (
        hidden.websocket_connect("/ws", headers=ALICE) as ws,
        hidden.websocket_connect("/ws", headers=ALICE) as other,
    ):
        ws.send_json({"type": "reset", "data": {"seed": 1}})
        session = ws.receive_json()["data"]["observation"]["metadata"]["session_id"]
        assert (
            hidden.post("/step", json={"session_id": session, "action": ACTION}, headers=ALICE).status_code
            == 403
        )
        for tool in ("step", "state", "grade", "close", "reset"):
            call = {"name": tool, "arguments": {"session_id": session, "action": KEYED}}
            other.send_json(
                {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}}
            )
            error = other.receive_json()["data"]["error"]
            assert error["code"] == -32000 and FOREIGN in error["message"], (tool, error)
        close = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "openenv/session/close",
            "params": {"session_id": session},
        }
        assert FOREIGN in hidden.post("/mcp", json=close, headers=ALICE).json()["error"]["message"]
        ws.send_json({"type": "step", "data": KEYED})
        assert ws.receive_json()["data"]["observation"]["metadata"]["step"] == 1


def test_an_mcp_session_belongs_to_its_creator(hidden):
    def rpc(method: str, params: dict, headers: dict) -> dict:
        return hidden.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 3, "method": method, "params": params}, headers=headers
        ).json()

    handle = rpc("openenv/session/create", {}, ALICE)["result"]["session_id"]
    assert (
        rpc("tools/call", {"name": "reset", "arguments": {"seed": 2}, "session_id": handle}, ALICE)["result"][
            "isError"
        ]
        is False
    )
    for method, params in (
        ("tools/call", {"name": "step", "arguments": {"action": KEYED}, "session_id": handle}),
        ("tools/call", {"name": "reset", "arguments": {}, "session_id": handle}),
        ("openenv/session/close", {"session_id": handle}),
    ):
        error = rpc(method, params, BOB)["error"]
        assert error["code"] == -32000 and FOREIGN in error["message"], (method, error)
    assert rpc("openenv/session/close", {"session_id": handle}, ALICE)["result"]["closed"] is True


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),  # a program, not a page
        ("http://localhost:3000", True),
        ("http://127.0.0.1", True),
        ("http://[::1]:8080", True),
        ("http://evil.example", False),
        ("https://localhost.evil.example", False),
        ("http://localhost@evil.example", False),
        ("null", False),  # a sandboxed page or a file
        ("file://", False),
        ("https://app.example.org", True),  # named by allowed_origins
        ("https://app.example.org:444", False),
    ],
)
def test_pages_of_other_origins_are_refused_on_ws_and_http(origin, allowed):
    app = create_app(ServeConfig(envs=(WFC,), allowed_origins=("https://app.example.org",)))
    client = TestClient(app)
    headers = {} if origin is None else {"origin": origin}
    if allowed:
        with client.websocket_connect("/ws", headers=headers) as ws:
            ws.send_json({"type": "state"})
            assert ws.receive_json()["type"] == "state"
    else:
        with pytest.raises(WebSocketDenialResponse) as denied:
            with client.websocket_connect("/ws", headers=headers):
                pass
        assert denied.value.status_code == 403 and "--allow-origin" in denied.value.json()["detail"]
    r = client.post("/reset", json={"env_id": "NoSuchEnv-v0"}, headers=headers)
    assert r.status_code == (404 if allowed else 403), r.text
