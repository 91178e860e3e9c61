"""Test configuration. PJRT_NPROC=1 must be set before jax starts a backend: jaxlib 0.10.x deadlocks on a
2-core CPU when two batched LAPACK calls (e.g. flax's orthogonal init under vmap) run at once. The one
place the tests set it: the processes they start inherit it (the code's one place is
`hivex_jax.cli_support.prepare_jax`)."""

import os

os.environ.setdefault("PJRT_NPROC", "1")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
