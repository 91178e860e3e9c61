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
# the repository root before tests/ (which pytest puts on sys.path for this file): `import baselines` is then
# the trainer, not a namespace package made of the folder tests/baselines/
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if "HIVEX_JAX_CACHE_DIR" not in os.environ:  # the first process of the session (xdist's controller)
    _cache = tempfile.mkdtemp(prefix="hivex_test_xla_cache_")
    os.environ["HIVEX_JAX_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(32 * 2**30))

import jax  # noqa: E402  (after the environment above; importing jax starts no backend)
import pytest  # noqa: E402

#: XLA's older CPU fusion emitters, for the default selection (`pytest_configure`)
OLDER_EMITTERS = "--xla_cpu_use_fusion_emitters=false"

if os.environ["HIVEX_JAX_CACHE_DIR"] and not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", os.environ["HIVEX_JAX_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def pytest_configure(config):
    """XLA's LLVM optimisation level, set before any test starts a backend, in xdist's controller (whose
    workers, and the processes the tests start, inherit it) or the one pytest process. The default
    selection (`-m 'not slow'`) is compile-bound, tiny programs that run for milliseconds: level 0
    compiles ~25% faster than level 1 (measured on the CPU). Any other selection, e.g. `-m slow`, holds
    trainings to a threshold whose run time level 0 would triple: level 1 (~40% less compile time than
    XLA's default at the same run time, as the trainer's commands use; baselines/cli/common.py)."""
    flags = os.environ.get("XLA_FLAGS", "")
    default_selection = config.option.markexpr == "not slow"
    if "xla_backend_optimization_level" not in flags:
        flags = f"{flags} --xla_backend_optimization_level={0 if default_selection else 1}".strip()
    # XLA's MLIR fusion emitters spend most of the compile time of these tiny programs: the older
    # emitters compile the default selection with 40-60% less CPU (192 s -> 75 s for six env files, 102 s
    # -> 58 s for three trainer files, golden rollouts passing). Two programs that XLA's default code
    # makes bit-identical may differ by float32 ulps there: such tests are marked `xla_default_code`
    # (below). Slow trainings keep XLA's default code. XLA aborts on a flag it does not know (a newer
    # jaxlib may drop it): a probe process says whether this one does.
    if (
        default_selection
        and "xla_cpu_use_fusion_emitters" not in flags
        and _xla_accepts(f"{flags} {OLDER_EMITTERS}")
    ):
        flags = f"{flags} {OLDER_EMITTERS}"
    os.environ["XLA_FLAGS"] = flags
    config.addinivalue_line(
        "markers",
        "xla_default_code: asserts two programs agree bit for bit, as XLA's default code does (not the "
        "older emitters'); under the older emitters the test runs in a child pytest with XLA's default",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked `xla_default_code` runs in a child pytest with XLA's default fusion emitters when
    this session compiles with the older ones: e.g. a fused one-member program and its alone run, or a
    served (vmapped) reset and an in-process one, are bit-identical with the default emitters only."""
    flags = os.environ.get("XLA_FLAGS", "")
    if pyfuncitem.get_closest_marker("xla_default_code") is None or OLDER_EMITTERS not in flags:
        return None
    default = flags.replace(OLDER_EMITTERS, "--xla_cpu_use_fusion_emitters=true")
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", pyfuncitem.nodeid]
    child = subprocess.run(
        command,
        env={**os.environ, "XLA_FLAGS": default},
        cwd=pyfuncitem.config.rootpath,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if child.returncode != 0:
        pytest.fail(
            f"with XLA's default emitters:\n{child.stdout[-6000:]}{child.stderr[-2000:]}", pytrace=False
        )
    return True


def _xla_accepts(flags: str) -> bool:
    """Whether a jax process starts its CPU backend with XLA_FLAGS=`flags` (about a second, once)."""
    probe = [sys.executable, "-c", "import jax; jax.devices('cpu')"]
    env = {**os.environ, "XLA_FLAGS": flags}
    return subprocess.run(probe, env=env, capture_output=True, timeout=300).returncode == 0
