"""OpenEnv's own code against `hivex serve --env ID`: `GenericEnvClient(...).sync()` plays an
episode over /ws whose rewards equal the in-process episode, every raw reply validates against OpenEnv's
reply models, `openenv validate --url` passes 6 of 6, /mcp's tools play an episode, and bad messages get
OpenEnv's error shape while the connection survives. Transport guard checks on /ws run in process
(starlette's TestClient; nothing is compiled). Skipped where openenv-core (the `openenv` extra) is missing."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from server_process import start_server, stop

import hivex_jax
from hivex_jax.core.seeding import adapter_episode_key, adapter_step_key, world_key
from hivex_jax.envs import BUNDLED_ENV_IDS

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
pytest.importorskip(
    "openenv.core", reason="openenv-core is not installed (pip install -e '.[dev]' or '.[openenv]')"
)
websockets_sync = pytest.importorskip("websockets.sync.client")

from openenv.cli._validation import validate_running_environment  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from openenv.core.env_server.types import (  # noqa: E402
    ResetResponse,
    State,
    StepResponse,
    WSErrorResponse,
    WSObservationResponse,
    WSStateResponse,
)
from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from hivex_jax.serve.app import ServeConfig, create_app  # noqa: E402
from hivex_jax.serve.codec import encode_action  # noqa: E402

WFC = "WindFarmControl-v0"
MAX_STEPS = 5
OTHERS = [e for e in BUNDLED_ENV_IDS if e != WFC]  # not the tests' own Tiny envs other files register


def start_env_server(env_id: str):
    """A `hivex serve --env env_id` subprocess and its URL, once /health answers; with the public step
    keys (`--expose-state`), as the episodes are compared with in-process ones (AerialWildfireSuppression's
    steps draw from them)."""
    proc, _, url = start_server(
        "--env",
        env_id,
        "--max-sessions",
        "8",
        "--initial-slots",
        "2",
        "--batch-window-ms",
        "0",
        "--expose-state",
    )
    return proc, url


@pytest.fixture(scope="module")
def wfc_url():
    proc, url = start_env_server(WFC)
    yield url
    stop(proc)


def random_actions(env_id: str, steps: int, seed: int) -> list[dict]:
    """`steps` random joint actions `{continuous [A, C], discrete [A, B]}` of the env's action space."""
    env, _ = hivex_jax.make(env_id)
    rng = np.random.default_rng(seed)
    a, c, branches = env.num_agents, env.continuous_dims, env.discrete_branches
    return [
        {
            "continuous": rng.uniform(-1, 1, (a, c)).astype(np.float32),
            "discrete": np.stack([rng.integers(0, n, a) for n in branches], -1).astype(np.int32)
            if branches
            else np.zeros((a, 0), np.int32),
        }
        for _ in range(steps)
    ]


def keyed(env_id: str, action: dict) -> dict:
    """An array joint action as OpenEnv's action: the project's JSON entries keyed by agent id."""
    env, _ = hivex_jax.make(env_id)
    return dict(zip(env.agent_ids, encode_action(env, action), strict=True))


def in_process_rewards(env_id: str, world_seed: int, actions: list[dict], **options) -> np.ndarray:
    """Per-step per-agent rewards `[T, A]` of the in-process episode with the server's keys."""
    env, params = hivex_jax.make(env_id, **options)
    reset_fn, step_fn = jax.jit(env.reset), jax.jit(env.step)
    _, state = reset_fn(world_key(world_seed), params)
    episode_key = adapter_episode_key(world_seed)
    out = []
    for t, action in enumerate(actions):
        _, state, reward, *_ = step_fn(adapter_step_key(episode_key, t), state, action, params)
        out.append(np.asarray(reward))
    return np.stack(out)


def play_with_openenv_client(url: str, env_id: str, world_seed: int, steps: int, **options):
    """Play with OpenEnv's GenericEnvClient (sync): team rewards, per-agent rewards, dones, state, actions."""
    actions = random_actions(env_id, steps, world_seed)
    env_client = GenericEnvClient(base_url=url).sync()
    with env_client:
        first = env_client.reset(seed=world_seed, options=options)
        assert first.reward is None and first.done is False
        assert len(first.observation["agents"]) == hivex_jax.make(env_id)[0].num_agents
        team, per_agent, dones = [], [], []
        for action in actions:
            result = env_client.step(keyed(env_id, action))
            team.append(result.reward)
            per_agent.append(list(result.observation["metadata"]["rewards"].values()))
            dones.append(result.done)
        state = env_client.state()
    return np.asarray(team), np.asarray(per_agent), dones, state, actions


