"""A run's helper process (`baselines.run.helpers`, the side in this process): `serve` builds the run's
population and evaluation from its config and trains, plays and stops as the run asks. `Mailbox` is the
pipe both sides talk through."""

from __future__ import annotations

import os
import pickle
import queue
import sys
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import serialize_executable

from baselines.run.distributed import fetch
from baselines.run.split_training import joined_pieces
from hivex_jax.core.errors import one_line
from hivex_jax.core.registry import EnvSpec, register, registered_envs, spec


class Mailbox:
    """One end of a `Pipe` whose sends never wait for the other side: a thread writes them in order, so a
    process computing a program does not hold up one that sends it a state (a pipe holds 64 KiB; a state
    is megabytes, read only when the receiver is between programs)."""

    def __init__(self, connection: Any):
        self.connection = connection
        self._outbox: queue.Queue = queue.Queue()
        self._writer = threading.Thread(target=self._write, name="hivex-mailbox", daemon=True)
        self._writer.start()

    def _write(self) -> None:
        for message in iter(self._outbox.get, None):
            try:
                self.connection.send(message)
            except (OSError, ValueError):  # the other side has gone: its reader sees the end
                return

    def send(self, message: tuple) -> None:
        """Queue `message` (a picklable tuple) to be written after those before it."""
        self._outbox.put(message)

    def recv(self) -> tuple:
        """The next message (waits); `EOFError` / `OSError` once the other side has gone."""
        return self.connection.recv()

    def poll(self) -> bool:
        """Whether a message has come (or the other side has gone)."""
        return self.connection.poll()

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued (waiting at most `timeout` s), then close the pipe."""
        self._outbox.put(None)
        self._writer.join(timeout)
        self.connection.close()


def one_row_at_a_time(play: Any, rows: Any) -> Any:
    """`play(rows)` (totals `[P, ...]` of rows played in turn) as one call per row: in turn a row's numbers
    are the same in any company, and one compiled program then serves every split of the rows (a split
    that changes between evaluations would otherwise compile a program per row count)."""
    count = len(jax.tree.leaves(rows)[0])
    totals = [
        jax.tree.map(np.asarray, play(jax.tree.map(lambda x, i=i: x[i : i + 1], rows))) for i in range(count)
    ]
    return jax.tree.map(lambda *xs: np.concatenate(xs), *totals)


def load_program(mailbox: Mailbox, population: Any, piece_updates: int) -> Any:
    """The run's compiled training program, sent once it has compiled it (`serialize_executable`: the same
    executable, and no second compile on this core); compiled here if it cannot be loaded."""
    kind, payload = mailbox.recv()
    if kind != "program":
        raise EOFError  # "stop": the run ended before it compiled
    if payload is not None:
        try:
            return serialize_executable.deserialize_and_load(*payload)
        except Exception:  # noqa: BLE001 (a backend without serialised executables: compile it here)
            pass
    return population.compile_piece(piece_updates)


def compile_eval_row(evaluation: Any, population: Any) -> Any:
    """The trained policy's evaluation program for one row (`one_row_at_a_time`'s calls: a seed's params,
    greedy or not), compiled now, from the population's shapes, as `serialize_executable` gives it to the
    run (None where it cannot be serialised: the run compiles its own)."""
    params = population.part_state(1).params
    row = (params, jax.ShapeDtypeStruct((1,), jnp.bool_))  # `greedy_and_stochastic_rows`' row
    compiled, _ = evaluation.trained.program(row)
    evaluation.trained.load(compiled)
    try:
        return serialize_executable.serialize(compiled)
    except Exception:  # noqa: BLE001 (a backend without serialised executables)
        return None


def registered_spec(env_id: str) -> EnvSpec | None:
    """The registry entry of an env registered in this process, for a helper that would not know it (a
    test's or a user's env registered at run time), where it pickles (a lambda factory does not)."""
    if env_id not in registered_envs():
        return None
    found = spec(env_id)
    try:
        pickle.dumps(found)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return found


def serve(
    config_values: dict,
    worlds: list[int],
    baselines: bool,
    eval_rows: bool,
    piece_updates: int,
    cache_dir: Any,
    env: Any,
    connection: Any,
) -> None:
    """A helper: build the run's population and evaluation, play the baselines if `baselines` (while the run
    compiles), load the run's compiled program of one seed row and `piece_updates` updates (0: it trains
    nothing), with `eval_rows` compile the trained policy's one-row evaluation and send it (the run loads
    it: neither compiles it at the first evaluation), say "ready", then serve "train" (a seed row and a
    count of programs to run on it) / "play" until "stop" or the run's end."""
    null = os.open(os.devnull, os.O_WRONLY)  # jax's start-up warnings would break the run's progress bar
    os.dup2(null, 1)
    os.dup2(null, 2)
    mailbox = Mailbox(connection)
    try:
        if cache_dir:
            jax.config.update("jax_compilation_cache_dir", cache_dir)
        if env is not None and env.id not in registered_envs():  # the run's entry (`registered_spec`)
            register(env.id, env.entry_point, env.description, **env.kwargs)
        from baselines.config import from_dict
        from baselines.run.evaluation import HeldOutEvaluation
        from baselines.run.population import get_population

        config = from_dict(config_values)
        population = get_population(config)
        evaluation = HeldOutEvaluation(population.train, worlds)
        if baselines:
            names = jnp.arange(len(evaluation.baseline_names))
            mailbox.send(("baselines", jax.tree.map(np.asarray, evaluation.baselines(names, worlds))))
        program = load_program(mailbox, population, piece_updates) if piece_updates else None
        if eval_rows:  # after the run's compile: two compiles at once slow each other more than this saves
            mailbox.send(("eval_program", compile_eval_row(evaluation, population)))
        mailbox.send(("ready", None))
        while True:
            kind, payload = mailbox.recv()
            if kind == "stop":
                break
            if kind == "train":
                row, runs = payload
                state, metrics = jax.device_put(row), []
                for _ in range(runs):
                    state, piece_metrics = program(state)
                    metrics.append(fetch(piece_metrics))
                mailbox.send(("trained", (jax.device_get(state), joined_pieces(metrics))))
            elif kind == "play":
                mailbox.send(("totals", one_row_at_a_time(evaluation.play_trained, payload)))
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the run has ended
    except Exception as error:  # noqa: BLE001 (every failure is reported to the run, which carries on)
        mailbox.send(("error", one_line(error)))
    finally:
        mailbox.close(timeout=10.0)
        sys.exit(0)
