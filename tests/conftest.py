"""Test configuration, set before jax starts a backend.

- PJRT_NPROC=1: jaxlib 0.10.x deadlocks on a 2-core CPU when two batched LAPACK calls (e.g. flax's
  orthogonal init under vmap) run at once. The one place the tests set it: the processes they start
  inherit it (the code's one place is `hivex_jax.cli_support.prepare_jax`).
- XLA's LLVM optimisation level (unless XLA_FLAGS already chooses one; `pytest_configure` below): 0 for
  the default selection, 1 for any other (e.g. `-m slow`). The default selection also compiles fusions
  with XLA's older CPU emitters (`--xla_cpu_use_fusion_emitters=false`), where this jaxlib knows the flag.
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
import subprocess
import sys
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
    default_selection = config.option.markexpr == "not slow"
    if "xla_backend_optimization_level" not in flags:
        flags = f"{flags} --xla_backend_optimization_level={0 if default_selection else 1}".strip()
    # XLA's MLIR fusion emitters spend most of the compile time of these tiny programs: the older
    # emitters compile the default selection with 40-60% less CPU (192 s -> 75 s for six env files, 102 s
    # -> 58 s for three trainer files, every test passing, golden rollouts included). Slow trainings
    # keep XLA's default code. XLA aborts on a flag it does not know: a newer jaxlib may drop it.
    emitters = "--xla_cpu_use_fusion_emitters=false"
    if (
        default_selection
        and "xla_cpu_use_fusion_emitters" not in flags
        and _xla_accepts(f"{flags} {emitters}")
    ):
        flags = f"{flags} {emitters}"
    os.environ["XLA_FLAGS"] = flags


def _xla_accepts(flags: str) -> bool:
    """Whether a jax process starts its CPU backend with XLA_FLAGS=`flags` (about a second, once)."""
    probe = [sys.executable, "-c", "import jax; jax.devices('cpu')"]
    env = {**os.environ, "XLA_FLAGS": flags}
    return subprocess.run(probe, env=env, capture_output=True, timeout=300).returncode == 0