def test_generic_env_client_plays_wfc_and_rewards_equal_the_in_process_episode(wfc_url):
    team, per_agent, dones, state, actions = play_with_openenv_client(
        wfc_url, WFC, world_seed=7, steps=MAX_STEPS, max_steps=MAX_STEPS
    )
    reference = in_process_rewards(WFC, 7, actions, max_steps=MAX_STEPS)
    np.testing.assert_allclose(per_agent, reference, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(team, reference.mean(axis=1), rtol=1e-5, atol=1e-5)  # team = mean
    assert dones == [False] * (MAX_STEPS - 1) + [True]  # the time limit ends every agent at once
    assert state["step_count"] == MAX_STEPS and state["episode_id"] and state["env_id"] == WFC
    State.model_validate(state)


def ws_exchange(url: str, messages: list) -> list[dict]:
    """Send each message (a dict as JSON, or a raw string) over one /ws connection; the replies."""
    replies = []
    with websockets_sync.connect(url.replace("http://", "ws://") + "/ws") as ws:
        for message in messages:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            replies.append(json.loads(ws.recv(timeout=120)))
    return replies


def test_every_reply_validates_against_openenv_models_and_bad_messages_get_its_error_shape(wfc_url):
    env, _ = hivex_jax.make(WFC)
    good = keyed(WFC, random_actions(WFC, 1, 0)[0])
    replies = ws_exchange(
        wfc_url,
        [
            {"type": "state", "data": {}},  # before any reset: an empty State
            {"type": "step", "data": good},  # before any reset: a session error, the connection stays
            {"type": "reset", "data": {"seed": 3, "episode_id": "ep-1", "options": {"max_steps": 2}}},
            "{not json",
            {"type": "jump"},
            ["a", "list"],
            {"type": "step", "data": {"agent_0": {"discrete": [9]}}},  # unknown agents missing, bad values
            {"type": "reset", "data": {"seed": -1}},
            {"type": "step", "data": good},
            {"type": "state"},
            {"type": "step", "data": good},
            {"type": "step", "data": good},  # after the episode ended
        ],
    )
    empty, early, reset, bad_json, unknown, not_object, bad_action, bad_seed = replies[:8]
    step, state, last, ended = replies[8:]
    assert State.model_validate(WSStateResponse.model_validate(empty).data).step_count == 0
    for reply, code in (
        (early, "SESSION_ERROR"),
        (bad_json, "INVALID_JSON"),
        (unknown, "UNKNOWN_TYPE"),
        (not_object, "UNKNOWN_TYPE"),
        (bad_action, "VALIDATION_ERROR"),
        (bad_seed, "VALIDATION_ERROR"),
        (ended, "SESSION_ERROR"),
    ):
        error = WSErrorResponse.model_validate(reply)
        assert error.data["code"] == code and "\n" not in error.data["message"], reply
    ResetResponse.model_validate(WSObservationResponse.model_validate(reset).data)
    assert reset["data"]["observation"]["metadata"]["episode_id"] == "ep-1"
    for reply in (step, last):
        data = StepResponse.model_validate(WSObservationResponse.model_validate(reply).data)
        rewards = reply["data"]["observation"]["metadata"]["rewards"]
        assert list(rewards) == list(env.agent_ids)
        assert data.reward == pytest.approx(np.mean(list(rewards.values())), rel=1e-6, abs=1e-6)
    assert (step["data"]["done"], last["data"]["done"]) == (False, True)
    parsed = State.model_validate(WSStateResponse.model_validate(state).data)
    assert (parsed.episode_id, parsed.step_count) == ("ep-1", 1)


def test_openenv_validate_passes_six_of_six(wfc_url):
    report = validate_running_environment(wfc_url)
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] == 6, report["criteria"]
    assert report["passed"] and report["standard_profile"] == "openenv-http/1.x"
    schema = httpx.get(f"{wfc_url}/schema").json()
    assert set(schema["action"]["required"]) == set(hivex_jax.make(WFC)[0].agent_ids)


def mcp(url: str, method: str, params: dict | None = None, rid: int = 1) -> dict:
    r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
    assert r.status_code == 200, r.text
    return r.json()


