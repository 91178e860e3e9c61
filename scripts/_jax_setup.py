"""Imported first by the scripts: the one place they set PJRT_NPROC=1, before jax starts a backend
(jaxlib 0.10.x deadlocks on 2-core CPUs when two batched LAPACK calls run at once). The `hivex` command
sets it in `hivex_jax.cli`, the tests in tests/conftest.py."""

import os

os.environ.setdefault("PJRT_NPROC", "1")
