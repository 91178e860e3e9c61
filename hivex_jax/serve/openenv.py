"""OpenEnv's protocol over `HivexServer` (docs/serve.md, "Use it from OpenEnv"): the `/ws` WebSocket that
OpenEnv's clients (`GenericEnvClient`, `EnvClient` subclasses) talk, `/schema`, `GET /state`, and `/mcp`
(JSON-RPC 2.0 with the MCP tools reset, step, state, grade and close), so OpenEnv's code plays an env
unchanged and `openenv validate --url` passes.

Multi-agent inside OpenEnv's single-agent replies: the action is the joint action keyed by agent id (the
project's own action JSON), `reward` is the team reward (the mean over agents) as a float, `done` is the
episode's done (every agent terminated or truncated), and the per-agent rewards, ends and info are in the
observation's `metadata`. The project's own routes (/reset, /step, /state/{id}, ...) keep their rich replies.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

import numpy as np
from fastapi import Request, WebSocket  # module level: FastAPI resolves the routes' annotations here
from fastapi.responses import JSONResponse

from hivex_jax.serve.guard import MAX_JSON_DEPTH, json_depth
from hivex_jax.serve.sessions import RequestError

#: OpenEnv's HTTP API standard version: `openenv validate` reads a 1.x OpenAPI info.version as its profile
OPENENV_API_VERSION = "1.0.0"
MCP_PROTOCOL_VERSION = "2025-06-18"

# OpenEnv's WebSocket error codes (openenv.core.env_server.types.WSErrorCode)
INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR = "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR"
EXECUTION_ERROR, CAPACITY_REACHED, SESSION_ERROR = "EXECUTION_ERROR", "CAPACITY_REACHED", "SESSION_ERROR"
# JSON-RPC 2.0 error codes
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32000,
)

RESET_FIELDS = ("seed", "world_seed", "episode_id", "task", "level", "options", "visual_encoding", "env_id")


def ws_error(message: str, code: str) -> dict[str, Any]:
    """OpenEnv's WebSocket error reply (`WSErrorResponse`): one-line message and a `WSErrorCode`."""
    return {"type": "error", "data": {"message": " ".join(str(message).split())[:500], "code": code}}


def ws_code(exc: RequestError) -> str:
    """The `WSErrorCode` of a refusal: 429 is capacity, 404/409 the session, other 4xx validation."""
    if exc.status == 429:
        return CAPACITY_REACHED
    if exc.status in (404, 409):
        return SESSION_ERROR
    return VALIDATION_ERROR