def test_mcp_tools_play_and_grade_an_episode_and_refuse_bad_calls(wfc_url):
    names = [t["name"] for t in mcp(wfc_url, "tools/list")["result"]["tools"]]
    assert {"reset", "step", "state", "grade"} <= set(names)
    handle = mcp(wfc_url, "openenv/session/create")["result"]["session_id"]
    opened = mcp(wfc_url, "tools/call", {"name": "reset", "arguments": {"seed": 1}, "session_id": handle})
    assert opened["result"]["data"]["reward"] is None and opened["result"]["isError"] is False
    action = keyed(WFC, random_actions(WFC, 1, 1)[0])
    call = {"name": "step", "arguments": {"action": action}, "session_id": handle}
    stepped = mcp(wfc_url, "tools/call", call)
    rewards = stepped["result"]["data"]["observation"]["metadata"]["rewards"]
    assert stepped["result"]["data"]["reward"] == pytest.approx(np.mean(list(rewards.values())), abs=1e-6)
    state = mcp(wfc_url, "tools/call", {"name": "state", "arguments": {}, "session_id": handle})
    assert state["result"]["data"]["step_count"] == 1
    graded = mcp(wfc_url, "tools/call", {"name": "grade", "arguments": {"session_id": handle}})
    assert graded["result"]["data"]["episode"]["length"] == 1
    assert mcp(wfc_url, "openenv/session/close", {"session_id": handle})["result"]["closed"] is True
    # bad input: JSON-RPC errors with one-line messages, HTTP 200, the server keeps serving
    bad = httpx.post(f"{wfc_url}/mcp", content=b"{oops", headers={"content-type": "application/json"})
    assert bad.status_code == 200 and bad.json()["error"]["code"] == -32700
    assert httpx.post(f"{wfc_url}/mcp", json={}).json()["error"]["code"] == -32600
    assert mcp(wfc_url, "tools/destroy")["error"]["code"] == -32601
    wrong = mcp(
        wfc_url,
        "tools/call",
        {**call, "session_id": None, "arguments": {"session_id": handle, "action": action}},
    )
    assert wrong["error"]["code"] == -32000 and "unknown session_id" in wrong["error"]["message"]
    assert httpx.get(f"{wfc_url}/health").json()["status"] == "healthy"


# ------------------------------------------------------------------------- transport guard, in process
@pytest.fixture(scope="module")
def guarded_app():
    config = ServeConfig(envs=(WFC,), max_body_bytes=4096, allowed_hosts=("localhost", "testserver"))
    return create_app(config, token="s3cret")


def test_ws_needs_the_token_and_a_served_host(guarded_app):
    from starlette.testclient import WebSocketDenialResponse

    client = TestClient(guarded_app)
    with pytest.raises(WebSocketDenialResponse) as denied:
        with client.websocket_connect("/ws"):
            pass
    assert denied.value.status_code == 401 and "Bearer" in denied.value.json()["detail"]
    with pytest.raises(WebSocketDenialResponse) as denied:
        foreign = {"host": "evil.example", "authorization": "Bearer s3cret"}
        with client.websocket_connect("/ws", headers=foreign):
            pass
    assert denied.value.status_code == 421
    with client.websocket_connect("/ws", headers={"authorization": "Bearer s3cret"}) as ws:
        ws.send_json({"type": "state"})
        assert ws.receive_json() == {"type": "state", "data": {"episode_id": None, "step_count": 0}}
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401


def test_ws_message_over_the_body_limit_closes_with_1009_and_smaller_bad_ones_do_not(guarded_app):
    client = TestClient(guarded_app)
    with client.websocket_connect("/ws", headers={"authorization": "Bearer s3cret"}) as ws:
        ws.send_text("[" * 40 + "]" * 40)  # nested too deeply: an error reply, the connection stays
        assert ws.receive_json()["data"]["code"] == "INVALID_JSON"
        ws.send_bytes(b"\xff\xfe")
        assert ws.receive_json()["data"]["code"] == "INVALID_JSON"
        ws.send_text(json.dumps({"type": "step", "data": {"agent_0": "x" * 5000}}))
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
    assert closed.value.code == 1009


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_schema_of_every_env_accepts_its_actions_and_refuses_a_missing_agent(env_id):
    jsonschema = pytest.importorskip("jsonschema")
    schema = TestClient(create_app(ServeConfig())).get("/schema", params={"env_id": env_id}).json()
    for part in ("action", "observation", "state"):
        jsonschema.Draft202012Validator.check_schema(schema[part])
    validator = jsonschema.Draft202012Validator(schema["action"])
    action = keyed(env_id, random_actions(env_id, 1, 0)[0])
    assert list(validator.iter_errors(action)) == []
    assert list(validator.iter_errors({k: v for k, v in list(action.items())[1:]}))
    env, _ = hivex_jax.make(env_id)
    layout_widths = {k: v.stop - v.start for k, v in env.observation_layout().items()}
    fields = schema["observation"]["properties"]["agents"]["items"]["properties"]["fields"]["properties"]
    assert {k: v["minItems"] for k, v in fields.items()} == layout_widths


