"""Test configuration, set before jax starts a backend.

- PJRT_NPROC=1: jaxlib 0.10.x deadlocks on a 2-core CPU when two batched LAPACK calls (e.g. flax's
  orthogonal init under vmap) run at once. The one place the tests set it: the processes they start
  inherit it (the code's one place is `hivex_jax.cli_support.prepare_jax`).
- XLA's LLVM optimisation level (unless XLA_FLAGS already chooses one; `pytest_configure` below): 0 for
  the default selection, 1 for any other (e.g. `-m slow`).
- One compilation cache for the whole session, in a temporary folder that the first pytest process makes
  and removes at its exit: the xdist workers and the processes the tests start inherit it through
  HIVEX_JAX_CACHE_DIR (which the trainer's commands read instead of ~/.cache), so a program that two test
  files (or a run and its resumed copy) build compiles once, and no test reads or fills the user's cache.
  A size limit (JAX_COMPILATION_CACHE_MAX_SIZE, so those processes have it too) turns on jax's file
  lock: no process reads a half-written entry, and every entry gets the access-time file the lock's
  size check reads.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("PJRT_NPROC", "1")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

if "HIVEX_JAX_CACHE_DIR" not in os.environ:  # the first process of the session (xdist's controller)
    _cache = tempfile.mkdtemp(prefix="hivex_test_xla_cache_")
    os.environ["HIVEX_JAX_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(32 * 2**30))

import jax  # noqa: E402  (after the environment above; importing jax starts no backend)

if os.environ["HIVEX_JAX_CACHE_DIR"] and not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", os.environ["HIVEX_JAX_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def pytest_configure(config):
    """XLA's LLVM optimisation level, set before any test starts a backend, in xdist's controller (whose
    workers, and the processes the tests start, inherit it) or the one pytest process. The default
    selection (`-m 'not slow'`) is compile-bound, tiny programs that run for milliseconds: level 0
    compiles ~25% faster than level 1 (measured on the CPU). Any other selection, e.g. `-m slow`, holds
    trainings to a threshold whose run time level 0 would triple: level 1 (~40% less compile time than
    XLA's default at the same run time, as the trainer's commands use; baselines/cli_common.py)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        level = 0 if config.option.markexpr == "not slow" else 1
        os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_optimization_level={level}".strip()
