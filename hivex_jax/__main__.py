"""`python -m hivex_jax` works where the `hivex` script is not installed."""

from hivex_jax.cli import main

raise SystemExit(main())
