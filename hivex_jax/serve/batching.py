"""Batching of step requests: a `PoolWorker` queues one pool's step requests and steps each batch in one
jitted call (`SessionPool.step`) on a worker thread, once every open session of the pool has an action
waiting or `window_s` after the first arrival, whichever is first."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import Any

import numpy as np

from hivex_jax.serve.sessions import RequestError, Session, SessionPool


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
        self.grading = 0  # grades' reference episodes being played on this pool's env
        self.references: Any = None  # the grade's `ReferenceEpisodes` of this env, built on the first grade

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
                        w.future.set_exception(ended_error(w.session))
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


def ended_error(session: Session) -> RequestError:
    """The 409 of a step after `session`'s episode ended."""
    return RequestError(
        409,
        f"session {session.session_id}: the episode ended at step {session.step}; "
        "POST /reset starts a new one",
    )
