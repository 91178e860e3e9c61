"""The request logic of `hivex serve` (no FastAPI here, so it reads plainly): `HivexServer` opens, steps,
shows, grades and closes sessions over `SessionPool`s, each pool stepped in batches by its `PoolWorker`.

Requests only choose registered env ids, task, level, world seed and EnvParams/static option values
(numbers): nothing from a request reaches the file system or is executed. Every session belongs to the
caller that opened it (`Caller.owner`: its token, else its address; a WebSocket connection owns its own):
another caller's request naming it is refused (403). Unless the server was started to expose state,
`state` serves what the agent already knows, never the simulator state, and step keys carry a secret
salt per session (`hivex_jax.serve.sessions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import secrets
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from hivex_jax.serve.batching import PoolWorker, ended_error
from hivex_jax.serve.codec import decode_action, encode_info, encode_observation, to_json
from hivex_jax.serve.config import Caller, ServeConfig
from hivex_jax.serve.describe import describe_env
from hivex_jax.serve.grading import Grading, summary
from hivex_jax.serve.sessions import RequestError, Session, SessionPool
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

NUMBER = (int, float)
LOCAL = Caller("local", "local")  # in-process callers (tests, scripts): one owner


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
            raise RequestError(400, f"option {name!r} is an integer field; got {shown(value)}")


MAX_SHOWN = 80  # characters of a client's value quoted back in a refusal


def shown(value: Any) -> str:
    """`repr(value)`, cut to `MAX_SHOWN` characters (an 8000-character id is not echoed back whole)."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _one_line(exc: BaseException) -> str:
    """An exception as one short line (its first line, at most 300 characters)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


#: reset options that are `make` options but not served: worlds from files or stress worlds (nothing from a
#: request reaches the file system) and the message channel (a wrapper the server's pools do not build)
NOT_SERVED_OPTIONS = ("world_files", "stress_worlds", *MESSAGE_OPTIONS)


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
        self.grading = Grading(config.max_grade_steps, config.expose_state, lambda: self.workers.values())

    # ------------------------------------------------------------------------------------- describe
    def describe(self, env_id: str) -> dict[str, Any]:
        """What a client needs to act in `env_id`: agents, action and observation layout, tasks, levels."""
        return describe_env(self.check_env_id(env_id))

    def check_env_id(self, env_id: Any) -> str:
        if not isinstance(env_id, str) or env_id not in self.env_ids:
            raise RequestError(404, f"unknown env_id {shown(env_id)}; served: {', '.join(self.env_ids)}")
        return env_id

    def session(self, session_id: Any, caller: Caller = LOCAL) -> Session:
        """The open session `session_id` of `caller`: a 404 if there is none, a 403 if another owns it."""
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RequestError(
                404, f"unknown session_id {shown(session_id)} (closed, timed out or never opened)"
            )
        if session.owner != caller.owner:
            raise RequestError(
                403,
                f"session {session.session_id} belongs to another client: only the connection or token "
                "that opened it may use it",
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
    async def reset(self, body: Mapping[str, Any], caller: Caller = LOCAL) -> dict[str, Any]:
        """Open a session: `{env_id, task?, level?, world_seed? (or seed), options?, visual_encoding?}`."""
        import hivex_jax
        from hivex_jax.core.registry import spec

        known = {"env_id", "task", "level", "world_seed", "seed", "options", "visual_encoding", "episode_id"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise RequestError(400, f"unknown reset fields {unknown}; fields are {sorted(known)}")
        env_id = self.check_env_id(body.get("env_id"))
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
        client = caller.address
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
                    owner=caller.owner,
                    # hidden state: step keys no agent can compute from the seed it chose
                    secret=None if self.config.expose_state else (secrets.randbits(32), secrets.randbits(32)),
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

    async def step(self, body: Mapping[str, Any], caller: Caller = LOCAL) -> dict[str, Any]:
        """One decision of a session: `{session_id, action}` -> observation, rewards, ends, info."""
        unknown = sorted(set(body) - {"session_id", "action", "request_id", "timeout_s"})
        if unknown:
            raise RequestError(400, f"unknown step fields {unknown}; fields are session_id, action")
        session = self.session(body.get("session_id"), caller)
        if session.done:
            raise ended_error(session)
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

    async def state(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        """What the session's agent knows (its world, options, params and episode so far) and, on a
        server started with `expose_state`, the full simulator state, hidden parts included."""
        session = self.session(session_id, caller)
        out = {
            "session_id": session.session_id,
            **self._session_info(session),
            "done": session.done,
            "options": session.options,
            "params": to_json(session.params),
            "episode": self._episode(session),
            "state_exposed": self.config.expose_state,
        }
        if self.config.expose_state:
            worker = self._worker_of(session)
            async with worker.lock:
                out["state"] = to_json(await asyncio.to_thread(session.pool.state_of, session))
        return out

    def _episode(self, session: Session) -> dict[str, Any]:
        totals = {"return": session.returns, "length": session.step, "reward_terms": session.reward_terms}
        return {**summary({**totals, "stats": session.stats}, session.pool.env.reward_term_names),
                "done": session.done}  # fmt: skip

    async def grade(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        """The episode so far against the scripted and random episodes on its world, and its normalised
        score (`hivex_jax.serve.grading`; a 429 while the same client's previous grade is being played)."""
        session = self.session(session_id, caller)
        worker = self._worker_of(session)
        out: dict[str, Any] = {"session_id": session.session_id, **self._session_info(session)}
        out["episode"] = self._episode(session)
        out.update(await self.grading.grade(worker, session, caller.address, out["episode"]["return"]))
        return out

    async def close(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        """End a session and free its slot."""
        session = self.session(session_id, caller)
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
