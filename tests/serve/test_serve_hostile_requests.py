"""`hivex serve` against a table of single hostile HTTP requests (a hostile suite run in CI): every
route with wrong methods, unknown routes and env ids, ids and fields of wrong JSON types, missing and
extra fields, overflowing and non-finite numbers, deep nesting, oversize bodies, wrong content types,
unknown / closed / expired / ended sessions on every session route, actions of the wrong shape, count,
agents or range, static options refused (or out of make's bounds where they are allowed), and
`world_files` / message options refused. Each case must get its documented 4xx (never a 500) with a
JSON body whose `detail` is one line naming the problem; after the whole table the server still serves,
and a session opened before it steps exactly as in-process (nothing that was running is lost).

Two real server subprocesses for the module: `strict` (WindFarmControl-v0, the defaults: static options
refused) and `open` (WindFarmControl-v0 and AerialWildfireSuppression-v0 with `--allow-static-options`
and a 1 s idle timeout, for option bounds and an expired session). No case compiles anything but the
two WindFarmControl pools the fixtures open sessions on."""

# ruff: noqa: E501  (the case table keeps one request a line)
from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import time

import jax
import numpy as np
import pytest
from server_process import rss_reported, start_server, stop

import hivex_jax
from hivex_jax.core.seeding import adapter_episode_key, adapter_step_key, world_key

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

WFC = "WindFarmControl-v0"
AWS = "AerialWildfireSuppression-v0"
MAX_STEPS = 20
IDLE_TIMEOUT_S = 1  # the open server's: its one session expires while the table runs
LIMIT = 1 << 20  # the body limit (ServeConfig.max_body_bytes)
ACTION = [{"continuous": [], "discrete": [1]}] * 8  # a valid WindFarmControl action
HUGE = "1" + "0" * 5000  # a 5001-digit integer literal (Python's int parser stops at 4300 digits)
ULPS = 1e-5


@dataclasses.dataclass
class Server:
    port: int
    client: httpx.Client
    proc: subprocess.Popen
    ids: dict[str, str]  # placeholder -> session id: live, closed, ended, expired


def open_session(client: httpx.Client, world_seed: int, max_steps: int = MAX_STEPS) -> str:
    body = {"env_id": WFC, "world_seed": world_seed, "options": {"max_steps": max_steps}}
    r = client.post("/reset", json=body)
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


@pytest.fixture(scope="module")
def servers():
    """{'strict': Server, 'open': Server} with the sessions the table's placeholders name."""
    strict_proc, strict_port, _ = start_server("--env", WFC, "--max-sessions", "6", "--initial-slots", "8")
    open_proc = None
    try:
        open_proc, open_port, _ = start_server(
            "--env", WFC, "--env", AWS, "--allow-static-options", "--max-sessions", "4",
            "--initial-slots", "4", "--idle-timeout", str(IDLE_TIMEOUT_S),
        )  # fmt: skip
        strict = httpx.Client(base_url=f"http://127.0.0.1:{strict_port}", timeout=60)
        opened = httpx.Client(base_url=f"http://127.0.0.1:{open_port}", timeout=60)
        live = open_session(strict, 6000)  # stepped once after the whole table (compared in-process)
        closed = open_session(strict, 6001)
        assert strict.delete(f"/session/{closed}").status_code == 200
        ended = open_session(strict, 6002, max_steps=1)
        assert strict.post("/step", json={"session_id": ended, "action": ACTION}).json()["done"] is True
        expired = open_session(opened, 6003)
        deadline = time.monotonic() + 60
        while opened.get("/health").json()["sessions"]:  # the idle sweep closes it
            assert time.monotonic() < deadline, "the idle session was never closed"
            time.sleep(0.2)
        ids = {"live": live, "closed": closed, "ended": ended, "expired": expired}
        with rss_reported("the request table (strict server)", strict_proc.pid):
            yield {
                "strict": Server(strict_port, strict, strict_proc, ids),
                "open": Server(open_port, opened, open_proc, ids),
            }
        strict.close()
        opened.close()
    finally:
        for proc in (strict_proc, open_proc):
            if proc is not None:
                stop(proc)


@dataclasses.dataclass(frozen=True)
class Case:
    """One request: `body` is JSON text (placeholders {live}, {closed}, {ended}, {expired} filled in),
    or bytes sent as they are; `raw` sends `head` itself over a socket (headers httpx would not send)."""

    name: str
    method: str
    path: str
    status: int
    phrase: str
    body: str | bytes | None = None
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    server: str = "strict"
    raw: bool = False
    uvicorn: bool = False  # refused by uvicorn's HTTP parser before the app: its plain-text 400


