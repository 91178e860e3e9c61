"""Helper processes on the CPU cores a run leaves idle (`cpu_helpers`): the training computes on one core
(`PJRT_NPROC=1`), so on a CPU the run hands some of its seeds' updates and of its held-out evaluation to
processes of its own. Each helper rebuilds the run's population and evaluation from the config (the same
programs), plays the baselines (the last helper, at its start), trains its share of each chunk with the
run's own compiled program (`baselines.run.split_training`) and plays a part of the trained policy's
rows when asked.

Seeds train in turn on one CPU device (`seeds_in_turn`) and the trained rows play in turn (`rows_in_turn`),
so a seed's or a row's numbers do not depend on which rows share its program: a part computed here or in
a helper is the same bit for bit (tests/baselines/test_helpers.py). Threads would not be: XLA's CPU backend
with a thread pool of two rounds differently, and risks jaxlib 0.10's LAPACK deadlock. A helper that is not
ready, fails or dies costs time only: its part is computed in this process, with one line.
"""

from __future__ import annotations

import multiprocessing
import os
import weakref
from collections.abc import Callable, Sequence
from itertools import pairwise
from multiprocessing.connection import wait as wait_for
from typing import Any

import jax
import numpy as np
from jax.experimental import serialize_executable

from baselines.config import PPOConfig
from baselines.run.helper_process import Mailbox, one_row_at_a_time, registered_spec, serve
from baselines.run.split_training import SplitTraining, part_sizes, piece_updates

#: world-steps of trained rows (rows x worlds x episode steps) from which `cpu_helpers: null` starts
#: helpers: the shipped camera configs play 192 episodes of thousands of steps (AWS: 576,000), a test's
#: tiny config a few hundred
AUTO_MIN_STEPS = 50_000

#: seconds `close` waits for a helper to leave before it is terminated
CLOSE_TIMEOUT_S = 10.0


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def own_setting(evaluation: Any, population: Any) -> bool:
    """Whether `evaluation` plays the population's own env (what a helper rebuilds from the config), not
    another setting's (transfer, stress worlds) or a stack of env params."""
    return evaluation.train is population.train and evaluation.params_stack is None


def shares_rows(evaluation: Any, population: Any) -> bool:
    """Whether helpers may play some of `evaluation`'s trained rows: its own setting's, played in turn."""
    return own_setting(evaluation, population) and bool(evaluation.trained.in_turn)


def helper_count(config: PPOConfig, evaluation: Any, population: Any) -> int:
    """How many helpers a run gets: `cpu_helpers`, or (None) one per idle core where the evaluation's
    trained rows (`shares_rows`) make `AUTO_MIN_STEPS` world-steps; 0 unless the seeds train in turn on one
    CPU device of a single process. Never more than the seeds (or those rows, if more) less one."""
    if config.cpu_helpers == 0 or jax.process_count() > 1 or not population.in_turn:
        return 0
    rows = 2 * config.num_seeds if shares_rows(evaluation, population) else 0
    if (
        config.cpu_helpers is None
        and rows * len(evaluation.worlds) * evaluation.trained.num_steps < AUTO_MIN_STEPS
    ):
        return 0  # a helper's start (jax, the env, its programs) would outlast its part
    wanted = usable_cores() - 1 if config.cpu_helpers is None else config.cpu_helpers
    return max(0, min(wanted, max(rows, config.num_seeds) - 1))


def with_helpers(
    evaluation: Any, population: Any, config: PPOConfig, log: Callable[[str], Any]
) -> tuple[Any, Any]:
    """`(evaluation, trainer)`: with `helper_count` helpers, a copy of `evaluation` that shares its plays
    with them and a `SplitTraining` of `population` (where it has seeds to share: pieces of the chunk in
    each process, `baselines.run.split_training`); else both as given.
    The helpers end when both are collected (a run's, when it returns) or at exit."""
    count = helper_count(config, evaluation, population)
    if count == 0:
        return evaluation, population
    processes = min(count + 1, config.num_seeds)  # those that train: at most one per seed
    updates = piece_updates(config.num_seeds, processes, config.chunk_updates)
    trains = [updates if i + 1 < processes else 0 for i in range(count)]
    own = own_setting(evaluation, population)
    helpers = Helpers(config, evaluation.worlds, count, trains, log, shares_rows(evaluation, population), own)
    helped = evaluation
    if own:  # a copy: the cached evaluation stays without helpers
        helped = evaluation.on(evaluation.worlds)
        helped.helpers = helpers
    trainer = SplitTraining(population, helpers, processes) if processes > 1 else population
    shared = (
        "the baselines and the trained rows"
        if helpers.share_rows
        else "the baselines"
        if own
        else "no evaluation"
    )
    seeds = "all here"
    if processes > 1:
        loads = " + ".join(f"{load:g}" for load in trainer.loads())
        seeds = f"{loads} in programs of {updates} update{'s' * (updates != 1)}"
    log(f"cpu_helpers: {count} process(es) beside this one: seeds {seeds}; {shared}")
    return helped, trainer


