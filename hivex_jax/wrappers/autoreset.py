"""Same-step auto-reset: when every agent is done, the returned obs/state are a fresh episode's."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hivex_jax.wrappers.base import Wrapper


class AutoReset(Wrapper):
    """Gym-style auto-reset. `info["done"]` marks the last step of an episode.

    With `final_obs=True`, `info["final_obs"]` holds the observation the episode ended on (before the
    reset), so trainers can bootstrap on truncation. Opt-in, because it doubles stored observations.
    The reset key is split from the step key, so a rollout stays a pure function of its keys.
    """

    def __init__(self, env: Any, final_obs: bool = False):
        super().__init__(env)
        self.final_obs = final_obs

    def reset(self, key: jax.Array, params: Any):
        return self.env.reset(key, params)

    def next_episode(self, key: jax.Array, state: Any, params: Any):
        """`(obs, state)` the next episode starts from, given the finished `state`: a fresh reset.
        Subclasses override this alone to restart differently (e.g. on the same world)."""
        return self.env.reset(key, params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        key_step, key_reset = jax.random.split(key)
        obs, state, reward, terminated, truncated, info = self.env.step(key_step, state, action, params)
        done = jnp.all(terminated | truncated)
        reset_obs, reset_state = self.next_episode(key_reset, state, params)
        pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(done, x, y), a, b)  # noqa: E731
        info = dict(info)
        if self.final_obs:
            info["final_obs"] = obs
        info["done"] = done
        return pick(reset_obs, obs), pick(reset_state, state), reward, terminated, truncated, info
