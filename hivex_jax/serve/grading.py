"""The grader behind `POST /grade/{session}`: the session's episode against the env's scripted controller
and the uniform random policy, both played on the session's world, task, level and options
(`hivex_jax.serve.reference_episodes`), scored by the project's one normalised score
(`hivex_jax.eval.score`): `(R - R_random) / (R_scripted - R_random)`, none where scripted does not beat
random.

A grade's cost is bounded and it never holds up steps: each reference episode plays at most
`max_grade_steps` steps, in slices of about `GRADE_SLICE_S` on a worker thread without the pool's lock,
one slice at a time server-wide, pausing as long as its last slice took while any pool is stepping; one
grade per client at a time (a second is a 429); a grade of the same (pool, world, params, step cap) being
played is joined; results are cached (`GRADE_CACHE_SIZE` most recently used).

Keys: the reference episodes use the public in-process step keys of the world when the server exposes its
state, and otherwise the world's keys folded with a secret of this grader (drawn at start), so no agent can
compute them, and every session on a world is graded against the same cached references.
"""

from __future__ import annotations

import asyncio
import collections
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from hivex_jax.eval.rollout import find_scripted_policy
from hivex_jax.eval.score import (
    DEFINITION,
    SCRIPTED_NOT_ABOVE_RANDOM,
    SCRIPTED_NOT_POSITIVE,
    as_json,
    fraction_of_scripted,
    normalised_score,
)
from hivex_jax.serve.batching import PoolWorker
from hivex_jax.serve.codec import to_json
from hivex_jax.serve.reference_episodes import POLICIES, ReferenceEpisodes
from hivex_jax.serve.sessions import RequestError, Session, params_digest, secret_words

GRADE_CACHE_SIZE = 4096  # reference episodes kept: (pool, world seed, params, step cap) -> totals
GRADE_SLICE_S = 0.02  # a grade plays reference steps in slices of about this long between batched steps
NO_SCRIPTED = "the env has no scripted controller: no score"