def split_rows(tree: Any, sizes: Sequence[int]) -> list[Any]:
    """`tree`'s leading rows in contiguous parts of `sizes`."""
    cuts = np.cumsum([0, *sizes])
    return [jax.tree.map(lambda x, a=a, b=b: x[a:b], tree) for a, b in pairwise(cuts)]


class Helpers:
    """`count` helper processes of one run; helper i loads this process's program of `piece_updates[i]`
    updates of one seed row (`send_program`; 0 or past the list: it trains nothing) and runs it on the rows
    `send_training` sends.
    `play(rows, local)` shares a trained-policy call; `baselines()` is the last helper's play of them, at
    its start (while this process compiles)."""

    def __init__(
        self,
        config: PPOConfig,
        worlds: Any,
        count: int,
        piece_updates: Sequence[int] = (),
        log: Callable[[str], Any] = print,
        share_rows: bool = True,
        share_baselines: bool = True,
    ):
        self.log = log
        self.share_rows = share_rows  # False: `play` plays every row here (vmapped rows: their own bits)
        self.worlds = np.asarray(worlds)
        self.failed: str | None = None
        self.parts_played = 0  # row parts the helpers played (tests: the split happened)
        self._ready = [False] * count
        self.share_baselines = share_baselines
        self._baselines: dict[str, Any] | None = None
        self._eval_program: Any = None  # a helper's one-row evaluation program, serialised, until loaded
        updates = list(piece_updates) + [0] * (count - len(piece_updates))
        self._trains = [u > 0 for u in updates]  # these wait for `send_program`
        context = multiprocessing.get_context("spawn")  # a fork would copy jax's threads
        cache = jax.config.jax_compilation_cache_dir
        spec = registered_spec(config.env_id)
        self._mailboxes: list[Mailbox] = []
        self._processes: list[Any] = []
        for i in range(count):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=serve,
                args=(
                    config.to_dict(),
                    [int(w) for w in worlds],
                    i == count - 1 and share_baselines,
                    share_rows,
                    updates[i],
                    cache,
                    spec,
                    theirs,
                ),
                name=f"hivex-helper-{i}",
                daemon=True,  # ends with this process whatever happens
            )
            process.start()
            theirs.close()
            self._mailboxes.append(Mailbox(mine))
            self._processes.append(process)
        # closed when collected (a run's evaluation is, when the run returns) or at exit, whatever happened
        self._finalizer = weakref.finalize(self, _stop, self._mailboxes, self._processes)

    # ------------------------------------------------------------------------------- messages
    def _take(self, i: int, message: tuple) -> tuple:
        """Record a helper's message; returns it."""
        kind = message[0]
        if kind == "ready":
            self._ready[i] = True
        elif kind == "baselines":
            self._baselines = message[1]
        elif kind == "eval_program" and message[1] is not None and self._eval_program is None:
            self._eval_program = message[1]
        elif kind == "error":
            self._fail(f"cpu helper {i} failed: {message[1]}")
        return message

    def _fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason
            self.log(f"{reason}; its work runs in this process")

    def _poll(self) -> None:
        """Read what the helpers have sent so far, without waiting."""
        for i, mailbox in enumerate(self._mailboxes):
            try:
                while self.failed is None and mailbox.poll():
                    self._take(i, mailbox.recv())
            except (EOFError, OSError):
                self._fail(f"cpu helper {i} ended")

    def _await(self, i: int, kind: str) -> Any:
        """Wait for helper i's next `kind` message (recording others on the way); None if it failed."""
        mailbox = self._mailboxes[i]
        while self.failed is None:
            try:
                message = self._take(i, mailbox.recv())
            except (EOFError, OSError):
                self._fail(f"cpu helper {i} ended")
                break
            if message[0] == kind:
                return message[1]
        return None

    def _send(self, i: int, message: tuple) -> bool:
        """Queue `message` for helper i (a helper that has gone shows when its answer is awaited)."""
        self._mailboxes[i].send(message)
        return self.failed is None

    # --------------------------------------------------------------------------------- service
    def ready(self) -> bool:
        """Whether every helper is built and none has failed (reading only until all are: afterwards
        their answers are read where they are awaited)."""
        if not all(self._ready):
            self._poll()
        return self.failed is None and all(self._ready)

    def wait(self) -> bool:
        """Wait until every helper is built or one has failed; whether all are ready."""
        for i, ready in enumerate(self._ready):
            if not ready and self.failed is None:
                self._await(i, "ready")
        return self.ready()

    def send_training(self, i: int, row: Any, runs: int) -> bool:
        """Queue helper i `runs` of its program on `row` (one seed row of the population state; its answer
        comes from `trained_parts`); False if a helper has failed."""
        return self.failed is None and self._send(i, ("train", (jax.device_get(row), runs)))

    def trained_parts(self, helpers: Sequence[int], block: bool) -> list[tuple[int, Any]] | None:
        """The `(i, (row, metrics))` that helpers `helpers` have sent back since the last call, in the order
        sent (with `block`, waiting for one at least); None once a helper has failed."""
        got: list[tuple[int, Any]] = []
        while self.failed is None:
            for i in helpers:
                try:
                    while self.failed is None and self._mailboxes[i].poll():
                        message = self._take(i, self._mailboxes[i].recv())
                        if message[0] == "trained":
                            got.append((i, message[1]))
                except (EOFError, OSError):
                    self._fail(f"cpu helper {i} ended")
            if got or not block or not helpers:
                break
            wait_for([self._mailboxes[i].connection for i in helpers])
        return got if self.failed is None else None

    def split(self, evaluation: Any) -> Callable[[Any], Any]:
        """`evaluation.play_trained` (totals `[P, ...]` of policy rows `[P, ...]`) shared with the helpers
        (`play`); its evaluator first loads the one-row program a helper compiled, if one has come (each
        helper sends it before "ready", so `ready` has read it once they all are)."""
        self.ready()
        if self._eval_program is not None:
            try:
                evaluation.trained.load(serialize_executable.deserialize_and_load(*self._eval_program))
            except Exception:  # noqa: BLE001 (it compiles its own, as without helpers)
                pass
            self._eval_program = None
        return lambda rows: self.play(rows, evaluation.play_trained)

    def baselines_or(self, local: Callable[..., Any]) -> Callable[..., Any]:
        """The baselines' program `local(indices, worlds)`, or the first helper's totals of it when it
        plays them on these worlds."""

        def play(indices: Any, worlds: Any) -> Any:
            same = np.array_equal(np.asarray(worlds), self.worlds)
            totals = self.baselines() if same else None
            return local(indices, worlds) if totals is None else totals

        return play

    def send_program(self, program: Any) -> None:
        """Hand the helpers that train this process's compiled training program (`serialize_executable`'s
        `(payload, in_tree, out_tree)`; None: they compile it themselves)."""
        for i, trains in enumerate(self._trains):
            if trains:
                self._send(i, ("program", program))

    def play(self, rows: Any, local: Callable[[Any], Any]) -> Any:
        """`local(rows)` (totals `[P, ...]` of policy rows `[P, ...]`), its rows split into contiguous
        parts: the first played here, the others by the helpers, all at once, each a row at a time. Only
        `local` when the helpers are not all ready; a part whose helper fails is played here after the
        others."""
        count = len(jax.tree.leaves(rows)[0])
        if not self.share_rows or not self.ready() or count < 2:
            return local(rows)
        parts = split_rows(rows, part_sizes(count, len(self._mailboxes) + 1))
        helped = parts[1:]  # helper i plays helped[i]
        for i, part in enumerate(helped):
            self._send(i, ("play", jax.device_get(part)))
        totals = [one_row_at_a_time(local, parts[0])]
        for i in range(len(helped)):
            totals.append(self._await(i, "totals"))
            self.parts_played += totals[-1] is not None
        played = [
            one_row_at_a_time(local, p) if got is None else got for p, got in zip(parts, totals, strict=True)
        ]
        return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *played)

    def baselines(self) -> dict[str, Any] | None:
        """The last helper's baseline totals (waiting for them), or None if a helper failed or they are not
        shared."""
        if self.share_baselines and self._baselines is None and self.wait():
            self._await(len(self._mailboxes) - 1, "baselines")
        return None if self.failed is not None or not self.share_baselines else self._baselines

    def close(self) -> None:
        """Stop the helpers (terminated if they do not leave in `CLOSE_TIMEOUT_S`)."""
        self._finalizer()


def _stop(mailboxes: list, processes: list) -> None:
    """Ask each helper to stop, then wait for it (terminated after `CLOSE_TIMEOUT_S`)."""
    for mailbox in mailboxes:
        mailbox.send(("stop", None))
        mailbox.close(CLOSE_TIMEOUT_S)
    for process in processes:
        process.join(CLOSE_TIMEOUT_S)
        if process.is_alive():
            process.terminate()
            process.join()
    mailboxes.clear()
    processes.clear()
