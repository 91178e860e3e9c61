"""OpenEnv's protocol over `HivexServer` (docs/serve.md, "Use it from OpenEnv"): the `/ws` WebSocket that
OpenEnv's clients (`GenericEnvClient`, `EnvClient` subclasses, `MCPToolClient`) talk, `/schema`,
`GET /state`, and `POST /mcp` (`hivex_jax.serve.mcp`), so OpenEnv's code plays an env unchanged and
`openenv validate --url` passes. The episode handle and the single-agent replies are in
`hivex_jax.serve.openenv_session`; the project's own routes (/reset, /step, /state/{id}, ...) keep their
rich replies.

A /ws connection is a caller of its own: the sessions it opens (by `reset` messages or MCP tools sent over
it) belong to it, and it reaches no other caller's. Origin, token, connection caps and the idle timeout
are checked by `hivex_jax.serve.guard` before a message gets here.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from fastapi import Request, WebSocket  # module level: FastAPI resolves the routes' annotations here
from fastapi.responses import JSONResponse, Response

from hivex_jax.serve.config import Caller
from hivex_jax.serve.describe import schemas
from hivex_jax.serve.guard import MAX_JSON_DEPTH, json_depth
from hivex_jax.serve.mcp import (
    PARSE_ERROR,
    McpSessions,
    is_tool_step,
    rpc_error,
    rpc_one,
    rpc_reply,
    tool_step,
)
from hivex_jax.serve.openenv_session import OpenEnvSession
from hivex_jax.serve.sessions import RequestError

#: OpenEnv's HTTP API standard version: `openenv validate` reads a 1.x OpenAPI info.version as its profile
OPENENV_API_VERSION = "1.0.0"

# OpenEnv's WebSocket error codes (openenv.core.env_server.types.WSErrorCode)
INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR = "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR"
EXECUTION_ERROR, CAPACITY_REACHED, SESSION_ERROR = "EXECUTION_ERROR", "CAPACITY_REACHED", "SESSION_ERROR"


def ws_error(message: str, code: str) -> dict[str, Any]:
    """OpenEnv's WebSocket error reply (`WSErrorResponse`): one-line message and a `WSErrorCode`."""
    return {"type": "error", "data": {"message": " ".join(str(message).split())[:500], "code": code}}


def ws_code(exc: RequestError) -> str:
    """The `WSErrorCode` of a refusal: 429 is capacity, 403/404/409 the session, other 4xx validation."""
    if exc.status == 429:
        return CAPACITY_REACHED
    if exc.status in (403, 404, 409):
        return SESSION_ERROR
    return VALIDATION_ERROR


def parse_json(raw: str | bytes) -> Any:
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


async def ws_loop(websocket: Any, server: Any, caller: Caller) -> None:
    """Serve one /ws connection: OpenEnv's messages in, its observation/state/error replies out.

    Bad messages get an error reply and the connection stays open; `close` or a disconnect ends the
    episode and frees its slot."""
    from starlette.websockets import WebSocketDisconnect

    await websocket.accept()
    handle = OpenEnvSession(server, caller)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            if raw is None:
                raw = message.get("bytes") or b""
            try:
                request = parse_json(raw)
            except RequestError as exc:
                await websocket.send_json(ws_error(exc.message, INVALID_JSON))
                continue
            kind = request.get("type") if isinstance(request, dict) else None
            data = request.get("data", {}) if isinstance(request, dict) else None
            try:
                if kind == "reset":
                    reply = {"type": "observation", "data": await handle.reset(data or {})}
                elif kind == "step" and is_tool_step(data):  # OpenEnv's MCPToolClient, default mode
                    reply = {"type": "observation", "data": await tool_step(server, data, caller, handle)}
                elif kind == "step":
                    reply = {"type": "observation", "data": await handle.step(data)}
                elif kind == "state":
                    reply = {"type": "state", "data": await handle.state()}
                elif kind == "close":
                    break
                elif kind == "mcp":  # one JSON-RPC request; a notification gets no reply
                    response = await rpc_one(server, data, caller, handle)
                    if response is None:
                        continue
                    reply = {"type": "mcp", "data": response}
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


# ------------------------------------------------------------------------------------------------ routes
def add_openenv_routes(app: Any, server: Any, caller_of: Any) -> None:
    """Register /ws, /schema, GET /state and /mcp on `app` (the project's routes are untouched);
    `caller_of(request)` is an HTTP request's `Caller`."""
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
        env, _ = hivex_jax.make(server.check_env_id(env_id))
        return JSONResponse(schemas(env))

    @app.get("/state")
    async def state(request: Request, session_id: str | None = None) -> JSONResponse:
        if session_id is None:
            raise RequestError(
                400, "GET /state needs ?session_id= (OpenEnv clients read their episode's state over /ws)"
            )
        reply = await server.state(session_id, caller_of(request))
        return JSONResponse({"episode_id": session_id, "step_count": reply["step"], **reply})

    @app.post("/mcp")
    async def mcp(request: Request) -> Response:
        raw = await request.body()  # TransportGuard has read it under the size limit and deadline
        try:
            body = parse_json(raw) if raw.strip() else {}
        except RequestError as exc:
            return JSONResponse(rpc_error(None, PARSE_ERROR, f"Parse error: {exc.message}"))
        reply = await rpc_reply(server, body, caller_of(request))
        if reply is None:  # notifications only: accepted, nothing to answer (MCP's 202)
            return Response(status_code=202)
        return JSONResponse(reply)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        address = websocket.client.host if websocket.client else "unknown"
        # the connection is its own owner: its sessions are reachable through it alone
        await ws_loop(websocket, server, Caller(address, f"websocket {secrets.token_hex(8)}"))
