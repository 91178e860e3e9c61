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
import collections
import contextlib
import dataclasses
import json
import math
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
from hivex_jax.serve.sessions import RequestError, ScriptedGrader, Session, SessionPool, params_digest
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

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
    max_sessions_per_client: int | None = None  # sessions one client address may hold; None: max_sessions
    max_grade_steps: int = 5000  # scripted steps one grade plays at most (then marked incomplete)


def _numeric(value: Any) -> bool:
    """Whether `value` is a number or nested lists of numbers (JSON's true and false are not numbers)."""
    if isinstance(value, list):
        return all(_numeric(v) for v in value)
    return isinstance(value, NUMBER) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    """Whether every number in `value` (a number or nested lists of numbers) is a whole number."""
    if isinstance(value, list):
        return all(_whole(v) for v in value)
    return isinstance(value, int) or (math.isfinite(value) and value == int(value))


def _check_integer_options(env: Any, params: Any, options: Mapping[str, Any]) -> None:
    """A 400 for a fraction given to an integer EnvParams field: `make` casts 100.5 to 100 silently; a
    request gets told (non-finite and out-of-range values were refused by `make`'s bounds already)."""
    for name, value in options.items():
        field = env.level_field if name == "level" else name
        dtype = getattr(getattr(params, field or "", None), "dtype", None)
        if dtype is not None and np.issubdtype(dtype, np.integer) and not _whole(value):
            raise RequestError(400, f"option {name!r} is an integer field; got {_shown(value)}")


MAX_SHOWN = 80  # characters of a client's value quoted back in a refusal
MAX_DETAIL = 300  # characters of a refusal's one-line detail


def _shown(value: Any) -> str:
    """`repr(value)`, cut to `MAX_SHOWN` characters (an 8000-character id is not echoed back whole)."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class _Waiting:
    """A step request waiting for its batch."""

    def __init__(self, session: Session, action: dict[str, np.ndarray], future: asyncio.Future):
        self.session, self.action, self.future = session, action, future


class PoolWorker:
    """Collects a pool's step requests and steps each batch in one call (see the module docstring)."""

    def __init__(self, pool: SessionPool, window_s: float, key: tuple = ()):
        self.pool = pool
        self.key = key  # (env id, static options): the pool's name in `HivexServer.workers`
        self.window_s = window_s
        self.lock = asyncio.Lock()  # held around every change to the pool's device state
        self.waiting: list[_Waiting] = []
        self.arrived = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.batches = 0  # batched step calls made
        self.session_steps = 0  # session steps they advanced (session_steps / batches = mean batch size)
        self.last_used = time.monotonic()  # pools with no session are evicted least recently used first
        self.last_batch = -math.inf  # when a batch was last stepped (grades yield the CPU while recent)
        self.opening = 0  # resets between choosing this pool and holding their slot
        self.grading = 0  # scripted episodes being played on this pool's env

    @property
    def idle(self) -> bool:
        """Whether nothing uses the pool: no session, no reset, step or grade in progress (evictable)."""
        return not (self.pool.sessions or self.opening or self.waiting or self.grading)

    async def submit(self, session: Session, action: dict[str, np.ndarray]) -> dict[str, Any]:
        """Queue one step of `session`; resolves to its result row (or raises its `RequestError`)."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(_Waiting(session, action, future))
        self.arrived.set()
        self.last_used = time.monotonic()
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
                self.last_batch = time.monotonic()
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
            self.last_batch = time.monotonic()
            for w, row in zip(go, rows, strict=True):
                if not w.future.done():
                    w.future.set_result(row)


def _ended(session: Session) -> RequestError:
    return RequestError(
        409,
        f"session {session.session_id}: the episode ended at step {session.step}; "
        "POST /reset starts a new one",
    )


def _one_line(exc: BaseException) -> str:
    """An exception as one short line (its first line, at most 300 characters)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


