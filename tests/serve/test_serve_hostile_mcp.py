"""`/mcp` as JSON-RPC 2.0 is written (in process, nothing compiled): notifications get no reply, batches
are answered element by element, ids are strings, numbers or null, `initialize` negotiates the protocol
version; and OpenEnv's stock clients, unchanged, against a real `hivex serve --token` given the token as
the password of their URL (`http://hivex:TOKEN@host:port`): `GenericEnvClient`, `MCPToolClient` in its
default mode (its `list_tools` / `call_tool` messages over /ws) and in production mode (/mcp), and
`openenv validate`. Skipped where openenv-core is missing."""

from __future__ import annotations

import asyncio

import pytest
from server_process import running_server

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from hivex_jax.serve.app import ServeConfig, create_app  # noqa: E402
from hivex_jax.serve.mcp import MAX_BATCH, MCP_PROTOCOL_VERSIONS  # noqa: E402

WFC = "WindFarmControl-v0"
TOKEN = "stock-client-token"
KEYED = {f"agent_{i}": {"discrete": [1]} for i in range(8)}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ServeConfig(envs=(WFC,))))


def post(client: TestClient, body) -> httpx.Response:
    return client.post("/mcp", json=body)


def request(method: str, rid=1, **params) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def notification(method: str, **params) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def test_notifications_get_no_reply(client):
    for body in (
        notification("notifications/initialized"),
        notification("tools/list"),
        [notification("ping")] * 3,
    ):
        r = post(client, body)
        assert (r.status_code, r.content) == (202, b""), r.text


def test_a_batch_is_answered_element_by_element_in_order(client):
    replies = post(
        client,
        [
            request("tools/list", rid=1),
            notification("notifications/initialized"),  # no reply in the batch's answer
            {"jsonrpc": "2.0", "id": {"an": "object"}, "method": "ping"},
            request("tools/destroy", rid="x"),
            request("ping", rid=2.5),
        ],
    ).json()
    assert [r["id"] for r in replies] == [1, None, "x", 2.5]
    assert "tools" in replies[0]["result"]
    assert [r.get("error", {}).get("code") for r in replies] == [None, -32600, -32601, None]
    assert post(client, []).json()["error"]["code"] == -32600  # an empty batch: one error, not a list
    too_long = post(client, [request("ping", rid=i) for i in range(MAX_BATCH + 1)]).json()
    assert too_long["error"]["code"] == -32600 and f"at most {MAX_BATCH}" in too_long["error"]["message"]
    assert len(post(client, [request("ping", rid=i) for i in range(MAX_BATCH)]).json()) == MAX_BATCH


@pytest.mark.parametrize(
    ("body", "rid", "code"),
    [
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, -32600),  # a bool is no id
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None, -32600),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None, -32600),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None, None),  # null: answered, with null
        ({"jsonrpc": "2.0", "id": "s", "method": "ping"}, "s", None),
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "extra": 1}, 7, -32600),
        ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, 7, -32600),
        ({"jsonrpc": "2.0", "id": 7}, 7, -32600),
        ({"jsonrpc": "2.0", "id": 7, "method": 5}, 7, -32600),
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1, 2]}, 7, -32602),
        ({}, None, -32600),  # what `openenv validate` posts
        ("a string", None, -32600),
        (17, None, -32600),
    ],
)
def test_ids_and_request_shapes(client, body, rid, code):
    reply = post(client, body)
    assert reply.status_code == 200
    reply = reply.json()
    assert reply["jsonrpc"] == "2.0" and reply["id"] == rid
    assert reply.get("error", {}).get("code") == code, reply
    if code is not None:
        assert "\n" not in reply["error"]["message"]


def test_non_finite_ids_and_malformed_json_are_json_rpc_errors(client):
    headers = {"content-type": "application/json"}
    for raw in (
        b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": Infinity, "method": "ping"}',
    ):
        reply = client.post("/mcp", content=raw, headers=headers).json()
        assert (reply["id"], reply["error"]["code"]) == (None, -32600)
    reply = client.post("/mcp", content=b"[{oops", headers=headers).json()
    assert (reply["id"], reply["error"]["code"]) == (None, -32700)


def test_initialize_negotiates_the_protocol_version(client):
    for version in MCP_PROTOCOL_VERSIONS:
        assert (
            post(client, request("initialize", protocolVersion=version)).json()["result"]["protocolVersion"]
            == version
        )
    newest = MCP_PROTOCOL_VERSIONS[-1]
    for version in ("1999-01-01", "2025-06-18; DROP TABLE", ""):
        assert (
            post(client, request("initialize", protocolVersion=version)).json()["result"]["protocolVersion"]
            == newest
        )
    for params in ({}, {"protocolVersion": 5}, {"protocolVersion": None}):
        error = post(client, request("initialize", **params)).json()["error"]
        assert error["code"] == -32602 and "protocolVersion" in error["message"]