def summary(totals: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """An episode's totals (per agent, summed over steps) as the grade's JSON: `return` is the mean over
    agents, reward terms and statistics too."""
    return {
        "length": int(totals["length"]),
        "return": float(np.mean(totals["return"])),
        "return_per_agent": to_json(totals["return"]),
        "reward_terms": {
            n: float(np.mean(np.asarray(totals["reward_terms"])[:, k])) for k, n in enumerate(names)
        },
        "stats": {k: float(np.mean(v)) for k, v in totals["stats"].items()},
    }


def scores(episode_return: float, scripted: dict[str, Any], random: dict[str, Any]) -> dict[str, Any]:
    """The grade's scores: `normalised_score`, `fraction_of_scripted` (each None where it means nothing)
    and `notes` saying why one is None."""
    if not (scripted["complete"] and random["complete"]):
        cap = scripted["step_cap"]
        note = f"the reference episodes were cut at the step cap of {cap} steps: no score"
        return {"normalised_score": None, "fraction_of_scripted": None, "notes": [note]}
    score = as_json(normalised_score(episode_return, scripted["return"], random["return"]))
    fraction = as_json(fraction_of_scripted(episode_return, scripted["return"]))
    notes = [SCRIPTED_NOT_ABOVE_RANDOM] * (score is None) + [SCRIPTED_NOT_POSITIVE] * (fraction is None)
    return {"normalised_score": score, "fraction_of_scripted": fraction, "notes": notes}


class Grading:
    """Reference episodes played, joined and cached for the grades of one server."""

    def __init__(self, max_grade_steps: int, expose_state: bool, workers: Callable[[], Iterable[PoolWorker]]):
        self.max_grade_steps = max_grade_steps
        self.workers = workers  # every pool's worker now: a grade pauses while any of them is stepping
        self.secret = None if expose_state else (secrets.randbits(32), secrets.randbits(32))
        self.cache: collections.OrderedDict[tuple, dict[str, Any]] = collections.OrderedDict()
        self.running: dict[tuple, asyncio.Future] = {}  # by cache key: one play for every asker
        self.clients: set[str] = set()  # client addresses with a grade being played (one each)
        self._turn: asyncio.Lock | None = None  # one slice runs at a time, server-wide

    async def grade(self, worker: PoolWorker, session: Session, client: str, episode_return: float) -> dict:
        """The references and scores of `session` (whose episode so far returned `episode_return`)."""
        env = session.pool.env
        if find_scripted_policy(env) is None:
            return {"scripted": None, "random": None, "normalised_score": None, "fraction_of_scripted": None,
                    "notes": [NO_SCRIPTED], "score_definition": DEFINITION}  # fmt: skip
        if worker.references is None:
            worker.references = ReferenceEpisodes(env)
        params = worker.pool.cast_params(session.params)
        cap = min(int(params.max_steps), self.max_grade_steps)
        key = (worker.key, session.world_seed, params_digest(params), cap)
        cached = key in self.cache
        if cached:
            self.cache.move_to_end(key)
            played = self.cache[key]
        else:
            played = await self._join_or_play(key, worker, params, session.world_seed, cap, client)
        names = env.reward_term_names
        references = {
            name: {**summary(played[name], names), "complete": played[name]["complete"], "step_cap": cap,
                   "cached": cached}
            for name in POLICIES
        }  # fmt: skip
        return {
            **references,
            **scores(episode_return, references["scripted"], references["random"]),
            "score_definition": DEFINITION,
        }

    async def _join_or_play(
        self, key: tuple, worker: PoolWorker, params: Any, world_seed: int, cap: int, client: str
    ) -> dict[str, Any]:
        running = self.running.get(key)
        if running is None:  # a new play: this client's one grade in flight
            if client in self.clients:
                raise RequestError(
                    429, f"client {client} already has a grade running; one at a time per client"
                )
            running = asyncio.ensure_future(self._play(worker, params, world_seed, cap))
            self.clients.add(client)
            self.running[key] = running

            def finished(task: asyncio.Future, key: tuple = key, client: str = client) -> None:
                # even if the asking request was dropped: the grade counts until its episodes end
                self.clients.discard(client)
                self.running.pop(key, None)
                if not task.cancelled() and task.exception() is None:
                    self.cache[key] = task.result()
                    while len(self.cache) > GRADE_CACHE_SIZE:
                        self.cache.popitem(last=False)

            running.add_done_callback(finished)
        return await asyncio.shield(running)

    async def _play(self, worker: PoolWorker, params: Any, world_seed: int, cap: int) -> dict[str, Any]:
        """Each reference episode on `world_seed`, at most `cap` steps, in slices of about
        `GRADE_SLICE_S` (one slice at a time server-wide; while any pool is stepping, a grade waits as
        long as its slice took before the next, so steps keep at least half the time)."""
        if self._turn is None:
            self._turn = asyncio.Lock()
        references: ReferenceEpisodes = worker.references
        secret, salted = secret_words(self.secret)
        worker.grading += 1
        try:
            played = {}
            for name in POLICIES:
                async with self._turn:
                    carry = await asyncio.to_thread(
                        references.start, params, np.uint32(world_seed), secret, salted
                    )
                length, done, slice_steps = 0, False, 1
                while not done and length < cap:
                    async with self._turn:
                        limit = min(length + slice_steps, cap)
                        carry, length, done, spent = await asyncio.to_thread(
                            references.play, name, carry, params, limit
                        )
                    if spent < GRADE_SLICE_S / 2:
                        slice_steps *= 2
                    elif spent > GRADE_SLICE_S:
                        slice_steps = max(1, slice_steps // 2)
                    now = time.monotonic()
                    stepping = any(now - w.last_batch < 0.1 or w.waiting for w in self.workers())
                    await asyncio.sleep(spent if stepping else 0)
                played[name] = {**references.totals(carry), "complete": bool(done)}
            return played
        finally:
            worker.grading -= 1
