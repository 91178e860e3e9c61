"""A chunk shared piece by piece (`baselines.run.split_training`): the plans by hand and by their invariants,
and the chunk run by the plan (helpers in this process here: tests/baselines/test_helpers.py has the
processes) equal to the population's own, whoever runs which piece."""

import jax
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG, register

from baselines.config import from_dict
from baselines.core.ppo import make_train
from baselines.run.distributed import fetch
from baselines.run.population import Population
from baselines.run.split_training import SplitTraining, chunk_plan, piece_updates, seed_order

register()


@pytest.mark.parametrize(
    ("seeds", "processes", "updates", "piece", "plan"),
    [
        (3, 2, 10, 5, [[(0, 2), (1, 1)], [(1, 1), (2, 2)]]),  # 1.5 seeds each, seed 1 cut in two
        (4, 2, 10, 10, [[(0, 1), (1, 1)], [(2, 1), (3, 1)]]),  # whole seeds: no cut
        (5, 2, 10, 5, [[(0, 2), (1, 2), (2, 1)], [(2, 1), (3, 2), (4, 2)]]),
        (3, 2, 1, 1, [[(0, 1), (1, 1)], [(2, 1)]]),  # a chunk of one update: whole seeds, 2 + 1
        (2, 3, 10, 10, [[(0, 1)], [(1, 1)]]),  # more processes than seeds: one seed each
    ],
)
def test_chunk_plans_by_hand(seeds, processes, updates, piece, plan):
    assert piece_updates(seeds, processes, updates) == piece
    assert chunk_plan(seeds, processes, updates // piece) == plan


@pytest.mark.parametrize("seeds", range(1, 9))
@pytest.mark.parametrize("processes", range(2, 6))
@pytest.mark.parametrize("updates", [1, 2, 3, 4, 6, 10])
def test_a_chunk_plan_runs_every_update_once_in_order_within_its_longest_load(seeds, processes, updates):
    piece = piece_updates(seeds, processes, updates)
    per_seed = updates // piece
    plan = chunk_plan(seeds, processes, per_seed)
    order = seed_order(plan)
    assert sorted(order) == list(range(seeds))
    assert all(sum(runs for _, runs in parts) == per_seed for parts in order.values())
    loads = [sum(runs for _, runs in part) for part in plan]
    assert max(loads) - min(loads) <= 1 and len(plan) == min(processes, seeds)
    # each process runs its parts back to back from time 0 (a program = one time unit): a seed's later
    # part starts after its earlier one ends, so nobody waits and the chunk ends with the longest load
    ends: dict[int, int] = {}
    for process in reversed(range(len(plan))):  # a seed's first part is in the later process
        clock = 0
        for seed, runs in plan[process]:
            start = clock
            if seed in ends:
                assert start >= ends[seed], (plan, seed)
            clock += runs
            ends[seed] = clock
    assert max(ends.values()) == max(loads)


class InProcessHelpers:
    """`Helpers`' side of the plan without processes: a part is computed (with the run's own program) when
    its answer is asked for; `built` False: not yet started."""

    def __init__(self, count: int, built: bool = True):
        self.failed, self.built, self.program = None, built, None
        self.jobs: list[list] = [[] for _ in range(count)]
        self.runs_here = [0] * count  # programs each "helper" ran

    def send_program(self, program) -> None:
        self.sent_program = program is not None  # the compiled program, serialised for the processes

    def ready(self) -> bool:
        return self.built

    def wait(self) -> bool:
        return True

    def send_training(self, i, row, runs) -> bool:
        self.jobs[i].append((jax.device_get(row), runs))
        return True

    def trained_parts(self, helpers, block):
        got = []
        for i in helpers:
            if self.jobs[i]:
                row, runs = self.jobs[i].pop(0)
                pieces = []
                for _ in range(runs):
                    row, metrics = self.program(row)
                    pieces.append(fetch(metrics))
                self.runs_here[i] += runs
                got.append((i, (row, jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *pieces))))
        return got


def _same(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.mark.slow  # 5 seeds' chunk twice and in pieces: ≈ 25 s (test_helpers checks a real helper's pieces)
@pytest.mark.xla_default_code  # programs of 1 and 5 rows: the same bits with XLA's default code
@pytest.mark.timeout(300)
def test_a_chunk_by_its_plan_is_the_population_chunk_whoever_runs_the_pieces():
    # 5 seeds of 3 updates on 3 processes, in programs of 1 update: seed 3 runs its first 2 updates in the
    # second helper and its last in the first (handed on by this process); then helpers not yet built
    config = from_dict({**TINY_CONFIG, "num_seeds": 5, "chunk_updates": 3})
    population = Population(make_train(config))
    state = population.init()
    expected = population.chunk(state)
    helpers = InProcessHelpers(2)
    split = SplitTraining(population, helpers, 3)
    split.compile()
    helpers.program = split.compiled
    assert (split.updates, split.plan[1][-1], split.plan[2][0]) == (1, (3, 1), (3, 2))
    assert _same(split.chunk(state), expected)
    assert helpers.runs_here == [5, 5] and helpers.sent_program  # 5 + 5 + 5 programs
    starting = InProcessHelpers(2, built=False)  # every part runs here
    split.helpers = starting
    assert _same(split.chunk(state), expected) and starting.runs_here == [0, 0]