def _parse(raw: str | bytes) -> Any:
    """A message's JSON (a `RequestError(400)` if malformed or nested deeper than the routes accept)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise RequestError(400, "malformed JSON: nested too deeply") from None
    except ValueError as exc:
        raise RequestError(400, f"malformed JSON: {exc}") from exc
    if json_depth(value) > MAX_JSON_DEPTH:
        raise RequestError(400, f"malformed JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    return value


class OpenEnvSession:
    """One OpenEnv episode handle (a /ws connection or an MCP session): the hivex session it plays now."""

    def __init__(self, server: Any, client: str):
        self.server, self.client = server, client
        self.session_id: str | None = None
        self.episode_id: str | None = None

    def _env_id(self, data: Mapping[str, Any]) -> str:
        env_id = data.get("env_id")
        if env_id is None and len(self.server.env_ids) == 1:
            return self.server.env_ids[0]
        if env_id is None:
            raise RequestError(
                400, f"this server serves several envs; reset needs env_id, one of {self.server.env_ids}"
            )
        return env_id

    async def reset(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Close the episode being played (if any) and open a new one: OpenEnv's reset reply data."""
        if not isinstance(data, Mapping):
            raise RequestError(400, f"reset data must be an object; got {type(data).__name__}")
        unknown = sorted(set(data) - set(RESET_FIELDS))
        if unknown:
            raise RequestError(400, f"unknown reset fields {unknown}; fields are {sorted(RESET_FIELDS)}")
        episode_id = data.get("episode_id")
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 200):
            raise RequestError(400, "episode_id must be a string of at most 200 characters")
        body = {k: v for k, v in data.items() if k not in ("episode_id", "env_id")}
        body["env_id"] = self._env_id(data)
        try:  # the new episode opens first: a refused reset leaves the one being played as it was
            reply = await self.server.reset(body, client=self.client)
        except RequestError as exc:
            if exc.status != 429 or self.session_id is None:
                raise
            await self.close()  # at a session limit: the old episode's place is the new one's
            reply = await self.server.reset(body, client=self.client)
        else:
            await self.close()
        self.session_id = reply["session_id"]
        self.episode_id = episode_id or self.session_id
        observation = reply["observation"]
        observation["metadata"] = {"episode_id": self.episode_id, **reply["info"]}
        observation["metadata"]["session_id"] = self.session_id
        return {"observation": observation, "reward": None, "done": False}

    def _open(self) -> str:
        if self.session_id is None:
            raise RequestError(409, "no episode: send a reset first")
        return self.session_id

    async def step(self, action: Any) -> dict[str, Any]:
        """One joint action (keyed by agent id): OpenEnv's step reply data, team reward as `reward`."""
        reply = await self.server.step({"session_id": self._open(), "action": action})
        rewards = reply["reward"]
        agent_ids = list(self.server.sessions[self.session_id].pool.env.agent_ids)
        observation = reply["observation"]
        observation["metadata"] = {
            "episode_id": self.episode_id,
            "session_id": self.session_id,
            "step": reply["info"]["step"],
            "rewards": dict(zip(agent_ids, rewards, strict=True)),
            "terminated": dict(zip(agent_ids, reply["terminated"], strict=True)),
            "truncated": dict(zip(agent_ids, reply["truncated"], strict=True)),
            "info": reply["info"],
        }
        team = float(np.mean([np.nan if r is None else r for r in rewards]))
        return {
            "observation": observation,
            "reward": team if np.isfinite(team) else None,
            "done": reply["done"],
        }

    async def state(self) -> dict[str, Any]:
        """OpenEnv's `State` (episode_id, step_count) with the hivex state (hidden parts included)."""
        if self.session_id is None:
            return {"episode_id": None, "step_count": 0}
        state = await self.server.state(self.session_id)
        return {"episode_id": self.episode_id, "step_count": state["step"], **state}

    async def grade(self) -> dict[str, Any]:
        """The episode's grade (the project's /grade reply)."""
        return await self.server.grade(self._open(), client=self.client)

    async def close(self) -> dict[str, Any]:
        """End the episode being played, if any."""
        session_id, self.session_id = self.session_id, None
        if session_id is not None and session_id in self.server.sessions:
            return await self.server.close(session_id)
        return {"session_id": session_id, "closed": session_id is not None}


async def ws_loop(websocket: Any, server: Any, client: str) -> None:
    """Serve one /ws connection: OpenEnv's messages in, its observation/state/error replies out.

    Bad messages get an error reply and the connection stays open; `close` or a disconnect ends the
    episode and frees its slot."""
    from starlette.websockets import WebSocketDisconnect

    await websocket.accept()
    handle = OpenEnvSession(server, client)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            if raw is None:
                raw = message.get("bytes") or b""
            try:
                request = _parse(raw)
            except RequestError as exc:
                await websocket.send_json(ws_error(exc.message, INVALID_JSON))
                continue
            kind = request.get("type") if isinstance(request, dict) else None
            data = request.get("data", {}) if isinstance(request, dict) else None
            try:
                if kind == "reset":
                    reply = {"type": "observation", "data": await handle.reset(data or {})}
                elif kind == "step":
                    reply = {"type": "observation", "data": await handle.step(data)}
                elif kind == "state":
                    reply = {"type": "state", "data": await handle.state()}
                elif kind == "close":
                    break
                elif kind == "mcp":
                    reply = {"type": "mcp", "data": await mcp_call(server, data, client, handle)}
                else:
                    reply = ws_error(
                        f"unknown message type {kind!r}; types are reset, step, state, close, mcp",
                        UNKNOWN_TYPE,
                    )
            except RequestError as exc:
                reply = ws_error(exc.message, ws_code(exc))
            except Exception as exc:  # a bug: this client hears of it, the connection and server stay up
                reply = ws_error(f"{type(exc).__name__}: {exc}", EXECUTION_ERROR)
            await websocket.send_json(reply)
    except WebSocketDisconnect:
        return
    finally:
        try:
            await handle.close()
        except RequestError:
            pass
    await websocket.close()