def j(value) -> str:
    """JSON text of `value`; Python's json writes NaN and Infinity literals for float('nan'), inf."""
    return json.dumps(value)


def reset(name: str, status: int, phrase: str, server: str = "strict", **fields) -> Case:
    return Case(name, "POST", "/reset", status, phrase, j({"env_id": WFC, **fields}), server=server)


def reset_text(name: str, status: int, phrase: str, fields_text: str, server: str = "strict") -> Case:
    """A reset whose body is `{"env_id": WFC, <fields_text>}` (JSON text Python's json cannot write)."""
    return Case(
        name, "POST", "/reset", status, phrase, f'{{"env_id": "{WFC}", {fields_text}}}', server=server
    )


def option(name: str, status: int, phrase: str, server: str = "strict", env_id: str = WFC, **options) -> Case:
    body = j({"env_id": env_id, "options": options})
    return Case(name, "POST", "/reset", status, phrase, body, server=server)


def step(name: str, status: int, phrase: str, action_text: str, session: str = "{live}") -> Case:
    body = f'{{"session_id": "{session}", "action": {action_text}}}'
    return Case(name, "POST", "/step", status, phrase, body)


def entry_action(entry_text: str) -> str:
    """An action list whose every agent's entry is `entry_text`."""
    return "[" + ", ".join([entry_text] * 8) + "]"


NAN, INF = float("nan"), float("inf")
NOT_ALLOWED, NOT_FOUND = "Method Not Allowed", "Not Found"

