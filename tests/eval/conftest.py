"""Reuse the tiny trainer-test environment (tests/baselines/conftest.py)."""

import importlib.util
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent.parent / "baselines"
if "tests_baselines_conftest" not in sys.modules:
    spec = importlib.util.spec_from_file_location("tests_baselines_conftest", _here / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tests_baselines_conftest"] = module
    spec.loader.exec_module(module)
