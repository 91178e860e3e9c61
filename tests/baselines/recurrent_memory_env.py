"""A memory test env for the recurrent trainer: each agent sees a cue (0 or 1, from the world key) only
on the first step of an episode; on every later step it is rewarded 1 for picking the cue with its
discrete branch, else 0. Later observations do not depend on the cue, so a feed-forward policy can at
best pick the majority cue (half the reward on balanced worlds) while a recurrent one can recall it."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import struct

import hivex_jax
from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import _REGISTRY

ENV_ID = "TinyCueRecall-v0"
EPISODE_STEPS = 4  # the cue step, then 3 rewarded steps


@struct.dataclass
class CueParams:
    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(EPISODE_STEPS))


@struct.dataclass
class CueState(EnvState):
    cue: jax.Array  # i32[A], 0 or 1


class CueRecallEnv(Environment):
    env_id = ENV_ID
    reward_term_names = ("recall",)
    task_ids = (0,)
    params_type = CueParams
    static_options: ClassVar[tuple[str, ...]] = ("num_agents",)
    continuous_dims = 1  # unused by the reward
    discrete_branches = (2,)

    def __init__(self, num_agents: int = 2):
        self.num_agents = num_agents

    def default_params(self) -> CueParams:
        return CueParams()

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-1.0, 1.0, (self.num_agents, 3), jnp.float32)})

    def observation_layout(self) -> dict[str, slice]:
        return {"cue": slice(0, 1), "first": slice(1, 2), "one": slice(2, 3)}

    def _observe(self, state: CueState) -> dict:
        first = jnp.broadcast_to(state.step == 0, (self.num_agents,))
        cue = jnp.where(first, 2.0 * state.cue - 1.0, 0.0)  # +-1 on the first step, then 0
        # the constant feature keeps later steps' input non-zero, so a GRU state that was never set
        # still moves (a wrongly reset state then shows)
        one = jnp.ones((self.num_agents,), jnp.float32)
        return {"vector": jnp.stack([cue, first.astype(jnp.float32), one], axis=-1)}

    def reset_env(self, key, params):
        state = CueState(
            step=jnp.int32(0),
            alive=jnp.ones(self.num_agents, bool),
            cue=jax.random.bernoulli(key, 0.5, (self.num_agents,)).astype(jnp.int32),
        )
        return self._observe(state), state

    def step_env(self, key, state, action, params):
        recall = ((action["discrete"][:, 0] == state.cue) & (state.step > 0)).astype(jnp.float32)
        new_state = state.replace(step=state.step + 1)
        return StepOutput(
            obs=self._observe(new_state),
            state=new_state,
            reward=recall,
            terminated=jnp.zeros(self.num_agents, bool),
            info={"reward_terms": recall[:, None], "raw_reward_terms": recall[:, None], "stats": {}},
        )

    def global_state(self, state, params) -> jax.Array:
        return (state.step == 0).astype(jnp.float32)[None]

    def render(self, state, params) -> jax.Array:
        return jnp.zeros((4, 4, 3), jnp.uint8)


def register() -> str:
    """Register the env once per process; returns its id."""
    if ENV_ID not in _REGISTRY:
        hivex_jax.register(ENV_ID, CueRecallEnv, description="recurrent trainer test env: recall a cue")
    return ENV_ID


CUE_CONFIG = {
    "algo": "ippo",
    "env_id": ENV_ID,
    "num_agents": 2,
    "train_worlds": "0:256",
    "test_worlds": "1000:1032",
    "num_seeds": 1,
    "num_envs": 16,
    "num_steps": 16,
    "total_env_steps": 16 * 16 * 40,
    "chunk_updates": 40,
    "update_epochs": 4,
    "num_minibatches": 2,
    "lr": 3e-3,
    "anneal_lr": False,
    "ent_coef": 0.01,
    "hidden_sizes": [16],
    "gru_size": 16,
    "eval_every": 0,
    "gif_frames": 0,
}