# ------------------------------------------------------------------------------------------------ schemas
def _numbers(width: int, kind: str = "number", **bounds: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": kind, **bounds}, "minItems": width, "maxItems": width}


def schemas(env: Any) -> dict[str, Any]:
    """JSON schemas of `env`'s OpenEnv action, observation and state (from its spaces and layout)."""
    ids = list(env.agent_ids)
    c, branches = env.continuous_dims, list(env.discrete_branches)
    agent_action: dict[str, Any] = {
        "type": "object",
        "properties": {
            "continuous": _numbers(c, minimum=-1.0, maximum=1.0),
            "discrete": {
                "type": "array",
                "prefixItems": [{"type": "integer", "minimum": 0, "maximum": n - 1} for n in branches],
                "minItems": len(branches),
                "maxItems": len(branches),
            },
        },
        "required": [name for name, width in (("continuous", c), ("discrete", len(branches))) if width],
        "additionalProperties": False,
    }
    action = {
        "title": f"{env.env_id} joint action",
        "description": "one action per agent, keyed by agent id; continuous values are clipped to [-1, 1]",
        "type": "object",
        "properties": {agent_id: agent_action for agent_id in ids},
        "required": ids,
        "additionalProperties": False,
    }
    space = env.observation_space()
    width = int(space["vector"].shape[-1])
    fields = {name: _numbers(part.stop - part.start) for name, part in env.observation_layout().items()}
    agent_obs: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"enum": ids},
            "vector": _numbers(width),
            "fields": {"type": "object", "properties": fields},
        },
        "required": ["id", "vector", "fields"],
    }
    if "visual" in space.spaces:
        agent_obs["properties"]["visual"] = {
            "description": f"camera image {list(space['visual'].shape[1:])} (H, W, C) uint8, a nested list "
            "or {shape, dtype, base64} with reset's visual_encoding 'base64'"
        }
    observation = {
        "title": f"{env.env_id} observation",
        "type": "object",
        "properties": {
            "agents": {"type": "array", "items": agent_obs, "minItems": len(ids), "maxItems": len(ids)},
            "metadata": {
                "type": "object",
                "description": "episode_id, session_id, step; after a step the per-agent rewards, "
                "terminated, truncated (keyed by agent id) and info",
            },
        },
        "required": ["agents"],
    }
    state = {
        "title": f"{env.env_id} state",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
            "session_id": {"type": "string"},
            "env_id": {"const": env.env_id},
            "done": {"type": "boolean"},
            "state": {"type": "object", "description": "the full simulator state, hidden parts included"},
            "episode": {"type": "object", "description": "length, return, return_per_agent, reward terms"},
        },
        "required": ["episode_id", "step_count"],
        "additionalProperties": True,
    }
    return {"action": action, "observation": observation, "state": state}


