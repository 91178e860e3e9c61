"""Shared setup of the trainer tests: the tiny test environment. The compile-time savers (XLA's
optimisation level, the session's compilation cache): tests/conftest.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trainer_fake_env  # noqa: E402

trainer_fake_env.register()
