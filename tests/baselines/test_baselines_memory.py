"""The trainer's memory check: XLA's estimate of one compiled chunk, compared with the device's memory
before the population's state exists; the compiled program is the one that trains."""

from types import SimpleNamespace

import jax
import pytest

from baselines.config import ConfigError, load_config
from baselines.run import memory

pytestmark = pytest.mark.timeout(300)

TINY = [
    "num_seeds=1",
    "num_envs=2",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "chunk_updates=1",
    "total_env_steps=16",
    "hidden_sizes=[8]",
    "gif_frames=0",
]


@pytest.fixture(scope="module")
def compiled():
    """A tiny config's population, compiled through the memory estimate, and the estimate."""
    from baselines.run.population import get_population

    config = load_config(None, TINY)
    population = get_population(config)
    return config, population, memory.compile_with_estimate(population)


def test_estimate_counts_the_state_and_keeps_the_compiled_chunk(compiled):
    config, population, estimate = compiled
    assert estimate is not None and population.compiled is not None  # the program training runs
    state_bytes = sum(
        leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(population.abstract_state())
    )
    assert estimate.argument_bytes == state_bytes  # XLA's arguments are exactly the population state
    assert estimate.peak_bytes == (
        estimate.argument_bytes + estimate.output_bytes + estimate.temp_bytes - estimate.alias_bytes
    )
    assert estimate.temp_bytes > 0
    # the program compiled from abstract shapes runs on the real initial state
    state, metrics = population.chunk(population.init())
    assert int(jax.device_get(state.update)[0]) == config.chunk_updates


def test_a_run_over_the_host_memory_is_refused_naming_the_figures(compiled, monkeypatch):
    config, population, estimate = compiled
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: estimate.peak_bytes - 1)
    with pytest.raises(ConfigError) as info:
        memory.check_fits(config, estimate, population.devices)
    message = str(info.value)
    assert message.startswith(
        f"the run needs ~{estimate.peak_bytes / 2**30:.1f} GiB (XLA estimate of one chunk"
    )
    assert "the host has" in message and "lower num_envs or num_seeds (now 2 x 1)" in message
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: estimate.peak_bytes)
    memory.check_fits(config, estimate, population.devices)  # exactly enough fits


def test_a_run_shared_with_helper_processes_needs_the_memory_of_each(compiled, monkeypatch):
    """`cpu_helpers`: every process that trains holds the program's state and temporaries, so the host
    must hold them all; a `SplitTraining` counts this process and the helpers that train."""
    from baselines.core.ppo import make_train
    from baselines.run.population import Population
    from baselines.run.split_training import SplitTraining

    config, population, estimate = compiled
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: 2 * estimate.peak_bytes - 1)
    memory.check_fits(config, estimate, population.devices)  # one process fits
    with pytest.raises(ConfigError, match=r"temporaries .* GiB, in each of 2 processes\), the host has"):
        memory.check_fits(config, estimate, population.devices, processes=2)
    monkeypatch.setattr(population, "processes", 2, raising=False)  # as a SplitTraining over 2 processes
    with pytest.raises(ConfigError, match="in each of 2 processes"):
        memory.compile_checked(config, population)
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: 2 * estimate.peak_bytes)
    assert memory.compile_checked(config, population) > 0  # exactly enough fits
    three = Population(make_train(load_config(None, [*TINY, "num_seeds=3"])))
    assert [SplitTraining(three, None, n).processes for n in (1, 2, 5)] == [1, 2, 3]  # at most one per seed


def test_an_accelerator_is_checked_against_its_bytes_limit(compiled):
    config, _, _ = compiled
    gib = 2**30
    estimate = memory.MemoryEstimate(
        argument_bytes=2 * gib, output_bytes=2 * gib, temp_bytes=36 * gib, alias_bytes=2 * gib, compile_s=0.0
    )
    assert estimate.peak_bytes == 38 * gib  # donated state: outputs reuse the arguments

    def gpu(limit: int) -> SimpleNamespace:
        return SimpleNamespace(
            platform="gpu",
            device_kind="NVIDIA L4",
            process_index=jax.process_index(),
            memory_stats=lambda: {"bytes_limit": limit},
        )

    with pytest.raises(ConfigError, match=r"needs ~38\.0 GiB .* the device \(NVIDIA L4\) has 23\.4 GiB"):
        memory.check_fits(config, estimate, [gpu(int(23.4 * gib)), gpu(80 * gib)])  # the smallest counts
    memory.check_fits(config, estimate, [gpu(40 * gib)])
    memory.check_fits(config, estimate, [SimpleNamespace(**{**vars(gpu(0)), "memory_stats": lambda: {}})])


def test_hivex_train_refuses_before_allocating_and_says_why(compiled, tmp_path, monkeypatch, capsys):
    from hivex_jax.cli import main

    _, population, _ = compiled
    population.compiled = None  # as a fresh process would find it: the check compiles it again
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: 1024)
    argv = ["train", "--out-dir", str(tmp_path), "--name", "big", "--no-progress", *TINY]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hivex train: the run needs ~"), err
    assert "the host has 0.0 GiB" in err[0]
    assert not (tmp_path / "big" / "checkpoints").exists()  # nothing was initialised or saved
    assert population.compiled is None  # refused: a later call in this process checks again


def test_abstract_state_traces_one_init_for_any_seed_count():
    # 4,096 seeds used to trace 4,096 inits (minutes) before the memory check could refuse the run
    from baselines.core.kernels import stack_trees
    from baselines.core.ppo import make_train
    from baselines.run.population import Population

    population = Population(make_train(load_config(None, [*TINY, "num_seeds=3"])))
    train, calls = population.train, []

    class CountingTrain:
        def __getattr__(self, name):
            return getattr(train, name)

        def init(self, key):
            calls.append(key)
            return train.init(key)

    population.train = CountingTrain()
    abstract = population.abstract_state()
    assert len(calls) == 1
    keys = population.seed_keys(0)
    stacked = jax.eval_shape(lambda: stack_trees([train.init(k) for k in keys]))  # what it was
    assert jax.tree.map(lambda a: (a.shape, a.dtype), abstract) == jax.tree.map(
        lambda a: (a.shape, a.dtype), stacked
    )
