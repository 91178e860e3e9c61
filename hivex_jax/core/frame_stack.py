"""Observation stacking as ML-Agents does it: the last k frames concatenated, newest last."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.wrapper import WrappedState, Wrapper


@struct.dataclass
class FrameStackState(WrappedState):
    frames: dict  # per obs key: [A, k, ...] (oldest first)


class FrameStack(Wrapper):
    """Stack `num_frames` frames of the observation keys in `stacks` (e.g. `{"vector": 2}`).

    `vector` f32[A, D] becomes f32[A, k*D]; `visual` [A, H, W, C] becomes [A, H, W, k*C]. Older
    frames start as zeros at reset (ML-Agents' stacking sensor does the same). Keys not named are
    passed through unstacked. Put `AutoReset` outside `FrameStack`, so stacks restart each episode.
    """

    def __init__(self, env: Any, stacks: dict[str, int]):
        super().__init__(env)
        self.stacks = {k: int(v) for k, v in stacks.items() if int(v) > 1}

    def _stack(self, frames: dict, obs: dict) -> dict:
        out = dict(obs)
        for k, frame_buf in frames.items():
            moved = jnp.moveaxis(frame_buf, 1, -2)  # [A, ..., k, C]
            out[k] = moved.reshape(*moved.shape[:-2], -1)
        return out

    def reset(self, key: jax.Array, params: Any):
        obs, state = self.env.reset(key, params)
        frames = {}
        for k, n in self.stacks.items():
            x = obs[k]
            buf = jnp.zeros((x.shape[0], n) + x.shape[1:], x.dtype)
            frames[k] = buf.at[:, -1].set(x)
        return self._stack(frames, obs), FrameStackState(env_state=state, frames=frames)

    def step(self, key: jax.Array, state: FrameStackState, action: Any, params: Any):
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, params
        )
        frames = {
            k: jnp.concatenate([buf[:, 1:], obs[k][:, None]], axis=1) for k, buf in state.frames.items()
        }
        stacked = self._stack(frames, obs)
        return (
            stacked,
            FrameStackState(env_state=env_state, frames=frames),
            reward,
            terminated,
            truncated,
            info,
        )

    def observation_space(self, params: Any = None) -> spaces.Dict:
        inner = self.env.observation_space(params)
        out = {}
        for k, s in inner.spaces.items():
            n = self.stacks.get(k, 1)
            shape = s.shape[:-1] + (s.shape[-1] * n,)
            out[k] = spaces.Box(min(s.low, 0.0), max(s.high, 0.0), shape, s.dtype)
        return spaces.Dict(out)

    def observation_layout(self) -> dict[str, slice]:
        """Slices of the newest frame (the last block of the stacked vector)."""
        inner = self.env.observation_layout()
        n = self.stacks.get("vector", 1)
        if n == 1:
            return inner
        width = self.env.observation_space().spaces["vector"].shape[-1]
        offset = (n - 1) * width
        return {k: slice(s.start + offset, s.stop + offset) for k, s in inner.items()}
