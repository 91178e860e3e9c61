"""Shared fixtures: the registered env (FrameStack) and its unwrapped env, with compiled functions."""

from __future__ import annotations

import pytest

import hivex_jax
from hivex_jax.core.check import _jitted


@pytest.fixture(scope="session")
def registered():
    """(FrameStack-wrapped env, default params) as `hivex_jax.make` returns them."""
    return hivex_jax.make("WildfireResourceManagement-v0")


@pytest.fixture(scope="session")
def env(registered):
    """The unwrapped `WildfireResourceManagement`."""
    return registered[0].env


@pytest.fixture(scope="session")
def params(registered):
    return registered[1]


@pytest.fixture(scope="session")
def fns(env):
    """Compiled reset/step/render/global_state of the unwrapped env (shared with `check_env`)."""
    return _jitted(env)
