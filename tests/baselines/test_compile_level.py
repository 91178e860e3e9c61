"""`cpu_compile_level`: the training program compiled at that XLA optimisation level on a CPU backend, as if
the process's XLA_FLAGS said it; None keeps the process's level; a level XLA does not have is a one-line
error."""

import os
import re

import jax
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import ConfigError, from_dict
from baselines.core.ppo import make_train
from baselines.run.population import Population, chunk_compiler_options


def process_level() -> int:
    """The LLVM level this process compiles at: XLA_FLAGS' (tests/conftest.py sets one), else XLA's 3."""
    found = re.search(r"--xla_backend_optimization_level=(\d)", os.environ.get("XLA_FLAGS", ""))
    return int(found.group(1)) if found else 3


def trained_leaves(level: int | None) -> list[np.ndarray]:
    """Every leaf of a one-seed population's state after one chunk, compiled at `level`."""
    config = from_dict({**TINY_CONFIG, "num_seeds": 1, "cpu_compile_level": level})
    population = Population(make_train(config), jax.devices("cpu")[:1])
    state, _ = population.chunk(population.init())
    return [np.asarray(leaf) for leaf in jax.tree.leaves(state)]


def test_the_level_is_the_training_programs_own():
    same, other = process_level(), (3 if process_level() == 0 else 0)
    unset, as_process, elsewhere = trained_leaves(None), trained_leaves(same), trained_leaves(other)
    # the process's level by name compiles the program the flag compiles, bit for bit ...
    assert all(np.array_equal(a, b) for a, b in zip(unset, as_process, strict=True))
    # ... and another level compiles another program (LLVM rounds float32 arithmetic its own way)
    assert not all(np.array_equal(a, b) for a, b in zip(unset, elsewhere, strict=True))


def test_options_only_on_cpu_devices():
    config = from_dict({**TINY_CONFIG, "cpu_compile_level": 3})
    cpu = jax.devices("cpu")
    assert chunk_compiler_options(config, cpu) == {"xla_backend_optimization_level": 3}
    assert chunk_compiler_options(config.replace(cpu_compile_level=None), cpu) is None

    class Accelerator:
        platform = "gpu"

    assert chunk_compiler_options(config, [Accelerator()]) is None  # accelerators keep their own


@pytest.mark.parametrize("level", [4, -1, "fast"])
def test_a_level_xla_does_not_have_is_one_line(level):
    with pytest.raises(ConfigError) as info:
        from_dict({**TINY_CONFIG, "cpu_compile_level": level})
    assert "\n" not in str(info.value) and "cpu_compile_level" in str(info.value)