#: reset options that are `make` options but not served: worlds from files or stress worlds (nothing from a
#: request reaches the file system) and the message channel (a wrapper the server's pools do not build)
NOT_SERVED_OPTIONS = ("world_files", "stress_worlds", *MESSAGE_OPTIONS)
GRADE_CACHE_SIZE = 4096  # scripted episodes kept: (pool, world seed, params, step cap) -> totals
GRADE_SLICE_S = 0.02  # a grade plays scripted steps in slices of about this long between batched steps


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
        self.building: dict[tuple, asyncio.Future] = {}  # pools being built (traced), by key
        self.reserved: dict[str, int] = {}  # per client: resets holding a place before their session opens
        self.grade_cache: collections.OrderedDict[tuple, dict[str, Any]] = collections.OrderedDict()
        self.grades_running: dict[tuple, asyncio.Future] = {}  # by cache key: one episode for all askers
        self.grading_clients: set[str] = set()  # clients with a grade being played (one each)
        self._grade_turn: asyncio.Lock | None = None  # one grade slice runs at a time, server-wide

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
            raise RequestError(404, f"unknown env_id {_shown(env_id)}; served: {', '.join(self.env_ids)}")
        return env_id

    def session(self, session_id: Any) -> Session:
        """The open session `session_id`, or a 404."""
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RequestError(
                404, f"unknown session_id {_shown(session_id)} (closed, timed out or never opened)"
            )
        session.touch()
        return session

    def _worker_of(self, session: Session) -> PoolWorker:
        worker = next((w for w in self.workers.values() if w.pool is session.pool), None)
        if worker is None:  # cannot happen while the session is open (pools with sessions are kept)
            raise RequestError(404, f"session {session.session_id} was closed")
        return worker

    @property
    def per_client_limit(self) -> int:
        """The most sessions one client (address) may hold (`max_sessions_per_client`, else all)."""
        return self.config.max_sessions_per_client or self.config.max_sessions

    # -------------------------------------------------------------------------------------- requests
    async def reset(self, body: Mapping[str, Any], client: str = "local") -> dict[str, Any]:
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
        not_served = sorted(set(options) & set(NOT_SERVED_OPTIONS))
        if not_served:
            raise RequestError(
                400,
                f"options {not_served} are not served: worlds from files, stress worlds and the message "
                "channel are in-process options of hivex_jax.make (docs/serve.md)",
            )
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
        try:  # make checks every option against its bounds (static ones included) before anything compiles
            env, params = hivex_jax.make(env_id, **options)
            params = env.variant_params(params, task=body.get("task"), level=body.get("level"))
            env.validate_params(params)
            _check_integer_options(env, params, options)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise RequestError(400, _one_line(exc)) from exc
        # the place is taken now, before anything awaits (compiling a pool takes seconds), and given back
        # if the reset fails: concurrent resets can never open more than the limits
        if len(self.sessions) + sum(self.reserved.values()) >= self.config.max_sessions:
            raise RequestError(429, f"the server holds its maximum of {self.config.max_sessions} sessions")
        held = sum(s.client == client for s in self.sessions.values()) + self.reserved.get(client, 0)
        if held >= self.per_client_limit:
            raise RequestError(
                429, f"client {client} holds its quota of {self.per_client_limit} sessions; close one first"
            )
        self.reserved[client] = self.reserved.get(client, 0) + 1
        try:
            worker = await self._worker(env_id, static)
            try:
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
                    client=client,
                )
                async with worker.lock:
                    obs = await asyncio.to_thread(worker.pool.open, session)
            finally:
                worker.opening -= 1
        finally:
            self.reserved[client] -= 1
            if not self.reserved[client]:
                del self.reserved[client]
        session.touch()  # the idle timeout counts from the end of the first reset (compiling included)
        self.sessions[session.session_id] = session
        return {
            "session_id": session.session_id,
            "observation": encode_observation(worker.pool.env, obs, encoding),
            "reward": None,
            "done": False,
            "info": self._session_info(session),
        }

    async def _worker(self, env_id: str, static: dict[str, Any]) -> PoolWorker:
        """The pool of `(env_id, static)`, built (off the event loop) if new; counts one reset opening."""
        key = (env_id, tuple(sorted((k, json.dumps(v)) for k, v in static.items())))
        while key not in self.workers:
            if key in self.building:  # another reset is building it: wait for that one
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.building[key])
                continue
            if len(self.workers) + len(self.building) >= self.config.max_pools:
                self._evict_pool()
            built = asyncio.get_running_loop().create_future()
            self.building[key] = built
            try:
                pool = await asyncio.to_thread(self._build_pool, env_id, static)
            except Exception as exc:
                built.set_exception(exc)
                built.exception()  # retrieved: waiters retry on their own
                if not static:
                    raise
                raise RequestError(400, f"{env_id} with options {static}: {_one_line(exc)}") from exc
            finally:
                del self.building[key]
            self.workers[key] = PoolWorker(pool, self.config.batch_window_s, key)
            built.set_result(None)
        worker = self.workers[key]
        worker.opening += 1
        worker.last_used = time.monotonic()
        return worker

    def _build_pool(self, env_id: str, static: dict[str, Any]) -> SessionPool:
        import hivex_jax

        env, params = hivex_jax.make(env_id, **static)
        limit = _power_of_two_at_least(self.config.max_sessions)
        return SessionPool(env, params, min(self.config.initial_slots, limit), limit)

    def _evict_pool(self) -> None:
        """Drop the least recently used pool that nothing uses (its compiled programs go with it)."""
        idle = [w for w in self.workers.values() if w.idle]
        if not idle:
            raise RequestError(
                429,
                f"the server holds {self.config.max_pools} compiled (env_id, static options) pools, each "
                "with open sessions; close sessions or use one of them",
            )
        del self.workers[min(idle, key=lambda w: w.last_used).key]

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
        row = await self._worker_of(session).submit(session, action)
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
        worker = self._worker_of(session)
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

    async def grade(self, session_id: str, client: str = "local") -> dict[str, Any]:
        """The episode's statistics and its return as a fraction of the scripted controller's return.

        The scripted episode plays at most `max_grade_steps` steps, in short slices between the pools'
        batched steps (never holding a pool); one grade per client at a time (429 otherwise); results
        are cached by (pool, world seed, params, step cap), so a repeated grade costs nothing."""
        session = self.session(session_id)
        worker = self._worker_of(session)
        out: dict[str, Any] = {"session_id": session.session_id, **self._session_info(session)}
        out["episode"] = episode = self._episode(session)
        grader = worker.pool.grader
        if grader is None:
            out["scripted"] = None
            out["fraction_of_scripted"] = None
            return out
        params = worker.pool.cast_params(session.params)
        cap = min(int(params.max_steps), self.config.max_grade_steps)
        key = (worker.key, session.world_seed, params_digest(params), cap)
        cached = key in self.grade_cache
        if cached:
            self.grade_cache.move_to_end(key)
            totals = self.grade_cache[key]
        else:
            running = self.grades_running.get(key)
            if running is None:  # a new scripted episode: this client's one grade in flight
                if client in self.grading_clients:
                    raise RequestError(
                        429, f"client {client} already has a grade running; one at a time per client"
                    )
                running = asyncio.ensure_future(self._play_scripted(worker, grader, params, session, cap))
                self.grading_clients.add(client)
                self.grades_running[key] = running

                def finished(task: asyncio.Future, key: tuple = key, client: str = client) -> None:
                    # even if the asking request was dropped: the grade counts until its episode ends
                    self.grading_clients.discard(client)
                    self.grades_running.pop(key, None)
                    if not task.cancelled() and task.exception() is None:
                        self.grade_cache[key] = task.result()
                        while len(self.grade_cache) > GRADE_CACHE_SIZE:
                            self.grade_cache.popitem(last=False)

                running.add_done_callback(finished)
            totals = await asyncio.shield(running)
        names = session.pool.env.reward_term_names
        scripted_return = float(np.mean(totals["return"]))
        out["scripted"] = {
            "length": int(totals["length"]),
            "return": scripted_return,
            "return_per_agent": to_json(totals["return"]),
            "reward_terms": {n: float(np.mean(totals["reward_terms"][:, k])) for k, n in enumerate(names)},
            "stats": {k: float(np.mean(v)) for k, v in totals["stats"].items()},
            "complete": totals["complete"],
            "step_cap": cap,
            "cached": cached,
        }
        # against a scripted episode cut at the step cap, or of return 0, there is no fraction
        comparable = totals["complete"] and scripted_return != 0
        out["fraction_of_scripted"] = episode["return"] / scripted_return if comparable else None
        return out

    async def _play_scripted(
        self, worker: PoolWorker, grader: ScriptedGrader, params: Any, session: Session, cap: int
    ) -> dict[str, Any]:
        """The scripted episode on `session`'s world, at most `cap` steps, in slices of about
        `GRADE_SLICE_S` (one slice at a time server-wide; while any pool is stepping, a grade waits as
        long as its slice took before the next, so steps keep at least half the time)."""
        if self._grade_turn is None:
            self._grade_turn = asyncio.Lock()
        worker.grading += 1
        try:
            async with self._grade_turn:
                carry = await asyncio.to_thread(grader.start, params, np.uint32(session.world_seed))
            length, done, slice_steps = 0, False, 1
            while not done and length < cap:
                async with self._grade_turn:
                    limit = min(length + slice_steps, cap)
                    carry, length, done, spent = await asyncio.to_thread(grader.play, carry, params, limit)
                if spent < GRADE_SLICE_S / 2:
                    slice_steps *= 2
                elif spent > GRADE_SLICE_S:
                    slice_steps = max(1, slice_steps // 2)
                now = time.monotonic()
                stepping = any(now - w.last_batch < 0.1 or w.waiting for w in self.workers.values())
                await asyncio.sleep(spent if stepping else 0)
            return {**grader.totals(carry), "complete": bool(done)}
        finally:
            worker.grading -= 1

    async def close(self, session_id: str) -> dict[str, Any]:
        """End a session and free its slot."""
        session = self.session(session_id)
        await self._close(session)
        return {"session_id": session.session_id, "closed": True, "length": session.step}

    async def _close(self, session: Session) -> None:
        worker = self._worker_of(session)
        async with worker.lock:
            session.pool.close(session)
        self.sessions.pop(session.session_id, None)

    async def close_idle(self) -> int:
        """Close every session idle longer than the idle timeout; how many were closed."""
        now = time.monotonic()
        idle = [s for s in self.sessions.values() if now - s.last_used > self.config.idle_timeout_s]
        for session in idle:
            if session.session_id in self.sessions:  # not closed by a request meanwhile
                await self._close(session)
        return len(idle)


def _client(request: Any) -> str:
    """Who sent `request`, for the per-client quotas: the peer's address."""
    return request.client.host if request.client else "unknown"


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

    from hivex_jax.serve.openenv import OPENENV_API_VERSION, add_openenv_routes

    # info.version is the HTTP API's version (OpenEnv's 1.x standard); the package's is in /metadata
    app = FastAPI(title="hivex_jax", version=OPENENV_API_VERSION, lifespan=lifespan)
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
        return JSONResponse(await server.reset(await json_body(request), client=_client(request)))

    @app.post("/step")
    async def step(request: Request) -> JSONResponse:
        return JSONResponse(await server.step(await json_body(request)))

    @app.get("/state/{session_id}")
    async def state(session_id: str) -> JSONResponse:
        return JSONResponse(await server.state(session_id))

    @app.post("/grade/{session_id}")
    async def grade(session_id: str, request: Request) -> JSONResponse:
        return JSONResponse(await server.grade(session_id, client=_client(request)))

    @app.delete("/session/{session_id}")
    async def close(session_id: str) -> dict[str, Any]:
        return await server.close(session_id)

    add_openenv_routes(app, server, _client)  # /ws, /schema, GET /state, /mcp (docs/serve.md)
    return app
