"""Shared setup of the trainer tests: the tiny test environment, and compile-time savers.

- XLA's LLVM optimisation level 1 (set before the backend starts, unless XLA_FLAGS already chooses
  one): ~40% less compile time at the same run time (see baselines/cli_common.py).
- A compilation cache in a temporary folder for this session, so identical programs built by
  different `make_train` calls (e.g. a run and its resumed copy) compile once.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

_flags = os.environ.get("XLA_FLAGS", "")
if "xla_backend_optimization_level" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_backend_optimization_level=1").strip()

import jax  # noqa: E402

_cache = tempfile.mkdtemp(prefix="hivex_test_xla_cache_")
atexit.register(shutil.rmtree, _cache, ignore_errors=True)
if not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", _cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trainer_fake_env  # noqa: E402

trainer_fake_env.register()