def test_the_ws_mcp_message_takes_one_request_and_answers_no_notification(client):
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "mcp", "data": notification("notifications/initialized")})  # no reply
        ws.send_json({"type": "mcp", "data": [request("ping")]})  # a batch is /mcp's, not /ws's
        assert ws.receive_json()["data"]["error"]["code"] == -32600
        ws.send_json({"type": "mcp", "data": request("ping", rid=4)})
        assert ws.receive_json() == {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 4, "result": {}}}


# --------------------------------------------------------------------- OpenEnv's stock clients, unchanged
@pytest.fixture(scope="module")
def token_url():
    pytest.importorskip("openenv.core", reason="openenv-core is not installed (pip install -e '.[openenv]')")
    flags = ["--env", WFC, "--token", TOKEN, "--max-sessions", "8", "--initial-slots", "8"]
    with running_server(*flags) as (_, port, _):
        yield f"http://hivex:{TOKEN}@127.0.0.1:{port}", f"http://127.0.0.1:{port}"


def test_generic_env_client_and_openenv_validate_with_the_token_in_the_url(token_url):
    from openenv.cli._validation import validate_running_environment
    from openenv.core import GenericEnvClient

    with_token, without = token_url
    with GenericEnvClient(base_url=with_token).sync() as env:
        assert env.reset(seed=3).reward is None
        result = env.step(KEYED)
        assert result.observation["metadata"]["step"] == 1 and result.reward is not None
    with pytest.raises(ConnectionError, match="401"), GenericEnvClient(base_url=without).sync() as env:
        env.reset()
    assert validate_running_environment(with_token)["summary"]["passed_count"] == 6


def test_mcp_tool_client_in_its_default_mode_plays_over_ws(token_url):
    from openenv.core import MCPToolClient

    async def play() -> tuple:
        async with MCPToolClient(base_url=token_url[0]) as env:
            await env.reset(seed=4)
            names = [t.name for t in await env.list_tools()]
            stepped = await env.call_tool("step", action=KEYED)
            state = await env.call_tool("state")
            with pytest.raises(RuntimeError, match="tool_not_found"):
                await env.call_tool("fly")
            with pytest.raises(RuntimeError, match="invalid_args"):
                await env.call_tool("step", action={"agent_0": {"discrete": [9]}})
            return names, stepped, state

    names, stepped, state = asyncio.run(play())
    assert names == ["reset", "step", "state", "grade", "close"]
    assert stepped["observation"]["metadata"]["step"] == 1 and isinstance(stepped["reward"], float)
    assert state["step_count"] == 1 and state["state_exposed"] is False


def test_mcp_tool_client_in_production_mode_plays_over_mcp(token_url):
    from openenv.core import MCPToolClient

    async def play() -> tuple:
        env = MCPToolClient(base_url=token_url[0])
        env.use_production_mode = True
        try:
            names = [t.name for t in await env.list_tools()]
            opened = await env.call_tool("reset", seed=5)
            stepped = await env.call_tool("step", action=KEYED)
            return names, opened, stepped
        finally:
            await env.close()

    names, opened, stepped = asyncio.run(play())
    assert names == ["reset", "step", "state", "grade", "close"]
    assert opened["reward"] is None and stepped["observation"]["metadata"]["step"] == 1


def test_the_official_mcp_sdk_client_plays_over_mcp(token_url):
    """The MCP Python SDK's own client (Streamable HTTP: initialize, the initialized notification, then
    requests) lists the tools and plays a step; a refused call is its `MCPError`."""
    mcp = pytest.importorskip("mcp", reason="the MCP Python SDK is not installed")

    async def play() -> tuple:
        async with mcp.Client(token_url[0] + "/mcp") as sdk:
            names = [t.name for t in (await sdk.list_tools()).tools]
            opened = await sdk.call_tool("reset", {"seed": 6})
            session = opened.structured_content["session_id"]
            stepped = await sdk.call_tool("step", {"session_id": session, "action": KEYED})
            with pytest.raises(mcp.MCPError, match="unknown session_id"):
                await sdk.call_tool("step", {"session_id": "nope", "action": KEYED})
            return names, stepped

    names, stepped = asyncio.run(play())
    assert names == ["reset", "step", "state", "grade", "close"]
    assert stepped.is_error is False and stepped.structured_content["observation"]["metadata"]["step"] == 1
