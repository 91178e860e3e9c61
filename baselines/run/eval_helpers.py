"""Helper processes that share a run's held-out evaluation on a CPU, on the cores its one-core training
leaves idle: each rebuilds the run's evaluation (from the config, so the same programs), plays the
baselines while the run trains, then a part of the trained policy's rows when asked.

The trained policy's rows (every seed greedy, then every seed stochastic) are played one after another
on one CPU device (`rows_in_turn`), so each row's totals do not depend on which rows share its program:
a part played here or in a helper is the same numbers bit for bit (tests/baselines/test_eval_helpers.py).
Threads would not be: XLA's CPU backend with a thread pool of two rounds differently. A helper that is
not ready, fails or dies costs nothing but time: its part is played in this process, with one line.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import weakref
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.config import PPOConfig
from hivex_jax.core.errors import one_line
from hivex_jax.core.registry import _REGISTRY, EnvSpec, register

#: world-steps of trained rows (rows x worlds x episode steps) from which `eval_helpers: null` starts
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


def helper_count(config: PPOConfig, evaluation: Any) -> int:
    """How many helpers `evaluation` gets: `eval_helpers`, or (None) one per idle core where its trained rows
    make `AUTO_MIN_STEPS` world-steps; 0 unless those rows play in turn on one CPU device of a single
    process, with the env params as constants. Never more than the rows less one."""
    if config.eval_helpers == 0 or jax.process_count() > 1:
        return 0
    if not evaluation.trained.in_turn or evaluation.params_stack is not None:
        return 0
    rows = 2 * config.num_seeds
    if (
        config.eval_helpers is None
        and rows * len(evaluation.worlds) * evaluation.trained.num_steps < AUTO_MIN_STEPS
    ):
        return 0  # a helper's start (jax, the env, its programs) would outlast the part it plays
    wanted = usable_cores() - 1 if config.eval_helpers is None else config.eval_helpers
    return max(0, min(wanted, rows - 1))


def with_helpers(evaluation: Any, config: PPOConfig, log: Callable[[str], Any], final: bool) -> Any:
    """`evaluation` with `helper_count` helpers attached (a copy), if it will be played (`final`, or
    `eval_every`) and gets any; their processes end when the copy is collected (or at exit)."""
    count = helper_count(config, evaluation) if final or config.eval_every else 0
    if count == 0:
        return evaluation
    helped = evaluation.on(evaluation.worlds)  # a copy: the cached evaluation stays without helpers
    helped.helpers = EvalHelpers(config, evaluation.worlds, count, log)
    log(f"evaluation: {count} helper process(es) beside this one (eval_helpers=0: none)")
    return helped


class EvalHelpers:
    """`count` helper processes of one run's evaluation on `worlds`; the first also plays the baselines
    as soon as it is built. `play(rows, local)` splits a trained-policy call among them and this process."""

    def __init__(self, config: PPOConfig, worlds: Any, count: int, log: Callable[[str], Any] = print):
        self.log = log
        self.worlds = np.asarray(worlds)
        self.failed: str | None = None
        self.parts_played = 0  # row parts the helpers played (tests: the split happened)
        self._ready = [False] * count
        self._baselines: dict[str, Any] | None = None
        context = multiprocessing.get_context("spawn")  # a fork would copy jax's threads
        cache = jax.config.jax_compilation_cache_dir
        spec = _registered_spec(config.env_id)
        self._connections, self._processes = [], []
        for i in range(count):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=serve,
                args=(config.to_dict(), [int(w) for w in worlds], i == 0, cache, spec, theirs),
                name=f"hivex-eval-helper-{i}",
                daemon=True,  # ends with this process whatever happens
            )
            process.start()
            theirs.close()
            self._connections.append(mine)
            self._processes.append(process)
        # closed when collected (a run's evaluation is, when the run returns) or at exit, whatever happened
        self._finalizer = weakref.finalize(self, _stop, self._connections, self._processes)

    # ------------------------------------------------------------------------------- messages
    def _take(self, i: int, message: tuple) -> tuple:
        """Record a helper's message; returns it."""
        kind = message[0]
        if kind == "ready":
            self._ready[i] = True
        elif kind == "baselines":
            self._baselines = message[1]
        elif kind == "error":
            self._fail(f"evaluation helper {i} failed: {message[1]}")
        return message

    def _fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason
            self.log(f"{reason}; the evaluation runs in this process")

    def _poll(self) -> None:
        """Read what the helpers have sent so far, without waiting."""
        for i, connection in enumerate(self._connections):
            try:
                while self.failed is None and connection.poll():
                    self._take(i, connection.recv())
            except (EOFError, OSError):
                self._fail(f"evaluation helper {i} ended")

    def _await(self, i: int, kind: str) -> Any:
        """Wait for helper i's next `kind` message (recording others on the way); None if it failed."""
        connection = self._connections[i]
        while self.failed is None:
            try:
                message = self._take(i, connection.recv())
            except (EOFError, OSError):
                self._fail(f"evaluation helper {i} ended")
                break
            if message[0] == kind:
                return message[1]
        return None

    # --------------------------------------------------------------------------------- service
    def ready(self) -> bool:
        """Whether every helper is built and none has failed."""
        self._poll()
        return self.failed is None and all(self._ready)

    def wait(self) -> bool:
        """Wait until every helper is built or one has failed; whether all are ready."""
        for i, ready in enumerate(self._ready):
            if not ready and self.failed is None:
                self._await(i, "ready")
        return self.ready()

    def split(self, local: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`local` (totals `[P, ...]` of policy rows `[P, ...]`) shared with the helpers (`play`)."""
        return lambda rows: self.play(rows, local)

    def baselines_or(self, local: Callable[..., Any]) -> Callable[..., Any]:
        """The baselines' program `local(indices, worlds)`, or the first helper's totals of it when it has
        played them on these worlds."""

        def play(indices: Any, worlds: Any) -> Any:
            same = np.array_equal(np.asarray(worlds), self.worlds)
            totals = self.baselines() if same else None
            return local(indices, worlds) if totals is None else totals

        return play

    def play(self, rows: Any, local: Callable[[Any], Any]) -> Any:
        """`local(rows)` (totals `[P, ...]` of policy rows `[P, ...]`), its rows split into contiguous
        parts: the first played here, the others by the helpers, all at once. Only `local` when the
        helpers are not all ready; a part whose helper fails is played here after the others."""
        count = len(jax.tree.leaves(rows)[0])
        if not self.ready() or count < 2:
            return local(rows)
        cuts = np.linspace(0, count, min(count, len(self._connections) + 1) + 1).round().astype(int)
        parts = [jax.tree.map(lambda x, a=a, b=b: np.asarray(x[a:b]), rows) for a, b in pairwise(cuts)]
        helped = parts[1:]  # helper i plays helped[i]
        for i, part in enumerate(helped):
            self._connections[i].send(("play", part))
        totals = [jax.tree.map(np.asarray, local(parts[0]))]
        for i in range(len(helped)):
            totals.append(self._await(i, "totals"))
            self.parts_played += totals[-1] is not None
        totals = [local(part) if got is None else got for part, got in zip(parts, totals, strict=True)]
        return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *totals)

    def baselines(self) -> dict[str, Any] | None:
        """The first helper's baseline totals (waiting for them if it is ready), or None."""
        if self._baselines is None and self.ready():
            self._await(0, "baselines")
        return None if self.failed is not None else self._baselines

    def close(self) -> None:
        """Stop the helpers (terminated if they do not leave in `CLOSE_TIMEOUT_S`)."""
        self._finalizer()


def _stop(connections: list, processes: list) -> None:
    """Ask each helper to stop, then wait for it (terminated after `CLOSE_TIMEOUT_S`)."""
    for connection in connections:
        try:
            connection.send(("stop", None))
        except (OSError, ValueError):
            pass
        connection.close()
    for process in processes:
        process.join(CLOSE_TIMEOUT_S)
        if process.is_alive():
            process.terminate()
            process.join()
    connections.clear()
    processes.clear()


def _registered_spec(env_id: str) -> EnvSpec | None:
    """The registry entry of an env registered in this process, for a helper that would not know it (a
    test's or a user's env registered at run time), where it pickles (a lambda factory does not)."""
    spec = _REGISTRY.get(env_id)
    try:
        pickle.dumps(spec)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return spec


def serve(
    config_values: dict, worlds: list[int], baselines: bool, cache_dir: Any, spec: Any, connection: Any
) -> None:
    """A helper process: build the run's evaluation, say "ready", play the baselines (the first helper),
    then play the policy rows it is sent until "stop" or the run's end."""
    null = os.open(os.devnull, os.O_WRONLY)  # jax's start-up warnings would break the run's progress bar
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        if cache_dir:
            jax.config.update("jax_compilation_cache_dir", cache_dir)
        if spec is not None and spec.id not in _REGISTRY:
            register(spec.id, spec.entry_point, spec.description, **spec.kwargs)
        from baselines.config import from_dict
        from baselines.run.evaluation import HeldOutEvaluation
        from baselines.run.population import get_population

        config = from_dict(config_values)
        evaluation = HeldOutEvaluation(get_population(config).train, worlds)
        connection.send(("ready", None))
        if baselines:
            names = jnp.arange(len(evaluation.baseline_names))
            connection.send(("baselines", jax.tree.map(np.asarray, evaluation.baselines(names, worlds))))
        while True:
            kind, rows = connection.recv()
            if kind != "play":
                break
            connection.send(("totals", jax.tree.map(np.asarray, evaluation.play_trained(rows))))
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the run has ended
    except Exception as error:  # noqa: BLE001 (every failure is reported to the run, which carries on)
        try:
            connection.send(("error", one_line(error)))
        except (OSError, ValueError):
            pass
    finally:
        sys.exit(0)