@pytest.mark.slow
@pytest.mark.parametrize("env_id", OTHERS)
def test_generic_env_client_plays_every_other_env(env_id):
    proc, url = start_env_server(env_id)
    try:
        team, per_agent, dones, state, actions = play_with_openenv_client(url, env_id, 2, 4, max_steps=4)
        reference = in_process_rewards(env_id, 2, actions, max_steps=4)
        np.testing.assert_allclose(per_agent, reference, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(team, reference.mean(axis=1), rtol=1e-5, atol=1e-5)
        assert dones[-1] is True and state["step_count"] == 4
        assert validate_running_environment(url)["summary"]["passed_count"] == 6
    finally:
        stop(proc)


def test_a_real_server_closes_a_websocket_message_over_the_body_limit_with_1009(wfc_url):
    from websockets.exceptions import ConnectionClosed

    with websockets_sync.connect(wfc_url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"pad": "x" * (2 << 20)}}))  # 2 MiB > the 1 MiB limit
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
    assert closed.value.rcvd.code == 1009
    assert httpx.get(f"{wfc_url}/health").json()["status"] == "healthy"


def test_cli_serves_websockets_bounded_by_the_body_limit_and_prints_a_manifest(monkeypatch, capsys):
    import uvicorn

    from hivex_jax.serve.cli import main as serve_main

    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    assert serve_main(["--env", WFC]) == 0
    assert calls[-1]["ws"] == "websockets-sansio" and calls[-1]["ws_max_size"] == ServeConfig().max_body_bytes
    capsys.readouterr()
    assert serve_main(["--env", WFC, "--port", "8123", "--manifest"]) == 0
    text = capsys.readouterr().out
    assert "spec_version: 1\n" in text and "name: windfarmcontrol-v0\n" in text and "port: 8123\n" in text
    assert serve_main(["--manifest"]) == 2
    assert "exactly one --env" in capsys.readouterr().err


def test_the_manifest_names_an_importable_app_serving_its_one_env(monkeypatch):
    """openenv.yaml's `app:` line is an import string uvicorn resolves to `create_app` for that env alone
    (with the token from HIVEX_SERVE_TOKEN); importing the module builds no app."""
    import importlib

    import uvicorn.importer
    from starlette.testclient import TestClient

    from hivex_jax.serve import asgi
    from hivex_jax.serve.manifest import manifest

    assert asgi.APPS == {
        "wind_farm_control": "WindFarmControl-v0",
        "wildfire_resource_management": "WildfireResourceManagement-v0",
        "drone_based_reforestation": "DroneBasedReforestation-v0",
        "ocean_plastic_collection": "OceanPlasticCollection-v0",
        "aerial_wildfire_suppression": "AerialWildfireSuppression-v0",
    }
    monkeypatch.setenv("HIVEX_SERVE_TOKEN", "s3cret")
    importlib.reload(asgi)
    assert asgi._built == {}
    (line,) = [x for x in manifest("OceanPlasticCollection-v0").splitlines() if x.startswith("app: ")]
    assert line == "app: hivex_jax.serve.asgi:ocean_plastic_collection"
    app = uvicorn.importer.import_from_string(line.removeprefix("app: "))
    assert app.state.server.env_ids == ("OceanPlasticCollection-v0",)
    client = TestClient(app, base_url="http://localhost")
    assert client.get("/metadata").status_code == 401  # the token applies
    assert client.get("/metadata", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    with pytest.raises(AttributeError, match="no app 'nope'"):
        asgi.nope  # noqa: B018


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_env_description_names_every_action_part(env_id):
    """`GET /envs/{id}`'s action meanings: one name per continuous value, and per discrete branch one
    option name per choice, starting with the no-op (choice 0)."""
    env, _ = hivex_jax.make(env_id)
    meanings = TestClient(create_app(ServeConfig())).get(f"/envs/{env_id}").json()["action"]["meanings"]
    assert len(meanings["continuous"]) == env.continuous_dims
    assert [len(b["options"]) for b in meanings["discrete"]] == list(env.discrete_branches)
    assert all(b["options"][0] == "no-op" for b in meanings["discrete"])
    assert len({b["branch"] for b in meanings["discrete"]}) == len(env.discrete_branches)
