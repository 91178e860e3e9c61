"""Shared fixtures: one default env whose compiled functions are shared with `check_env`."""

from __future__ import annotations

import pytest

import hivex_jax
from hivex_jax.core.check import _jitted
from hivex_jax.envs.drone_based_reforestation import DroneBasedReforestation


@pytest.fixture(scope="session")
def env() -> DroneBasedReforestation:
    return DroneBasedReforestation()


@pytest.fixture(scope="session")
def fns(env):
    """Compiled reset/step/render/global_state of `env` (the same objects `check_env` uses)."""
    return _jitted(env)


@pytest.fixture(scope="session")
def base_state(env, fns):
    return fns.reset(hivex_jax.world_key(0), env.default_params())[1]
