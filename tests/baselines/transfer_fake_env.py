"""The tiny trainer env without the one-hot agent id in its observation: each agent sees only its own
position, goal and the time, so a policy trained with one agent count acts with any other (the zero-shot
transfer tests). `TinyTrainerTest-v0` itself keeps the id, the case where transfer must be refused."""

from __future__ import annotations

import jax.numpy as jnp
from trainer_fake_env import TinyEnv

import hivex_jax
from hivex_jax.core import spaces
from hivex_jax.core.registry import _REGISTRY

ENV_ID = "TinyTransferTest-v0"


class TinyCountFreeEnv(TinyEnv):
    env_id = ENV_ID

    def observation_space(self, params=None) -> spaces.Dict:
        a = self.num_agents
        return spaces.Dict(
            {
                "vector": spaces.Box(-2.0, 2.0, (a, 3), jnp.float32),
                "visual": spaces.Box(0, 255, (a, 8, 8, 1), jnp.uint8),
            }
        )

    def observation_layout(self) -> dict[str, slice]:
        return {"x": slice(0, 1), "goal": slice(1, 2), "time": slice(2, 3)}

    def _observe(self, state, params) -> dict:
        obs = super()._observe(state, params)
        return {**obs, "vector": obs["vector"][:, :3]}  # drop the agent id


def register() -> str:
    """Register the env once per process; returns its id."""
    if ENV_ID not in _REGISTRY:
        hivex_jax.register(ENV_ID, TinyCountFreeEnv, description="transfer test env")
    return ENV_ID