# -------------------------------------------------------------------------------------------------- MCP
def mcp_tools(env_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """The MCP tools (name, description, inputSchema): reset, step, state, grade, close."""
    session = {"session_id": {"type": "string", "description": "from openenv/session/create or reset"}}
    reset_props = {
        **session,
        "seed": {"type": "integer", "minimum": 0, "description": "world seed"},
        "task": {"type": "integer"},
        "level": {"type": "integer"},
        "episode_id": {"type": "string"},
    }
    if len(env_ids) > 1:
        reset_props["env_id"] = {"enum": list(env_ids)}

    def tool(name: str, description: str, props: dict[str, Any], required: tuple = ()) -> dict[str, Any]:
        schema = {"type": "object", "properties": props, "required": list(required)}
        return {"name": name, "description": description, "inputSchema": schema}

    return [
        tool("reset", "Start an episode; returns session_id and the first observation.", reset_props),
        tool(
            "step",
            "Act once: the joint action keyed by agent id (see GET /schema); returns the observation, "
            "the team reward, done and per-agent rewards in observation.metadata.",
            {**session, "action": {"type": "object"}},
            ("session_id", "action"),
        ),
        tool("state", "The episode's full state (hidden parts included).", session, ("session_id",)),
        tool(
            "grade",
            "The episode's return as a fraction of the scripted controller's.",
            session,
            ("session_id",),
        ),
        tool("close", "End the episode and free its slot.", session, ("session_id",)),
    ]


class McpSessions:
    """MCP session handles (`openenv/session/create`): each plays one episode at a time; bounded in number."""

    def __init__(self, server: Any):
        self.server = server
        self.handles: dict[str, OpenEnvSession] = {}

    def create(self, client: str) -> str:
        limit = self.server.config.max_sessions
        if len(self.handles) >= limit:  # forget handles with no open episode before refusing
            for key in [k for k, h in self.handles.items() if h.session_id not in self.server.sessions]:
                del self.handles[key]
        if len(self.handles) >= limit:
            raise RequestError(429, f"the server holds its maximum of {limit} MCP sessions")
        key = "mcp-" + secrets.token_hex(8)
        self.handles[key] = OpenEnvSession(self.server, client)
        return key

    def handle(self, key: Any, client: str) -> OpenEnvSession:
        """The handle `key` (an MCP session or a hivex session id from reset), or a 404."""
        if isinstance(key, str) and key in self.handles:
            return self.handles[key]
        if isinstance(key, str) and key in self.server.sessions:  # a session the reset tool opened
            handle = OpenEnvSession(self.server, client)
            handle.session_id = handle.episode_id = key
            return handle
        raise RequestError(404, f"unknown session_id {key!r} (closed, timed out or never opened)")


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response with a one-line message."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": " ".join(message.split())[:500]},
    }


async def mcp_call(
    server: Any, request: Any, client: str, ws_handle: OpenEnvSession | None = None
) -> dict[str, Any]:
    """Answer one JSON-RPC 2.0 request (MCP initialize, tools/list, tools/call; OpenEnv's session methods)."""
    if (
        not isinstance(request, dict)
        or request.get("jsonrpc") != "2.0"
        or not isinstance(request.get("method"), str)
    ):
        rid = request.get("id") if isinstance(request, dict) else None
        return rpc_error(rid, INVALID_REQUEST, "Invalid Request: needs jsonrpc '2.0' and a method name")
    rid, method, params = request.get("id"), request["method"], request.get("params", {})
    if not isinstance(params, dict):
        return rpc_error(rid, INVALID_PARAMS, "params must be an object")
    sessions: McpSessions = server.mcp_sessions
    try:
        if method == "initialize":
            result: Any = {
                "protocolVersion": params.get("protocolVersion", MCP_PROTOCOL_VERSION),
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "hivex_jax", "version": OPENENV_API_VERSION},
            }
        elif method.startswith("notifications/") or method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": mcp_tools(server.env_ids)}
        elif method == "openenv/session/create":
            result = {"session_id": sessions.create(client)}
        elif method == "openenv/session/close":
            key = params.get("session_id")
            handle = sessions.handle(key, client)
            await handle.close()
            sessions.handles.pop(key, None)
            result = {"session_id": key, "closed": True}
        elif method == "tools/call":
            result = await _call_tool(sessions, params, client, ws_handle)
        else:
            return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {method!r}")
    except RequestError as exc:
        code = INVALID_PARAMS if exc.status == 400 else SERVER_ERROR
        return rpc_error(rid, code, exc.message)
    return {"jsonrpc": "2.0", "id": rid, "result": result}


