"""The adapters auto-reset through `hivex_jax.wrappers.reset_where`: a batch of worlds generates worlds
only on steps where one of them ends (counted by a host callback inside the wrapped env's reset)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import fake_env

from hivex_jax.wrappers import Wrapper

RESETS: list[int] = []


class CountingResets(Wrapper):
    """The env, with a host callback that fires once per reset that actually runs."""

    def reset(self, key, params):
        jax.debug.callback(lambda: RESETS.append(1))
        return self.env.reset(key, params)

    def step(self, key, state, action, params):
        return self.env.step(key, state, action, params)


def test_vmapped_jaxmarl_step_resets_only_when_a_world_is_done():
    pytest.importorskip("jaxmarl", reason="jaxmarl is not installed (pip install 'hivex-jax[dev]')")
    from hivex_jax.interop.jaxmarl import to_jaxmarl

    env, params = fake_env("discrete_vector")  # 6-step episodes
    jm = to_jaxmarl(CountingResets(env), params, obs_format="vector")
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    _, state = jax.vmap(jm.reset)(keys)
    step = jax.jit(jax.vmap(jm.step))
    actions = {a: jnp.zeros((3,), jnp.int32) for a in jm.agents}
    counts, ends = [], []
    for t in range(7):
        RESETS.clear()
        _, state, _, dones, _ = step(keys + t, state, actions)
        jax.block_until_ready(state)
        counts.append(len(RESETS))
        ends.append(bool(jnp.any(dones["__all__"])))
    assert ends == [False] * 5 + [True, False]
    assert counts[5] > 0 and sum(counts) == counts[5]
    assert np.all(np.asarray(state.step) == 1)  # every world restarted on step 6, stepped once since


def test_gymnasium_vector_env_resets_only_when_a_world_is_done():
    pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'hivex-jax[interop]')")
    from hivex_jax.interop.gymnasium import HivexVectorEnv

    env, params = fake_env("discrete_vector")
    venv = HivexVectorEnv(CountingResets(env), params, num_worlds=2, autoreset_mode="same_step")
    RESETS.clear()
    venv.reset(seed=0)
    assert len(RESETS) > 0  # reset() generates the worlds through the same program
    counts = []
    for _ in range(6):
        RESETS.clear()
        _, _, terminated, truncated, _ = venv.step(venv.action_space.sample())
        counts.append((len(RESETS), bool(np.any(truncated))))
    assert [c for c, _ in counts[:5]] == [0] * 5 and counts[5][0] > 0 and counts[5][1]
