"""Reuse the tiny trainer-test environment (tests/baselines/trainer_fake_env.py), importable here as it is
in the trainer tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "baselines"))

import trainer_fake_env  # noqa: E402

trainer_fake_env.register()
