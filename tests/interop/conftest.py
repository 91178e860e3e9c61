"""Shared fixtures: every registered environment (short episodes) and the fake environment variants.

Environments are session-scoped so each env object compiles its functions once for all adapter tests.
"""

from __future__ import annotations

import pytest
from interop_fake_env import FakeEnv

import hivex_jax

#: episode length used for registered environments (keeps every test short)
MAX_STEPS = 20

FAKE_CONFIGS = {
    "hybrid_visual": {},
    "discrete_vector": {"continuous_dims": 0, "discrete_branches": (4,), "visual": False},
    "continuous_vector": {"continuous_dims": 3, "discrete_branches": (), "visual": False},
    "multidiscrete_visual": {"num_agents": 2, "continuous_dims": 0, "discrete_branches": (2, 3)},
}


#: registered environments that run the full adapter matrix by default (the reference environment);
#: every other one runs it with `-m slow` and gets the API checkers and shape-level checks by default,
#: since each full run recompiles its world generator inside another program.
FULL_BY_DEFAULT = ("WindFarmControl-v0",)

_MADE: dict[str, tuple] = {}


def made(env_id: str) -> tuple:
    """One `(env, params)` per registered id for the whole session, with `max_steps=MAX_STEPS`."""
    if env_id not in _MADE:
        _MADE[env_id] = hivex_jax.make(env_id, max_steps=MAX_STEPS)
    return _MADE[env_id]


@pytest.fixture(scope="session", params=hivex_jax.registered_envs())
def registered(request):
    """`(env, params)` of each registered environment with `max_steps=MAX_STEPS`."""
    return made(request.param)


@pytest.fixture(
    scope="session",
    params=[
        pytest.param(env_id, marks=() if env_id in FULL_BY_DEFAULT else pytest.mark.slow)
        for env_id in hivex_jax.registered_envs()
    ],
)
def registered_full(request):
    """Like `registered`, for the expensive checks: `slow` except for FULL_BY_DEFAULT."""
    return made(request.param)


_FAKES: dict[str, tuple] = {}


def fake_env(name: str) -> tuple:
    """One `(env, params)` per FakeEnv variant for the whole session (its compiled functions are reused)."""
    if name not in _FAKES:
        env = FakeEnv(**FAKE_CONFIGS[name])
        _FAKES[name] = (env, env.default_params())
    return _FAKES[name]


@pytest.fixture(scope="session", params=list(FAKE_CONFIGS))
def fake(request):
    """`(env, params)` of each FakeEnv variant (6-step episodes, agents out on steps 2, 5, 8)."""
    return fake_env(request.param)


@pytest.fixture(scope="session")
def fake_hybrid():
    """The FakeEnv with a visual obs, a hybrid action (2 continuous, branches (3, 2)) and 3 agents."""
    return fake_env("hybrid_visual")