CASES = [
    # ---- every route with a wrong method (405), unknown routes (404)
    Case("GET /reset", "GET", "/reset", 405, NOT_ALLOWED),
    Case("PUT /reset", "PUT", "/reset", 405, NOT_ALLOWED, "{}"),
    Case("DELETE /reset", "DELETE", "/reset", 405, NOT_ALLOWED),
    Case("GET /step", "GET", "/step", 405, NOT_ALLOWED),
    Case("PATCH /step", "PATCH", "/step", 405, NOT_ALLOWED, "{}"),
    Case("POST /health", "POST", "/health", 405, NOT_ALLOWED),
    Case("POST /metadata", "POST", "/metadata", 405, NOT_ALLOWED),
    Case("POST /envs", "POST", "/envs", 405, NOT_ALLOWED),
    Case("DELETE /envs/id", "DELETE", f"/envs/{WFC}", 405, NOT_ALLOWED),
    Case("POST /state/id", "POST", "/state/{live}", 405, NOT_ALLOWED),
    Case("GET /grade/id", "GET", "/grade/{live}", 405, NOT_ALLOWED),
    Case("GET /session/id", "GET", "/session/{live}", 405, NOT_ALLOWED),
    Case("PUT /session/id", "PUT", "/session/{live}", 405, NOT_ALLOWED, "{}"),
    Case("unknown route", "GET", "/admin", 404, NOT_FOUND),
    Case("unknown POST route", "POST", "/resets", 404, NOT_FOUND, "{}"),
    Case("grade without id", "POST", "/grade", 404, NOT_FOUND),
    Case("session without id", "DELETE", "/session", 404, NOT_FOUND),
    Case("route below an env", "GET", f"/envs/{WFC}/code", 404, NOT_FOUND),
    Case("route below a state", "GET", "/state/{live}/x", 404, NOT_FOUND),
    Case("dot segments", "GET", "/../../etc/passwd", 404, NOT_FOUND, raw=True),
    # ---- OpenEnv's routes (hivex_jax/serve/openenv.py): plain HTTP refusals; /mcp answers JSON-RPC errors
    Case("OpenEnv state without id", "GET", "/state", 400, "needs ?session_id="),
    Case("OpenEnv state unknown id", "GET", "/state?session_id=nope", 404, "unknown session_id 'nope'"),
    Case("OpenEnv state closed id", "GET", "/state?session_id={closed}", 404, "unknown session_id"),
    Case("OpenEnv state 5000-char id", "GET", "/state?session_id=" + "x" * 5000, 404, "unknown session_id 'xxx"),
    Case("schema unknown env", "GET", "/schema?env_id=NoSuchEnv-v0", 404, "unknown env_id"),
    Case("POST /schema", "POST", "/schema", 405, NOT_ALLOWED),
    Case("GET /mcp", "GET", "/mcp", 405, NOT_ALLOWED),
    Case("mcp text/plain", "POST", "/mcp", 415, "application/json", "{}", (("content-type", "text/plain"),)),
    Case("mcp one byte over", "POST", "/mcp", 413, "limit", '{"x": "' + "a" * (LIMIT - 8) + '"}'),
    # ---- env ids
    Case("describe unknown env", "GET", "/envs/NoSuchEnv-v0", 404, "unknown env_id"),
    Case("describe registered, not served", "GET", f"/envs/{AWS}", 404, "unknown env_id"),
    Case("describe namespaced id", "GET", "/envs/jaxmarl%2Fmpe", 404, NOT_FOUND),  # %2F is a separator
    Case("describe 8000-char id", "GET", "/envs/" + "x" * 8000, 404, "unknown env_id 'xxx"),
    reset("reset unknown env", 404, "NoSuchEnv-v0", env_id="NoSuchEnv-v0"),
    reset("reset registered, not served", 404, AWS, env_id=AWS),
    reset("reset env id in lower case", 404, "unknown env_id", env_id=WFC.lower()),
    reset("reset empty env id", 404, "unknown env_id", env_id=""),
    reset("env id a number", 404, "unknown env_id", env_id=7),
    reset("env id null", 404, "unknown env_id", env_id=None),
    reset("env id a list", 404, "unknown env_id", env_id=[WFC]),
    reset("env id an object", 404, "unknown env_id", env_id={"id": WFC}),
    reset("env id true", 404, "unknown env_id", env_id=True),
    Case("reset without env id", "POST", "/reset", 404, "unknown env_id None", "{}"),
    Case("reset empty body", "POST", "/reset", 404, "unknown env_id None", ""),
    # ---- unknown (extra) fields
    reset("extra reset field", 400, "unknown reset fields ['debug']", debug=True),
    reset("action at reset", 400, "unknown reset fields ['action']", action=ACTION),
    reset("unknown option", 400, "no_such_option", options={"no_such_option": 1}),
    reset("empty option name", 400, "''", options={"": 1}),
    reset("dunder option name", 400, "__class__", options={"__class__": 1}),
    step("extra step field", 400, "unknown step fields ['reward']", '[], "reward": 1'),
    # ---- body types, malformed JSON
    Case("body a list", "POST", "/reset", 400, "must be a JSON object; got list", "[]"),
    Case("body a number", "POST", "/reset", 400, "got int", "1"),
    Case("body a string", "POST", "/reset", 400, "got str", '"reset"'),
    Case("body null", "POST", "/reset", 400, "got NoneType", "null"),
    Case("body NaN", "POST", "/step", 400, "got float", "NaN"),
    Case("body not JSON", "POST", "/reset", 400, "malformed JSON", "env_id=WindFarmControl-v0"),
    Case("body cut short", "POST", "/reset", 400, "malformed JSON", '{"env_id": "Wind'),
    Case("body trailing garbage", "POST", "/reset", 400, "malformed JSON", "{} {}"),
    Case("body not UTF-8", "POST", "/reset", 400, "malformed JSON", b'{"env_id": "\xff\xfe"}'),
    Case("body single quotes", "POST", "/step", 400, "malformed JSON", "{'session_id': 1}"),
    # ---- content types (415), oversize bodies (413), Host (421)
    Case("text/plain", "POST", "/reset", 415, "application/json", j({"env_id": WFC}), (("content-type", "text/plain"),)),
    Case("form", "POST", "/reset", 415, "application/json", "env_id=x", (("content-type", "application/x-www-form-urlencoded"),)),
    Case("multipart", "POST", "/step", 415, "application/json", "--x--", (("content-type", "multipart/form-data; boundary=x"),)),
    Case("no content type", "POST", "/reset", 415, "got 'none'", j({"env_id": WFC}), ()),
    Case("json prefix", "POST", "/reset", 415, "application/jsonp", "{}", (("content-type", "application/jsonp"),)),
    Case("text/json", "POST", "/grade/{live}", 415, "text/json", "{}", (("content-type", "text/json"),)),
    Case("body one byte over", "POST", "/reset", 413, "limit", '{"x": "' + "a" * (LIMIT - 8) + '"}'),
    Case("declared 1 TB, nothing sent", "POST", "/reset", 413, "1000000000000 bytes",
         headers=(("content-type", "application/json"), ("content-length", "1000000000000")), raw=True),  # fmt: skip
    Case("content-length not a number", "POST", "/reset", 400, "invalid http request",
         headers=(("content-type", "application/json"), ("content-length", "12abc")), raw=True, uvicorn=True),
    Case("headers over 16 KiB", "GET", "/envs", 431, "the limit is 16384", headers=(("x-filler", "a" * 20_000),), raw=True),
    Case("headers of 70 KB", "POST", "/reset", 431, "headers are", "{}", (("content-type", "application/json"), ("x-filler", "a" * 70_000)), raw=True),  # fmt: skip
    Case("foreign Host", "GET", "/envs", 421, "DNS rebinding", headers=(("host", "evil.example"),), raw=True),
    # ---- deep nesting and overflow
    Case("nested 100000 lists", "POST", "/reset", 400, "nested too deeply", "[" * 100_000 + "]" * 100_000),
    Case("nested 50 objects", "POST", "/reset", 400, "deeper than 32", '{"a": ' * 50 + "1" + "}" * 50),
    reset_text("option nested 40", 400, "deeper than 32", '"options": {"max_steps": ' + "[" * 40 + "]" * 40 + "}"),
    step("action nested 40", 400, "deeper than 32", "[" * 40 + "]" * 40),
    reset_text("world seed 5001 digits", 400, "4300", f'"world_seed": {HUGE}'),
    reset_text("task 5001 digits", 400, "4300", f'"task": {HUGE}'),
    reset_text("option 5001 digits", 400, "4300", f'"options": {{"max_steps": {HUGE}}}'),
    step("discrete 5001 digits", 400, "4300", entry_action(f'{{"discrete": [{HUGE}]}}')),
    # ---- world_seed / seed
    reset("world seed 2**40", 400, "world_seed must be an integer in [0, 2**32)", world_seed=2**40),
    reset("world seed 2**32", 400, "world_seed", world_seed=2**32),
    reset("world seed -1", 400, "world_seed", world_seed=-1),
    reset("world seed 1e308", 400, "world_seed", world_seed=1e308),
    reset("world seed 1.0", 400, "world_seed", world_seed=1.0),
    reset("world seed a string", 400, "world_seed", world_seed="1"),
    reset("world seed null", 400, "world_seed", world_seed=None),
    reset("world seed true", 400, "world_seed", world_seed=True),
    reset("world seed a list", 400, "world_seed", world_seed=[1]),
    reset("world seed NaN", 400, "world_seed", world_seed=NAN),
    reset("world seed Infinity", 400, "world_seed", world_seed=INF),
    reset("seed -Infinity", 400, "world_seed", seed=-INF),
    # ---- task and level
    reset("task a string", 400, "task must be an integer", task="0"),
    reset("task 1.5", 400, "task must be an integer", task=1.5),
    reset("task 1.0", 400, "task must be an integer", task=1.0),
    reset("task true", 400, "task must be an integer", task=True),
    reset("task a list", 400, "task must be an integer", task=[0]),
    reset("task an object", 400, "task must be an integer", task={}),
    reset("task NaN", 400, "task must be an integer", task=NAN),
    reset("task -1", 400, "task", task=-1),
    reset("task 99", 400, "task", task=99),
    reset("task 2**40", 400, "task", task=2**40),
    reset("task 1e308", 400, "task must be an integer", task=1e308),
    reset("level a string", 400, "level must be an integer", level="a"),
    reset("level 2.5", 400, "level must be an integer", level=2.5),
    reset("level -5", 400, "unknown pattern -5", level=-5),
    reset("level 10**9", 400, "unknown pattern", level=10**9),
    reset("level 2**63", 400, "unknown pattern", level=2**63),
    reset("level -Infinity", 400, "level must be an integer", level=-INF),
    # ---- options: container and value types, bounds
    reset("options a string", 400, "options must be an object", options="max_steps=5"),
    reset("options a list", 400, "options must be an object", options=[["max_steps", 5]]),
    reset("options null", 400, "options must be an object", options=None),
    reset("options a number", 400, "options must be an object", options=5),
    option("max_steps a string", 400, "'max_steps' must be a number", max_steps="100"),
    option("max_steps null", 400, "'max_steps' must be a number", max_steps=None),
    option("max_steps an object", 400, "'max_steps' must be a number", max_steps={"value": 5}),
    option("max_steps true", 400, "'max_steps' must be a number", max_steps=True),
    option("float option false", 400, "must be a number", wind_noise_degrees=False),
    option("max_steps a list", 400, "max_steps", max_steps=[5, 6]),
    option("max_steps 1e308", 400, "max_steps", max_steps=1e308),
    option("max_steps 2**40", 400, "max_steps", max_steps=2**40),
    option("max_steps 2**70", 400, "max_steps", max_steps=2**70),
    option("max_steps -1", 400, "max_steps", max_steps=-1),
    option("max_steps 0", 400, "max_steps", max_steps=0),
    option("max_steps 100.5", 400, "'max_steps' is an integer field; got 100.5", max_steps=100.5),
    option("level option 2.5", 400, "is an integer field", level=2.5),
    option("max_steps 50000-long list", 400, "max_steps", max_steps=[1] * 50_000),
    option("max_steps NaN", 400, "max_steps", max_steps=NAN),
    option("max_steps Infinity", 400, "max_steps", max_steps=INF),
    option("max_steps -Infinity", 400, "max_steps", max_steps=-INF),
    option("float option NaN", 400, "wind_noise_degrees", wind_noise_degrees=NAN),
    option("float option 1e308", 400, "wind_noise_degrees", wind_noise_degrees=1e308),
    option("float option nested list", 400, "wind_noise_degrees", wind_noise_degrees=[[1.0]]),
    option("float option -Infinity", 400, "wind_noise_degrees", wind_noise_degrees=-INF),
    # ---- static options: refused without --allow-static-options, bounded with it
    option("static num_agents refused", 400, "--allow-static-options", num_agents=4),
    option("static render_size refused", 400, "--allow-static-options", render_size=64),
    option("static num_agents 10**9 refused", 400, "num_agents", num_agents=10**9),
    option("static wake_model refused", 400, "wake_model", wake_model=1),
    option("camera_size 0", 400, "camera_size", "open", AWS, camera_size=0),
    option("camera_size 1024", 400, "camera_size", "open", AWS, camera_size=1024),
    option("camera_size 1e308", 400, "camera_size", "open", AWS, camera_size=1e308),
    option("camera_size 2.5", 400, "camera_size", "open", AWS, camera_size=2.5),
    option("camera_channels 2", 400, "camera_channels", "open", AWS, camera_channels=2),
    option("grid_size 10**6", 400, "grid_size", "open", AWS, grid_size=10**6),
    option("AWS num_agents -1", 400, "num_agents", "open", AWS, num_agents=-1),
    option("AWS max_steps 1e308", 400, "max_steps", "open", AWS, max_steps=1e308),
    option("num_agents 10**9", 400, "num_agents", "open", num_agents=10**9),
    option("num_agents 0", 400, "num_agents", "open", num_agents=0),
    option("num_agents 2**40", 400, "num_agents", "open", num_agents=2**40),
    option("num_agents NaN", 400, "num_agents", "open", num_agents=NAN),
    option("render_size 10**5", 400, "render_size", "open", render_size=10**5),
    option("max_steps 1e308 (open)", 400, "max_steps", "open", max_steps=1e308),
    # ---- options the server does not serve
    option("world_files a path", 400, "not served", world_files="worlds/"),
    option("world_files a number", 400, "not served", world_files=6),
    option("world_files a list", 400, "not served", world_files=[6, 7]),
    option("stress_worlds", 400, "not served", stress_worlds=1),
    option("message_dims", 400, "message_dims", message_dims=4),
    option("message_vocab", 400, "message_vocab", message_vocab=8),
    option("message_loss", 400, "message_loss", message_loss=0.1),
    option("message_noise", 400, "message_noise", message_noise=0.1),
    option("message_range", 400, "message_range", message_range=5.0),
    option("world_files (open)", 400, "not served", "open", world_files=[6]),
    # ---- visual encoding
    reset("visual encoding png", 400, "visual_encoding", visual_encoding="png"),
    reset("visual encoding a number", 400, "visual_encoding", visual_encoding=1),
    reset("visual encoding null", 400, "visual_encoding", visual_encoding=None),
    # ---- session ids: unknown, wrong type, closed, expired, ended
    step("step unknown session", 404, "unknown session_id 'nope'", j(ACTION), session="nope"),
    Case("step session id a number", "POST", "/step", 404, "unknown session_id 5", j({"session_id": 5, "action": ACTION})),
    Case("step session id null", "POST", "/step", 404, "unknown session_id None", j({"session_id": None, "action": ACTION})),
    Case("step session id a list", "POST", "/step", 404, "unknown session_id", j({"session_id": ["x"], "action": ACTION})),
    Case("step without session id", "POST", "/step", 404, "unknown session_id None", j({"action": ACTION})),
    step("step closed session", 404, "unknown session_id", j(ACTION), session="{closed}"),
    step("step ended session", 409, "episode ended at step 1", j(ACTION), session="{ended}"),
    Case("step expired session", "POST", "/step", 404, "unknown session_id", '{"session_id": "{expired}", "action": []}', server="open"),
    step("step without action", 409, "episode ended", "null", session="{ended}"),
    Case("step live without action", "POST", "/step", 400, "step needs an 'action'", '{"session_id": "{live}"}'),
    Case("state unknown", "GET", "/state/nope", 404, "unknown session_id 'nope'"),
    Case("state closed", "GET", "/state/{closed}", 404, "unknown session_id"),
    Case("state expired", "GET", "/state/{expired}", 404, "unknown session_id", server="open"),
    Case("state 8000-char id", "GET", "/state/" + "x" * 8000, 404, "unknown session_id"),
    Case("state NUL id", "GET", "/state/%00", 404, "unknown session_id"),
    Case("grade unknown", "POST", "/grade/nope", 404, "unknown session_id"),
    Case("grade closed", "POST", "/grade/{closed}", 404, "unknown session_id"),
    Case("grade expired", "POST", "/grade/{expired}", 404, "unknown session_id", server="open"),
    Case("delete unknown", "DELETE", "/session/nope", 404, "unknown session_id"),
    Case("delete closed", "DELETE", "/session/{closed}", 404, "unknown session_id"),
    Case("delete expired", "DELETE", "/session/{expired}", 404, "unknown session_id", server="open"),
    # ---- actions of the wrong type, count, agents or range (the live session must not move)
    step("action null", 400, "action must be a list of 8", "null"),
    step("action a string", 400, "action must be a list of 8", '"left"'),
    step("action a number", 400, "action must be a list of 8", "5"),
    step("action true", 400, "action must be a list of 8", "true"),
    step("action empty", 400, "one entry per agent (8); got 0", "[]"),
    step("action 7 agents", 400, "got 7", j(ACTION[:7])),
    step("action 9 agents", 400, "got 9", j(ACTION + ACTION[:1])),
    step("action one entry for all", 400, "one entry per agent", '{"discrete": [1]}'),
    step("action dict missing agent", 400, "missing agents ['agent_7']", j({f"agent_{i}": ACTION[0] for i in range(7)})),
    step("action dict extra agent", 400, "unknown agents ['agent_8']", j({f"agent_{i}": ACTION[0] for i in range(9)})),
    step("action dict misspelled agent", 400, "unknown agents", j({**{f"agent_{i}": ACTION[0] for i in range(7)}, "agent_7 ": ACTION[0]})),
    step("entry a number", 400, "action[agent_0] must be an object", "[1, 1, 1, 1, 1, 1, 1, 1]"),
    step("entry null", 400, "action[agent_0] must be an object", entry_action("null")),
    step("entry a list", 400, "must be an object", entry_action("[1]")),
    step("entry a 50000-long list", 400, "must be an object", entry_action(j([1] * 20_000))),
    step("entry empty", 400, "missing 'discrete'", entry_action("{}")),
    step("entry unknown key", 400, "unknown keys ['speed']", entry_action('{"discrete": [1], "speed": 2}')),
    step("discrete empty", 400, "discrete must have 1 entries; got 0", entry_action('{"discrete": []}')),
    step("discrete two", 400, "discrete must have 1 entries; got 2", entry_action('{"discrete": [1, 1]}')),
    step("discrete 3 (branch of 3)", 400, "discrete[0] must be in [0, 3); got 3", entry_action('{"discrete": [3]}')),
    step("discrete -1", 400, "must be in [0, 3); got -1", entry_action('{"discrete": [-1]}')),
    step("discrete 2**40", 400, "must be in [0, 3)", entry_action('{"discrete": [1099511627776]}')),
    step("discrete 1.0", 400, "must hold integers; got 1.0", entry_action('{"discrete": [1.0]}')),
    step("discrete true", 400, "must hold integers; got True", entry_action('{"discrete": [true]}')),
    step("discrete a string", 400, "must hold integers", entry_action('{"discrete": ["1"]}')),
    step("discrete null", 400, "must hold integers", entry_action('{"discrete": [null]}')),
    step("discrete 1e308", 400, "must hold integers", entry_action('{"discrete": [1e308]}')),
    step("discrete NaN", 400, "must hold integers", entry_action('{"discrete": [NaN]}')),
    step("discrete Infinity", 400, "must hold integers", entry_action('{"discrete": [Infinity]}')),
    step("discrete a number", 400, "must be a list of 1 integers; got int", entry_action('{"discrete": 1}')),
    step("discrete an object", 400, "must be a list of 1 integers; got dict", entry_action('{"discrete": {"0": 1}}')),
    step("discrete nested", 400, "must hold integers", entry_action('{"discrete": [[1]]}')),
    step("continuous on a discrete env", 400, "has no continuous action", entry_action('{"continuous": [0.5], "discrete": [1]}')),
    step("continuous a string", 400, "has no continuous action", entry_action('{"continuous": "x", "discrete": [1]}')),
]  # fmt: skip


