"""MCP over JSON-RPC 2.0 for `POST /mcp` and `/ws` (docs/serve.md, "Use it from OpenEnv"): `initialize`,
`ping`, `tools/list`, `tools/call` and OpenEnv's `openenv/session/create` / `openenv/session/close`; tools
`reset`, `step`, `state`, `grade`, `close` over an `OpenEnvSession`.

JSON-RPC 2.0 as written: a notification (no `id`) is processed and never answered; a batch (an array) is
answered element by element, notifications left out (nothing at all if every element is one); ids are
strings, numbers or null, and anything else is an Invalid Request answered with id null; `initialize`
answers the client's protocol version where it is one of `MCP_PROTOCOL_VERSIONS` and the newest of them
otherwise (MCP's version negotiation). Hand-written rather than the MCP SDK's server: OpenEnv's clients
post plain JSON to /mcp and call OpenEnv's session methods, which the SDK's transports do not take.

`tool_step` answers OpenEnv's MCP actions sent as `/ws` steps (`{"type": "list_tools"}`,
`{"type": "call_tool", "tool_name", "arguments"}`), as OpenEnv's own servers do, so its `MCPToolClient`
works in its default mode.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any, TypeGuard

from hivex_jax.serve.config import Caller
from hivex_jax.serve.openenv_session import OpenEnvSession
from hivex_jax.serve.sessions import RequestError

#: MCP revisions whose `initialize` handshake this server speaks (tools only; oldest to newest)
MCP_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_BATCH = 64  # requests in one JSON-RPC batch; a longer batch is one Invalid Request
# JSON-RPC 2.0 error codes
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32000,
)
REQUEST_MEMBERS = frozenset({"jsonrpc", "method", "params", "id"})
TOOLS = ("reset", "step", "state", "grade", "close")


class RpcError(Exception):
    """A JSON-RPC error: code and one-line message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response with a one-line message."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": " ".join(message.split())[:500]},
    }


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
        tool("state", "The episode's world, options and totals so far.", session, ("session_id",)),
        tool(
            "grade",
            "The episode's return against the scripted and random policies' on its world (normalised score).",
            session,
            ("session_id",),
        ),
        tool("close", "End the episode and free its slot.", session, ("session_id",)),
    ]


class McpSessions:
    """MCP session handles (`openenv/session/create`), each owned by its creator and playing one episode
    at a time; at most `max_sessions` (handles with no open episode are dropped first)."""

    def __init__(self, server: Any):
        self.server = server
        self.handles: dict[str, OpenEnvSession] = {}

    def create(self, caller: Caller) -> str:
        """A new handle of `caller`'s; a 429 when the limit holds handles that all play an episode."""
        limit = self.server.config.max_sessions
        if len(self.handles) >= limit:
            for key in [k for k, h in self.handles.items() if h.session_id not in self.server.sessions]:
                del self.handles[key]
        if len(self.handles) >= limit:
            raise RequestError(429, f"the server holds its maximum of {limit} MCP sessions")
        key = "mcp-" + secrets.token_hex(8)
        self.handles[key] = OpenEnvSession(self.server, caller)
        return key

    def handle(self, key: Any, caller: Caller) -> OpenEnvSession:
        """`caller`'s handle `key` (an MCP session, or a hivex session id from the reset tool): a 404 if
        there is none, a 403 if another caller owns it."""
        if isinstance(key, str) and key in self.handles:
            handle = self.handles[key]
            if handle.caller.owner != caller.owner:
                raise RequestError(
                    403,
                    f"MCP session {key} belongs to another client: only the one that created it may use it",
                )
            return handle
        if isinstance(key, str) and key in self.server.sessions:  # a session the reset tool opened
            self.server.session(key, caller)  # its owner only
            handle = OpenEnvSession(self.server, caller)
            handle.session_id = handle.episode_id = key
            return handle
        shown = repr(key) if len(repr(key)) <= 80 else repr(key)[:77] + "..."
        raise RequestError(404, f"unknown session_id {shown} (closed, timed out or never opened)")


def valid_id(request: dict[str, Any]) -> bool:
    """Whether the request's id (if any) is JSON-RPC's: a string, a finite number or null (not a bool)."""
    rid = request.get("id")
    if rid is None or isinstance(rid, str):
        return True
    return isinstance(rid, int | float) and not isinstance(rid, bool) and math.isfinite(rid)


async def rpc_reply(server: Any, body: Any, caller: Caller, ws_handle: OpenEnvSession | None = None) -> Any:
    """The reply to a JSON-RPC 2.0 message or batch: a response, a list of them, or None (nothing to send:
    notifications only)."""
    if isinstance(body, list):
        if not body:
            return rpc_error(None, INVALID_REQUEST, "Invalid Request: an empty batch")
        if len(body) > MAX_BATCH:
            return rpc_error(
                None, INVALID_REQUEST, f"Invalid Request: a batch of {len(body)}; at most {MAX_BATCH}"
            )
        replies = [await rpc_one(server, request, caller, ws_handle) for request in body]
        return [r for r in replies if r is not None] or None
    return await rpc_one(server, body, caller, ws_handle)