async def _call_tool(
    sessions: McpSessions, params: dict[str, Any], client: str, ws_handle: OpenEnvSession | None
) -> dict[str, Any]:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RequestError(400, "tools/call arguments must be an object")
    arguments = dict(arguments)
    key = arguments.pop("session_id", None) or params.get("session_id")
    if name == "reset":
        if key is not None:
            handle = sessions.handle(key, client)
        elif ws_handle is not None:
            handle = ws_handle
        else:
            handle = OpenEnvSession(sessions.server, client)
        payload = await handle.reset(arguments)
        payload["session_id"] = key if key in sessions.handles else handle.session_id
    elif name in ("step", "state", "grade", "close"):
        handle = ws_handle if key is None and ws_handle is not None else sessions.handle(key, client)
        if name == "step":
            if "action" not in arguments:
                raise RequestError(400, "step needs an 'action' (joint action keyed by agent id)")
            payload = await handle.step(arguments["action"])
        else:
            payload = await getattr(handle, name)()
    else:
        raise RequestError(400, f"unknown tool {name!r}; tools are reset, step, state, grade, close")
    return {
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "structuredContent": payload,
        "isError": False,
        "data": payload,
    }


# ------------------------------------------------------------------------------------------------ routes
def add_openenv_routes(app: Any, server: Any, client_of: Any) -> None:
    """Register /ws, /schema, GET /state and /mcp on `app` (the project's routes are untouched)."""
    import hivex_jax

    server.mcp_sessions = McpSessions(server)

    @app.get("/schema")
    async def schema(env_id: str | None = None) -> JSONResponse:
        if env_id is None and len(server.env_ids) == 1:
            env_id = server.env_ids[0]
        if env_id is None:
            raise RequestError(
                400, f"this server serves several envs; ask /schema?env_id=, one of {server.env_ids}"
            )
        env, _ = hivex_jax.make(server._check_env_id(env_id))
        return JSONResponse(schemas(env))

    @app.get("/state")
    async def state(session_id: str | None = None) -> JSONResponse:
        if session_id is None:
            raise RequestError(
                400, "GET /state needs ?session_id= (OpenEnv clients read their episode's state over /ws)"
            )
        reply = await server.state(session_id)
        return JSONResponse({"episode_id": session_id, "step_count": reply["step"], **reply})

    @app.post("/mcp")
    async def mcp(request: Request) -> JSONResponse:
        raw = await request.body()  # TransportGuard has read it under the size limit and deadline
        try:
            body = _parse(raw) if raw.strip() else {}
        except RequestError as exc:
            return JSONResponse(rpc_error(None, PARSE_ERROR, f"Parse error: {exc.message}"))
        return JSONResponse(await mcp_call(server, body, client_of(request)))

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await ws_loop(websocket, server, client_of(websocket))


def manifest(env_id: str, port: int = 8000) -> str:
    """The OpenEnv manifest (openenv.yaml, spec_version 1) of `hivex serve --env env_id`."""
    import hivex_jax
    from hivex_jax.envs import BUNDLED_ENV_IDS
    from hivex_jax.serve.asgi import app_name

    if env_id not in hivex_jax.registered_envs():
        raise ValueError(f"unknown environment id {env_id!r}; registered: {hivex_jax.registered_envs()}")
    if env_id not in BUNDLED_ENV_IDS:
        raise ValueError(
            f"a manifest names a module-level app, which exists for the bundled envs only: {BUNDLED_ENV_IDS}"
        )
    name = env_id.lower().replace("_", "-")
    return (
        f"# started with: hivex serve --env {env_id} --port {port}\n"
        "spec_version: 1\n"
        f"name: {name}\n"
        "type: space\n"
        "runtime: fastapi\n"
        f"app: hivex_jax.serve.asgi:{app_name(env_id)}\n"
        f"port: {port}\n"
        f"description: HIVEX {env_id} (hivex_jax), multi-agent; joint action keyed by agent id, "
        "team reward\n"
    )