def send_raw(port: int, case: Case, body: bytes) -> tuple[int, bytes]:
    """(status, body) of `case` written over a socket as given (header values httpx would not send)."""
    headers = dict(case.headers)
    headers.setdefault("host", f"127.0.0.1:{port}")
    if body and "content-length" not in headers:
        headers["content-length"] = str(len(body))
    head = "\r\n".join(
        [
            f"{case.method} {case.path} HTTP/1.1",
            *(f"{k}: {v}" for k, v in headers.items()),
            "connection: close",
        ]
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, reply = data.partition(b"\r\n\r\n")
    return int(head_bytes.split()[1]), reply


def fill(text: str, ids: dict[str, str]) -> str:
    for name, session_id in ids.items():
        text = text.replace("{" + name + "}", session_id)
    return text


def test_the_table_has_over_113_distinct_cases():
    assert len(CASES) >= 113
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_request_gets_its_documented_4xx_with_one_line_json(servers, case):
    server = servers[case.server]
    path = fill(case.path, server.ids)
    body = case.body if isinstance(case.body, bytes) else fill(case.body or "", server.ids).encode()
    if case.raw:
        status, reply = send_raw(server.port, case, body)
    else:
        r = server.client.request(case.method, path, content=body or None, headers=dict(case.headers))
        status, reply = r.status_code, r.content
    if case.uvicorn:
        assert (status, case.phrase in reply.decode().lower()) == (case.status, True), (status, reply)
        return
    detail = json.loads(reply)["detail"]
    assert (status, case.phrase.lower() in str(detail).lower()) == (case.status, True), (status, detail)
    assert isinstance(detail, str) and "\n" not in detail and len(detail) <= 400, detail


def test_after_the_table_the_server_still_serves_and_the_open_session_steps_as_in_process(servers):
    """Runs after the table (pytest keeps file order): the session opened before it is at step 0 (no
    refused action moved it), steps like the in-process env, and a fresh reset on each server works."""
    strict, live = servers["strict"], servers["strict"].ids["live"]
    state = strict.client.get(f"/state/{live}").json()
    assert state["episode"]["length"] == 0
    r = strict.client.post("/step", json={"session_id": live, "action": ACTION})
    assert r.status_code == 200, r.text
    served = r.json()
    env, params = hivex_jax.make(WFC, max_steps=MAX_STEPS)
    _, env_state = jax.jit(env.reset)(world_key(6000), params)
    action = {"continuous": np.zeros((8, 0), np.float32), "discrete": np.ones((8, 1), np.int32)}
    key = adapter_step_key(adapter_episode_key(6000), 0)
    obs, _, reward, *_ = jax.jit(env.step)(key, env_state, action, params)
    vector = np.asarray([agent["vector"] for agent in served["observation"]["agents"]], np.float32)
    np.testing.assert_allclose(vector, np.asarray(obs["vector"]), rtol=ULPS, atol=ULPS)
    np.testing.assert_allclose(served["reward"], np.asarray(reward), rtol=ULPS, atol=ULPS)
    assert served["info"]["step"] == 1
    for server in servers.values():
        assert server.proc.poll() is None
        open_session(server.client, 7)  # asserts a 200
    health = strict.client.get("/health").json()
    assert health["status"] == "healthy" and health["sessions"] == 3  # live, ended, the fresh one