async def rpc_one(
    server: Any, request: Any, caller: Caller, ws_handle: OpenEnvSession | None = None
) -> dict[str, Any] | None:
    """The response to one JSON-RPC request, or None for a notification (processed, never answered)."""
    if not isinstance(request, dict) or not valid_id(request):
        return rpc_error(
            None, INVALID_REQUEST, "Invalid Request: an object whose id is a string, number or null"
        )
    rid = request.get("id")
    extra = sorted(set(request) - REQUEST_MEMBERS)
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str) or extra:
        detail = f"unknown members {extra}" if extra else "needs jsonrpc '2.0' and a method name"
        return rpc_error(rid, INVALID_REQUEST, f"Invalid Request: {detail}")
    try:
        result = await _dispatch(server, request["method"], request.get("params", {}), caller, ws_handle)
    except RpcError as exc:
        response = rpc_error(rid, exc.code, exc.message)
    except RequestError as exc:
        response = rpc_error(rid, INVALID_PARAMS if exc.status == 400 else SERVER_ERROR, exc.message)
    else:
        response = {"jsonrpc": "2.0", "id": rid, "result": result}
    return response if "id" in request else None


async def _dispatch(
    server: Any, method: str, params: Any, caller: Caller, ws_handle: OpenEnvSession | None
) -> dict[str, Any]:
    import hivex_jax

    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    sessions: McpSessions = server.mcp_sessions
    if method == "initialize":
        version = params.get("protocolVersion")
        if not isinstance(version, str):
            raise RpcError(
                INVALID_PARAMS, f"initialize needs params.protocolVersion, one of {MCP_PROTOCOL_VERSIONS}"
            )
        return {
            "protocolVersion": version if version in MCP_PROTOCOL_VERSIONS else MCP_PROTOCOL_VERSIONS[-1],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hivex_jax", "version": hivex_jax.__version__},
        }
    if method.startswith("notifications/") or method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": mcp_tools(server.env_ids)}
    if method == "openenv/session/create":
        return {"session_id": sessions.create(caller)}
    if method == "openenv/session/close":
        key = params.get("session_id")
        await sessions.handle(key, caller).close()
        if isinstance(key, str):  # always: handle() answers a 404 for anything else
            sessions.handles.pop(key, None)
        return {"session_id": key, "closed": True}
    if method == "tools/call":
        return await call_tool(sessions, params, caller, ws_handle)
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method[:80]!r}")


async def call_tool(
    sessions: McpSessions, params: dict[str, Any], caller: Caller, ws_handle: OpenEnvSession | None
) -> dict[str, Any]:
    """Run tool `params["name"]` with `params["arguments"]` on the handle the call names (its
    `session_id`), else the /ws connection's own, else (reset) a new one; MCP's tool result."""
    name, arguments = params.get("name"), params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RequestError(400, "tools/call arguments must be an object")
    arguments = dict(arguments)
    key = arguments.pop("session_id", None) or params.get("session_id")
    if name == "reset":
        if key is not None:
            handle = sessions.handle(key, caller)
        else:
            handle = ws_handle if ws_handle is not None else OpenEnvSession(sessions.server, caller)
        payload = await handle.reset(arguments)
        payload["session_id"] = key if key in sessions.handles else handle.session_id
    elif name in TOOLS:
        handle = ws_handle if key is None and ws_handle is not None else sessions.handle(key, caller)
        if name == "step":
            if "action" not in arguments:
                raise RequestError(400, "step needs an 'action' (joint action keyed by agent id)")
            payload = await handle.step(arguments["action"])
        else:
            payload = await getattr(handle, name)()
    else:
        raise RequestError(400, f"unknown tool {str(name)[:80]!r}; tools are {', '.join(TOOLS)}")
    return {
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "structuredContent": payload,
        "isError": False,
        "data": payload,
    }


def tool_failure(name: str, kind: str, message: str) -> dict[str, Any]:
    """OpenEnv's `CallToolObservation` of a failed call (`ToolError`: error_type and message)."""
    error = {"error_type": kind, "message": message}
    return {"observation": {"tool_name": name, "result": None, "error": error}, "reward": None, "done": False}


def is_tool_step(data: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a /ws step's data is OpenEnv's MCP action (`list_tools` / `call_tool`), not a joint action
    (whose keys are agent ids, never `type`)."""
    return isinstance(data, dict) and data.get("type") in ("list_tools", "call_tool")


async def tool_step(
    server: Any, data: dict[str, Any], caller: Caller, handle: OpenEnvSession
) -> dict[str, Any]:
    """OpenEnv's reply data to an MCP action sent as a /ws step: `ListToolsObservation` (tools with
    `input_schema`) or `CallToolObservation` (tool_name, result, error); a step tool's reward and done."""
    if data["type"] == "list_tools":
        tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
            for t in mcp_tools(server.env_ids)
        ]
        return {"observation": {"tools": tools}, "reward": None, "done": False}
    name = data.get("tool_name")
    if not isinstance(name, str) or name not in TOOLS:
        message = f"unknown tool {str(name)[:80]!r}; tools are {', '.join(TOOLS)}"
        return tool_failure(str(name)[:80], "tool_not_found", message)
    try:
        params = {"name": name, "arguments": data.get("arguments")}
        result = await call_tool(server.mcp_sessions, params, caller, handle)
    except RequestError as exc:
        return tool_failure(name, "invalid_args" if exc.status == 400 else "execution_error", exc.message)
    payload = result["data"]
    stepped = name == "step"
    return {
        "observation": {"tool_name": name, "result": result, "error": None},
        "reward": payload.get("reward") if stepped else None,
        "done": bool(payload.get("done", False)) if stepped else False,
    }
