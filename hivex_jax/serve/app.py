"""The HTTP server of `hivex serve`: OpenEnv-style routes over `SessionPool`s (FastAPI + uvicorn).

Routes (JSON in and out; docs/serve.md has the payloads): `GET /health`, `GET /metadata`, `GET /envs`,
`GET /envs/{env_id}`, `POST /reset`, `POST /step`, `GET /state/{session_id}`, `POST /grade/{session_id}`,
`DELETE /session/{session_id}`. Every refusal is a 4xx `{"detail": "<one line>"}` and the server keeps
serving.

Batching: a step request is queued on its pool; the pool's worker takes the queue once every open
session of the pool has an action waiting or `batch_window_s` after the first arrival, whichever is
first, and steps that batch in one jitted call (`SessionPool.step`) on a worker thread. Requests only
choose registered env ids, task, level, world seed and EnvParams/static option values (numbers):
nothing from a request reaches the file system or is executed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hivex_jax.serve.codec import decode_action, encode_info, encode_observation, to_json
from hivex_jax.serve.guard import MAX_JSON_DEPTH, TransportGuard, json_depth
from hivex_jax.serve.sessions import RequestError, Session, SessionPool

NUMBER = (int, float)


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    """What `hivex serve` was started with (docs/serve.md documents each limit)."""

    max_sessions: int = 64  # open sessions over all envs; also the most slots one pool grows to
    idle_timeout_s: float = 600.0  # a session untouched this long is closed and its slot freed
    batch_window_s: float = 0.005  # how long the first step request of a batch waits for the others
    initial_slots: int = 16  # a pool's first slot count (doubles when full, up to max_sessions)
    max_pools: int = 8  # distinct (env id, static options) combinations, each its own compiled program
    max_body_bytes: int = 1 << 20  # a larger declared or streamed body is refused (413) while it is read
    read_timeout_s: float = 10.0  # a request's head, and then its body, must arrive within this (408)
    allowed_hosts: tuple[str, ...] | None = None  # Host header names accepted (DNS rebinding); None: any
    envs: tuple[str, ...] = ()  # the env ids served; empty = every registered id
    allow_static_options: bool = False  # reset options that change shapes (num_agents...): a pool each


def _numeric(value: Any) -> bool:
    """Whether `value` is a number (bools count) or nested lists of numbers."""
    if isinstance(value, list):
        return all(_numeric(v) for v in value)
    return isinstance(value, NUMBER)


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class _Waiting:
    """A step request waiting for its batch."""

    def __init__(self, session: Session, action: dict[str, np.ndarray], future: asyncio.Future):
        self.session, self.action, self.future = session, action, future


class PoolWorker:
    """Collects a pool's step requests and steps each batch in one call (see the module docstring)."""

    def __init__(self, pool: SessionPool, window_s: float):
        self.pool = pool
        self.window_s = window_s
        self.lock = asyncio.Lock()  # held around every change to the pool's device state
        self.waiting: list[_Waiting] = []
        self.arrived = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.batches = 0  # batched step calls made
        self.session_steps = 0  # session steps they advanced (session_steps / batches = mean batch size)

    async def submit(self, session: Session, action: dict[str, np.ndarray]) -> dict[str, Any]:
        """Queue one step of `session`; resolves to its result row (or raises its `RequestError`)."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(_Waiting(session, action, future))
        self.arrived.set()
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())
        return await future

    def _ready(self) -> bool:
        waiting = {w.session.session_id for w in self.waiting}
        live = {s.session_id for s in self.pool.sessions.values() if not s.done}
        return live <= waiting

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self.waiting:
            deadline = loop.time() + self.window_s
            while not self._ready() and (left := deadline - loop.time()) > 0:
                self.arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.arrived.wait(), left)
            batch, later, seen = [], [], set()
            for w in self.waiting:  # one action per session per batch; a second waits for the next
                (later if w.session.session_id in seen else batch).append(w)
                seen.add(w.session.session_id)
            self.waiting = later
            async with self.lock:
                go = []
                for w in batch:
                    if w.session.closed:
                        w.future.set_exception(
                            RequestError(404, f"session {w.session.session_id} was closed")
                        )
                    elif w.session.done:
                        w.future.set_exception(_ended(w.session))
                    else:
                        go.append(w)
                if not go:
                    continue
                try:
                    rows = await asyncio.to_thread(
                        self.pool.step, [w.session for w in go], [w.action for w in go]
                    )
                except Exception as exc:  # a bug: every waiting client hears of it, the server stays up
                    for w in go:
                        w.future.set_exception(exc)
                    continue
            self.batches += 1
            self.session_steps += len(go)
            for w, row in zip(go, rows, strict=True):
                if not w.future.done():
                    w.future.set_result(row)


def _ended(session: Session) -> RequestError:
    return RequestError(
        409,
        f"session {session.session_id}: the episode ended at step {session.step}; "
        "POST /reset starts a new one",
    )


class HivexServer:
    """Sessions, pools and the request logic behind the routes (no FastAPI here, so it reads plainly)."""

    def __init__(self, config: ServeConfig):
        import hivex_jax

        self.config = config
        self.env_ids = tuple(config.envs) or hivex_jax.registered_envs()
        unknown = sorted(set(self.env_ids) - set(hivex_jax.registered_envs()))
        if unknown:
            raise ValueError(f"unknown environment ids {unknown}; registered: {hivex_jax.registered_envs()}")
        self.sessions: dict[str, Session] = {}
        self.workers: dict[tuple, PoolWorker] = {}

    # ------------------------------------------------------------------------------------- describe
    def describe(self, env_id: str) -> dict[str, Any]:
        """What a client needs to act in `env_id`: agents, action and observation layout, tasks, levels."""
        import hivex_jax

        self._check_env_id(env_id)
        env, params = hivex_jax.make(env_id)
        space = env.observation_space()
        return {
            "env_id": env_id,
            "agent_ids": list(env.agent_ids),
            "action": {"continuous": env.continuous_dims, "discrete_branches": list(env.discrete_branches)},
            "observation": {
                "vector_size": int(space["vector"].shape[-1]),
                "fields": {k: [v.start, v.stop] for k, v in env.observation_layout().items()},
                "visual_shape": list(space["visual"].shape[1:]) if "visual" in space.spaces else None,
            },
            "tasks": list(env.task_ids),
            "level_field": env.level_field,
            "levels": list(env.level_values),
            "reward_terms": list(env.reward_term_names),
            "max_steps": int(params.max_steps),
        }

    def _check_env_id(self, env_id: Any) -> str:
        if not isinstance(env_id, str) or env_id not in self.env_ids:
            raise RequestError(404, f"unknown env_id {env_id!r}; served: {', '.join(self.env_ids)}")
        return env_id

    def session(self, session_id: Any) -> Session:
        """The open session `session_id`, or a 404."""
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RequestError(404, f"unknown session_id {session_id!r} (closed, timed out or never opened)")
        session.touch()
        return session

    # -------------------------------------------------------------------------------------- requests
    async def reset(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Open a session: `{env_id, task?, level?, world_seed? (or seed), options?, visual_encoding?}`."""
        import hivex_jax
        from hivex_jax.core.registry import spec

        known = {"env_id", "task", "level", "world_seed", "seed", "options", "visual_encoding", "episode_id"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise RequestError(400, f"unknown reset fields {unknown}; fields are {sorted(known)}")
        env_id = self._check_env_id(body.get("env_id"))
        world_seed = body.get("world_seed", body.get("seed", 0))
        if isinstance(world_seed, bool) or not isinstance(world_seed, int) or not 0 <= world_seed < 2**32:
            raise RequestError(400, f"world_seed must be an integer in [0, 2**32); got {world_seed!r}")
        encoding = body.get("visual_encoding", "list")
        if encoding not in ("list", "base64"):
            raise RequestError(400, f"visual_encoding must be 'list' or 'base64'; got {encoding!r}")
        options = body.get("options", {})
        if not isinstance(options, Mapping):
            raise RequestError(400, f"options must be an object of option: value; got {options!r}")
        for name, value in options.items():
            if not _numeric(value):
                raise RequestError(
                    400, f"option {name!r} must be a number (or nested lists of numbers); got {value!r}"
                )
        for name in ("task", "level"):
            value = body.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise RequestError(400, f"{name} must be an integer; got {value!r}")
        static_names = set(getattr(spec(env_id).factory(), "static_options", ()))
        static = {k: v for k, v in options.items() if k in static_names}
        if static and not self.config.allow_static_options:
            raise RequestError(
                400,
                f"options {sorted(static)} change array shapes (a new compiled program each); "
                "the server accepts them only when started with --allow-static-options",
            )
        try:
            env, params = hivex_jax.make(env_id, **options)
            params = env.variant_params(params, task=body.get("task"), level=body.get("level"))
            env.validate_params(params)
        except (KeyError, TypeError, ValueError) as exc:
            raise RequestError(400, str(exc)) from exc
        if len(self.sessions) >= self.config.max_sessions:
            raise RequestError(429, f"the server holds its maximum of {self.config.max_sessions} sessions")
        worker = self._worker(env_id, static)
        session = Session(
            session_id=secrets.token_hex(8),
            pool=worker.pool,
            slot=-1,
            env_id=env_id,
            world_seed=world_seed,
            task=int(params.task),
            level=None if env.level_field is None else int(getattr(params, env.level_field)),
            options=dict(options),
            params=params,
            visual_encoding=encoding,
        )
        async with worker.lock:
            obs = await asyncio.to_thread(worker.pool.open, session)
        self.sessions[session.session_id] = session
        return {
            "session_id": session.session_id,
            "observation": encode_observation(worker.pool.env, obs, encoding),
            "reward": None,
            "done": False,
            "info": self._session_info(session),
        }

    def _worker(self, env_id: str, static: dict[str, Any]) -> PoolWorker:
        import hivex_jax

        key = (env_id, tuple(sorted((k, json.dumps(v)) for k, v in static.items())))
        if key not in self.workers:
            if len(self.workers) >= self.config.max_pools:
                raise RequestError(
                    429,
                    f"the server already compiled {self.config.max_pools} (env_id, static options) "
                    "combinations; use one of them",
                )
            env, params = hivex_jax.make(env_id, **static)
            limit = _power_of_two_at_least(self.config.max_sessions)
            pool = SessionPool(env, params, min(self.config.initial_slots, limit), limit)
            self.workers[key] = PoolWorker(pool, self.config.batch_window_s)
        return self.workers[key]

    def _session_info(self, session: Session) -> dict[str, Any]:
        return {
            "env_id": session.env_id,
            "task": session.task,
            "level": session.level,
            "world_seed": session.world_seed,
            "step": session.step,
            "agent_ids": list(session.pool.env.agent_ids),
        }

    async def step(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One decision of a session: `{session_id, action}` -> observation, rewards, ends, info."""
        unknown = sorted(set(body) - {"session_id", "action", "request_id", "timeout_s"})
        if unknown:
            raise RequestError(400, f"unknown step fields {unknown}; fields are session_id, action")
        session = self.session(body.get("session_id"))
        if session.done:
            raise _ended(session)
        if "action" not in body:
            raise RequestError(400, "step needs an 'action'")
        env = session.pool.env
        action = decode_action(env, body["action"])
        worker = next(w for w in self.workers.values() if w.pool is session.pool)
        row = await worker.submit(session, action)
        info = encode_info(env, row["info"])
        info["step"] = session.step
        return {
            "observation": encode_observation(env, row["obs"], session.visual_encoding),
            "reward": to_json(row["reward"]),
            "terminated": to_json(row["terminated"]),
            "truncated": to_json(row["truncated"]),
            "done": session.done,
            "info": info,
        }

    async def state(self, session_id: str) -> dict[str, Any]:
        """Everything about a session, what agents do not observe included (for graders)."""
        session = self.session(session_id)
        worker = next(w for w in self.workers.values() if w.pool is session.pool)
        async with worker.lock:
            state = await asyncio.to_thread(session.pool.state_of, session)
        return {
            "session_id": session.session_id,
            **self._session_info(session),
            "done": session.done,
            "options": session.options,
            "params": to_json(session.params),
            "state": to_json(state),
            "episode": self._episode(session),
        }

    def _episode(self, session: Session) -> dict[str, Any]:
        names = session.pool.env.reward_term_names
        return {
            "length": session.step,
            "done": session.done,
            "return": float(np.mean(session.returns)),
            "return_per_agent": to_json(session.returns),
            "reward_terms": {n: float(np.mean(session.reward_terms[:, k])) for k, n in enumerate(names)},
            "stats": {k: float(np.mean(v)) for k, v in session.stats.items()},
        }

    async def grade(self, session_id: str) -> dict[str, Any]:
        """The episode's statistics and its return as a fraction of the scripted controller's return."""
        session = self.session(session_id)
        worker = next(w for w in self.workers.values() if w.pool is session.pool)
        async with worker.lock:
            totals = await asyncio.to_thread(session.pool.scripted_totals, session)
        episode = self._episode(session)
        out: dict[str, Any] = {"session_id": session.session_id, **self._session_info(session)}
        out["episode"] = episode
        if totals is None:
            out["scripted"] = None
            out["fraction_of_scripted"] = None
            return out
        names = session.pool.env.reward_term_names
        scripted_return = float(np.mean(totals["return"]))
        out["scripted"] = {
            "length": int(totals["length"]),
            "return": scripted_return,
            "return_per_agent": to_json(totals["return"]),
            "reward_terms": {n: float(np.mean(totals["reward_terms"][:, k])) for k, n in enumerate(names)},
            "stats": {k: float(np.mean(v)) for k, v in totals["stats"].items()},
        }
        out["fraction_of_scripted"] = episode["return"] / scripted_return if scripted_return else None
        return out

    async def close(self, session_id: str) -> dict[str, Any]:
        """End a session and free its slot."""
        session = self.session(session_id)
        await self._close(session)
        return {"session_id": session.session_id, "closed": True, "length": session.step}

    async def _close(self, session: Session) -> None:
        worker = next(w for w in self.workers.values() if w.pool is session.pool)
        async with worker.lock:
            session.pool.close(session)
        self.sessions.pop(session.session_id, None)

    async def close_idle(self) -> int:
        """Close every session idle longer than the idle timeout; how many were closed."""
        now = time.monotonic()
        idle = [s for s in self.sessions.values() if now - s.last_used > self.config.idle_timeout_s]
        for session in idle:
            await self._close(session)
        return len(idle)


def create_app(config: ServeConfig | None = None, *, token: str | None = None) -> Any:
    """The FastAPI application serving `HivexServer(config)`; with `token`, every route but /health
    needs `Authorization: Bearer <token>` (kept out of `config`, which /metadata shows)."""
    import hivex_jax

    config = config or ServeConfig()
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

    app = FastAPI(title="hivex_jax", version=hivex_jax.__version__, lifespan=lifespan)
    app.state.server = server
    # outermost of the app's own middleware: Host, token and body limits are checked before any route
    app.add_middleware(
        TransportGuard,
        max_body_bytes=config.max_body_bytes,
        read_timeout_s=config.read_timeout_s,
        token=token,
        allowed_hosts=config.allowed_hosts,
    )

    def refuse(status: int, message: str) -> JSONResponse:
        return JSONResponse({"detail": " ".join(str(message).split())}, status_code=status)

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
        return JSONResponse(await server.reset(await json_body(request)))

    @app.post("/step")
    async def step(request: Request) -> JSONResponse:
        return JSONResponse(await server.step(await json_body(request)))

    @app.get("/state/{session_id}")
    async def state(session_id: str) -> JSONResponse:
        return JSONResponse(await server.state(session_id))

    @app.post("/grade/{session_id}")
    async def grade(session_id: str) -> JSONResponse:
        return JSONResponse(await server.grade(session_id))

    @app.delete("/session/{session_id}")
    async def close(session_id: str) -> dict[str, Any]:
        return await server.close(session_id)

    return app
