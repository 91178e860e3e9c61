"""A population's chunk shared with helper processes (`cpu_helpers`) piece by piece: each process runs one
compiled program, `piece_updates` updates of one seed row, as many times as its plan says.

Whole seeds per process leave cores idle whenever the seeds do not divide among the processes (3 seeds on
2 cores: 2 + 1, the second core idle a third of the time). Cut into pieces, the chunk's seed-updates share
evenly: McNaughton's wrap-around rule lays the seeds end to end and cuts the line into equal loads, so a
seed cut at a boundary runs its first updates at the start of the later process's load and its last ones
at the end of the earlier's; a load is at least one seed's, so the two never overlap in time (3 seeds of
10 updates on 2 processes: seed 0 and seed 1's last 5 updates here; seed 1's first 5 and seed 2 in the
helper: 15 + 15). In turn a seed's numbers are the same in any company and any pieces, so the chunk is
the population's bit for bit (tests/baselines/test_helpers.py).
"""

from __future__ import annotations

import time
from typing import Any

import jax
import numpy as np
from jax.experimental import serialize_executable

from baselines.run.distributed import fetch


def piece_updates(seeds: int, processes: int, updates: int) -> int:
    """The updates of one program: the divisor of `updates` (a chunk's) whose pieces share the chunk's
    `seeds` x `updates` seed-updates most evenly over `processes` (the largest of those: fewest calls)."""
    processes = min(processes, seeds)

    def longest_load(piece: int) -> int:
        return -(-seeds * updates // piece // processes) * piece

    divisors = [d for d in range(updates, 0, -1) if updates % d == 0]
    return min(divisors, key=longest_load)  # min keeps the first (largest) of equals


def part_sizes(rows: int, parts: int) -> list[int]:
    """Sizes of `rows` rows cut into at most `parts` contiguous parts, the first ones the largest."""
    return [len(part) for part in np.array_split(np.arange(rows), min(rows, parts))]


def chunk_plan(seeds: int, processes: int, pieces_per_seed: int) -> list[list[tuple[int, int]]]:
    """Each process's programs in order, as `(seed, runs)`: McNaughton's wrap-around rule over the seeds'
    pieces, loads as even as whole pieces allow (the first processes the larger); a seed cut between
    processes p and p + 1 runs its first pieces first in p + 1 and its last ones last in p."""
    processes = min(processes, seeds)
    loads = part_sizes(seeds * pieces_per_seed, processes)
    plan: list[list[tuple[int, int]]] = []
    start = 0
    for load in loads:
        end = start + load
        first_seed, last_seed = start // pieces_per_seed, (end - 1) // pieces_per_seed
        plan.append(
            [
                (seed, min(end, (seed + 1) * pieces_per_seed) - max(start, seed * pieces_per_seed))
                for seed in range(first_seed, last_seed + 1)
            ]
        )
        start = end
    return plan


def seed_order(plan: list[list[tuple[int, int]]]) -> dict[int, list[tuple[int, int]]]:
    """Each seed's `(process, runs)` in the order they run: the later process's part first."""
    order: dict[int, list[tuple[int, int]]] = {}
    for process in reversed(range(len(plan))):
        for seed, runs in plan[process]:
            order.setdefault(seed, []).append((process, runs))
    return order


class SplitTraining:
    """The population's chunk run by this process and `helpers` piece by piece (`chunk_plan`): the same
    state and metrics as `Population.chunk`. `compiled`: this process's program (from `compile`)."""

    def __init__(self, population: Any, helpers: Any, processes: int):
        self.population, self.helpers = population, helpers
        self.devices = population.devices
        config = population.config
        self.updates = piece_updates(config.num_seeds, processes, config.chunk_updates)
        self.plan = chunk_plan(config.num_seeds, processes, config.chunk_updates // self.updates)
        self.order = seed_order(self.plan)
        self.processes = len(self.plan)  # this one and the helpers that train (the memory check's count)
        self.compiled: Any = None
        self.compile_s = float("nan")

    def loads(self) -> list[float]:
        """Seeds' worth of each training process's part of a chunk (3 seeds on 2: 1.5, 1.5)."""
        per_seed = self.population.config.chunk_updates // self.updates
        return [sum(runs for _, runs in part) / per_seed for part in self.plan]

    def abstract_state(self) -> Any:
        """One seed row of the population state, abstract (what `compile` compiles for)."""
        return self.population.part_state(1)

    def compile(self, state: Any = None) -> float:
        """Compile the program (`memory.compile_checked` reads its estimate) and hand it to the helpers: the
        same executable in every process, compiled once."""
        start = time.perf_counter()
        self.compiled = self.population.compile_piece(self.updates)
        self.compile_s = time.perf_counter() - start
        try:
            program = serialize_executable.serialize(self.compiled)
        except Exception:  # noqa: BLE001 (a backend that cannot: each helper compiles its own)
            program = None
        self.helpers.send_program(program)
        return self.compile_s

    def chunk(self, state: Any) -> tuple[Any, dict[str, np.ndarray]]:
        """`Population.chunk`: each seed's programs where the plan puts them; the same state and metrics.
        Between its own programs this process hands on the states the helpers need next."""
        if self.compiled is None:
            self.compile()
        host = jax.device_get(state)  # rows cut and joined in numpy: no jax op compiled per leaf shape
        rows = [jax.tree.map(lambda x, s=s: x[s : s + 1], host) for s in range(len(self.order))]
        metrics: list[list[Any]] = [[] for _ in rows]
        done = [0] * len(rows)  # parts of each seed's order done
        queued = [list(part) for part in self.plan]  # each process's parts not yet sent / begun
        in_flight: list[list[int]] = [[] for _ in self.plan]  # seeds sent to each helper, in order
        here: list = []  # the part running here: [seed, programs left, their metrics]

        def next_is(process: int, seed: int) -> bool:
            return done[seed] < len(self.order[seed]) and self.order[seed][done[seed]][0] == process

        def record(seed: int, row: Any, got: Any) -> None:
            rows[seed] = row
            metrics[seed].append(got)
            done[seed] += 1

        helpers_ok = self.helpers.failed is None
        while helpers_ok:
            built = self.helpers.ready()  # the first chunk may begin here before they are
            for process in range(1, len(self.plan)):  # each helper's parts whose state is here, in order
                while built and queued[process] and next_is(process, queued[process][0][0]):
                    seed, runs = queued[process].pop(0)
                    helpers_ok = helpers_ok and self.helpers.send_training(process - 1, rows[seed], runs)
                    in_flight[process].append(seed)
            if not here and queued[0] and next_is(0, queued[0][0][0]):
                seed, runs = queued[0].pop(0)
                here = [seed, runs, []]
            busy = [p - 1 for p in range(1, len(self.plan)) if in_flight[p]]
            if here:  # one program here, then what has come back
                self._run_here(here, rows, 1)
                if here[1] == 0:
                    record(here[0], rows[here[0]], joined_pieces(here[2]))
                    here = []
            elif not busy:
                if not any(queued):
                    break  # every part is done
                if built:
                    raise RuntimeError(f"a chunk plan that cannot run: {self.plan}")
                # nothing left here and the helpers still starting: a part of theirs runs here
                for process in range(1, len(self.plan)):
                    if not here and queued[process] and next_is(process, queued[process][0][0]):
                        here = [*queued[process].pop(0), []]
                if not here:
                    helpers_ok = self.helpers.wait()
                continue
            idle = not here and not (queued[0] and next_is(0, queued[0][0][0]))  # nothing to run here
            parts = self.helpers.trained_parts(busy, block=idle) if helpers_ok else None
            if parts is None:  # a helper failed: nothing more comes back
                helpers_ok = False
                break
            for helper, (row, got) in parts:
                record(in_flight[helper + 1].pop(0), row, got)
        if not helpers_ok:  # a helper failed: the part begun here goes on, then what is left of each seed
            if here:
                self._run_here(here, rows, here[1])
                record(here[0], rows[here[0]], joined_pieces(here[2]))
            for seed, parts_of_seed in self.order.items():
                left = [seed, sum(runs for _, runs in parts_of_seed[done[seed] :]), []]
                if left[1]:
                    self._run_here(left, rows, left[1])
                    record(seed, rows[seed], joined_pieces(left[2]))
        joined = [joined_pieces(m) for m in metrics]
        state = jax.device_put(jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *rows))
        return state, jax.tree.map(lambda *xs: np.concatenate(xs), *joined)

    def _run_here(self, part: list, rows: list, runs: int) -> None:
        """`runs` of this process's program on `part`'s seed row (`part`: [seed, programs left, metrics])."""
        seed = part[0]
        for _ in range(runs):
            rows[seed], piece_metrics = self.compiled(rows[seed])
            part[1] -= 1
            part[2].append(fetch(piece_metrics))


def joined_pieces(pieces: list[Any]) -> Any:
    """Metrics `[1, updates]` of consecutive pieces of a seed's chunk as one."""
    return jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *pieces)
