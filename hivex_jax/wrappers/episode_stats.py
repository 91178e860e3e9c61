"""Per-episode statistics: per-agent return and length, per-reward-term sums, HIVEX's statistics."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.core.wrapper import WrappedState, Wrapper


@struct.dataclass
class EpisodeStatisticsState(WrappedState):
    running: dict  # sums of the episode in progress
    last: dict  # sums of the most recently finished episode
    episodes: jax.Array  # i32[], finished episodes so far


class EpisodeStatistics(Wrapper):
    """Accumulates, per agent, the return, steps active, `info["reward_terms"]` sums and the sum of
    every `info["stats"]` entry; `info["episode"]` holds the last finished episode's totals and
    `info["episode"]["done"]` whether one finished on this step. Put it outside `AutoReset`.
    """

    def _zeros(self, key: jax.Array, params: Any) -> dict:
        obs, state = self.env.reset(key, params)
        a = self.num_agents
        k = len(self.reward_term_names)
        action = self.action_space(params).noop()
        _, _, _, _, _, info = self.env.step(key, state, action, params)
        stats = jax.tree.map(jnp.zeros_like, info.get("stats", {}))
        return {
            "return": jnp.zeros(a, jnp.float32),
            "length": jnp.zeros((), jnp.int32),
            "active_steps": jnp.zeros(a, jnp.int32),
            "reward_terms": jnp.zeros((a, k), jnp.float32),
            "stats": stats,
        }

    def reset(self, key: jax.Array, params: Any):
        obs, state = self.env.reset(key, params)
        zeros = jax.eval_shape(self._zeros, key, params)
        zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), zeros)
        return obs, EpisodeStatisticsState(env_state=state, running=zeros, last=zeros, episodes=jnp.int32(0))

    def step(self, key: jax.Array, state: EpisodeStatisticsState, action: Any, params: Any):
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, params
        )
        done = info.get("done", jnp.all(terminated | truncated))
        r = state.running
        running = {
            "return": r["return"] + reward,
            "length": r["length"] + 1,
            "active_steps": r["active_steps"] + info["active"].astype(jnp.int32),
            "reward_terms": r["reward_terms"] + info.get("reward_terms", 0.0),
            "stats": jax.tree.map(lambda a, b: a + b, r["stats"], info.get("stats", {})),
        }
        last = jax.tree.map(lambda new, old: jnp.where(done, new, old), running, state.last)
        running = jax.tree.map(lambda x: jnp.where(done, jnp.zeros_like(x), x), running)
        info = dict(info)
        info["episode"] = {**last, "done": done}
        new_state = EpisodeStatisticsState(
            env_state=env_state,
            running=running,
            last=last,
            episodes=state.episodes + done.astype(jnp.int32),
        )
        return obs, new_state, reward, terminated, truncated, info
