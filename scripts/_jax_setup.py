"""Imported first by the scripts: `prepare_jax()` (PJRT_NPROC=1 unless set) before jax starts a backend,
as the `hivex` command does (hivex_jax/cli_support.py, the one place the code sets it; jaxlib 0.10.x
deadlocks on 2-core CPUs when two batched LAPACK calls run at once)."""

from hivex_jax.cli_support import prepare_jax

prepare_jax()
