"""The HTTP app of `hivex serve` (FastAPI + uvicorn): the project's routes over `HivexServer`, OpenEnv's
(`hivex_jax.serve.openenv`), and the transport guard in front of them all (`hivex_jax.serve.guard`).

Routes (JSON in and out; docs/serve.md has the payloads): `GET /health`, `GET /metadata`, `GET /envs`,
`GET /envs/{env_id}`, `POST /reset`, `POST /step`, `GET /state/{session_id}`, `POST /grade/{session_id}`,
`DELETE /session/{session_id}`. Every refusal is a 4xx `{"detail": "<one line>"}` and the server keeps
serving. The request logic is in `hivex_jax.serve.server`, the batching in `hivex_jax.serve.batching`,
the grader in `hivex_jax.serve.grading`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hivex_jax.serve.config import Caller, ServeConfig, http_caller
from hivex_jax.serve.guard import MAX_JSON_DEPTH, TOKEN_INDEX, TransportGuard, json_depth
from hivex_jax.serve.openenv import OPENENV_API_VERSION, add_openenv_routes
from hivex_jax.serve.server import HivexServer
from hivex_jax.serve.sessions import RequestError

__all__ = ["HivexServer", "ServeConfig", "caller_of", "create_app"]

MAX_DETAIL = 300  # characters of a refusal's one-line detail


def caller_of(request: Any) -> Caller:
    """Who sent an HTTP `request`: its peer address (quotas) and owner (the token it presented, else the
    address; `TransportGuard` records which token)."""
    address = request.client.host if request.client else "unknown"
    return http_caller(address, request.scope.get(TOKEN_INDEX))


def create_app(config: ServeConfig | None = None, *, token: str | Sequence[str] | None = None) -> Any:
    """The FastAPI application serving `HivexServer(config)`; with `token` (one, or several: one per
    client), every route but /health needs one of them, as `Authorization: Bearer <token>` or as the
    password of HTTP Basic authentication (kept out of `config`, which /metadata shows)."""
    import hivex_jax

    config = config or ServeConfig()
    tokens = (token,) if isinstance(token, str) else tuple(token or ())
    server = HivexServer(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        async def sweep() -> None:
            while True:
                await asyncio.sleep(max(0.05, min(10.0, config.idle_timeout_s / 4)))
                await server.close_idle()

        task = asyncio.create_task(sweep())
        yield
        task.cancel()

    # info.version is the HTTP API's version (OpenEnv's 1.x standard); the package's is in /metadata
    app = FastAPI(title="hivex_jax", version=OPENENV_API_VERSION, lifespan=lifespan)
    app.state.server = server
    # outermost of the app's own middleware: Host, token and body limits are checked before any route
    app.add_middleware(
        TransportGuard,
        max_body_bytes=config.max_body_bytes,
        read_timeout_s=config.read_timeout_s,
        tokens=tokens,
        allowed_hosts=config.allowed_hosts,
        allowed_origins=config.allowed_origins,
        ws_idle_timeout_s=config.ws_idle_timeout_s,
        max_ws_per_client=config.max_ws_per_client,
        max_websockets=config.max_websockets,
    )

    def refuse(status: int, message: str) -> JSONResponse:
        detail = " ".join(str(message).split())  # one line, and short whatever the client sent
        if len(detail) > MAX_DETAIL:
            detail = detail[: MAX_DETAIL - 3] + "..."
        return JSONResponse({"detail": detail}, status_code=status)

    @app.exception_handler(RequestError)
    async def request_error(request: Request, exc: RequestError) -> JSONResponse:
        return refuse(exc.status, exc.message)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return refuse(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}")

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return refuse(400, "; ".join(str(e.get("msg", e)) for e in exc.errors()))

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await request.body()  # TransportGuard has read it under the size limit and deadline
        if len(raw) > config.max_body_bytes:
            raise RequestError(413, f"request body is {len(raw)} bytes; the limit is {config.max_body_bytes}")
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except RecursionError:
            raise RequestError(400, "malformed JSON: nested too deeply") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer over 4300 digits
            raise RequestError(400, f"malformed JSON: {exc}") from exc
        if json_depth(body) > MAX_JSON_DEPTH:
            raise RequestError(400, f"malformed JSON: nested deeper than {MAX_JSON_DEPTH} levels")
        if not isinstance(body, dict):
            raise RequestError(400, f"the body must be a JSON object; got {type(body).__name__}")
        return body

    # routes return JSONResponse themselves: FastAPI's jsonable_encoder walk of every nested list of a
    # step reply costs more than the batched step
    @app.get("/health")
    async def health() -> dict[str, Any]:
        pools = [
            {
                "env_id": key[0],
                "static_options": dict(key[1]),
                "slots": w.pool.capacity,
                "sessions": len(w.pool.sessions),
                "batches": w.batches,
                "session_steps": w.session_steps,
                "grading": w.grading,
            }
            for key, w in server.workers.items()
        ]
        return {"status": "healthy", "sessions": len(server.sessions), "pools": pools}

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return {
            "name": "hivex_jax",
            "version": hivex_jax.__version__,
            "description": "The five HIVEX ecological multi-agent environments, served over HTTP.",
            "envs": list(server.env_ids),
            "limits": dataclasses.asdict(config),
        }

    @app.get("/envs")
    async def envs() -> dict[str, Any]:
        return {"envs": list(server.env_ids)}

    @app.get("/envs/{env_id}")
    async def describe(env_id: str) -> JSONResponse:
        return JSONResponse(server.describe(env_id))

    @app.post("/reset")
    async def reset(request: Request) -> JSONResponse:
        return JSONResponse(await server.reset(await json_body(request), caller_of(request)))

    @app.post("/step")
    async def step(request: Request) -> JSONResponse:
        return JSONResponse(await server.step(await json_body(request), caller_of(request)))

    @app.get("/state/{session_id}")
    async def state(session_id: str, request: Request) -> JSONResponse:
        return JSONResponse(await server.state(session_id, caller_of(request)))

    @app.post("/grade/{session_id}")
    async def grade(session_id: str, request: Request) -> JSONResponse:
        return JSONResponse(await server.grade(session_id, caller_of(request)))

    @app.delete("/session/{session_id}")
    async def close(session_id: str, request: Request) -> dict[str, Any]:
        return await server.close(session_id, caller_of(request))

    add_openenv_routes(app, server, caller_of)  # /ws, /schema, GET /state, /mcp (docs/serve.md)
    return app
