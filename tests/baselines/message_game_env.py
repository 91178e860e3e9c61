"""A signalling test env for the trainer with messages: each of 2 agents sees a private bit (from the
world key) and is rewarded 1 on every step its discrete branch picks the *other* agent's bit. Nothing in
an agent's observation depends on the other's bit, so without a message channel the best is chance
(half the steps); with one a speaker can send its bit and the listener copy it from the next step on."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import struct

import hivex_jax
from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import _REGISTRY

ENV_ID = "TinySignalGame-v0"
EPISODE_STEPS = 4  # step 0 hears nothing yet; steps 1-3 can use the partner's message


@struct.dataclass
class SignalParams:
    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(EPISODE_STEPS))


@struct.dataclass
class SignalState(EnvState):
    bit: jax.Array  # i32[2], 0 or 1


class SignalGameEnv(Environment):
    env_id = ENV_ID
    reward_term_names = ("guess",)
    task_ids = (0,)
    params_type = SignalParams
    static_options: ClassVar[tuple[str, ...]] = ()
    discrete_branches = (2,)

    def __init__(self):
        self.num_agents = 2

    def default_params(self) -> SignalParams:
        return SignalParams()

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-1.0, 1.0, (2, 2), jnp.float32)})

    def observation_layout(self) -> dict[str, slice]:
        return {"own_bit": slice(0, 1), "one": slice(1, 2)}

    def _observe(self, state: SignalState) -> dict:
        own = 2.0 * state.bit.astype(jnp.float32) - 1.0
        return {"vector": jnp.stack([own, jnp.ones(2, jnp.float32)], axis=-1)}

    def reset_env(self, key, params):
        bit = jax.random.bernoulli(key, 0.5, (2,)).astype(jnp.int32)
        state = SignalState(step=jnp.int32(0), alive=jnp.ones(2, bool), bit=bit)
        return self._observe(state), state

    def step_env(self, key, state, action, params):
        hit = (action["discrete"][:, 0] == state.bit[::-1]).astype(jnp.float32)  # the partner's bit
        new_state = state.replace(step=state.step + 1)
        return StepOutput(
            obs=self._observe(new_state),
            state=new_state,
            reward=hit,
            terminated=jnp.zeros(2, bool),
            info={"reward_terms": hit[:, None], "raw_reward_terms": hit[:, None], "stats": {}},
        )

    def global_state(self, state, params) -> jax.Array:
        return state.bit.astype(jnp.float32)

    def render(self, state, params) -> jax.Array:
        return jnp.zeros((4, 4, 3), jnp.uint8)


def register() -> str:
    """Register the env once per process; returns its id."""
    if ENV_ID not in _REGISTRY:
        hivex_jax.register(ENV_ID, SignalGameEnv, description="trainer test env: tell the partner your bit")
    return ENV_ID


SIGNAL_CONFIG = {
    "algo": "ippo",
    "env_id": ENV_ID,
    "train_worlds": "0:256",
    "test_worlds": "1000:1064",
    "num_seeds": 1,
    "num_envs": 16,
    "num_steps": 16,
    "total_env_steps": 16 * 16 * 24,
    "chunk_updates": 24,
    "update_epochs": 4,
    "num_minibatches": 2,
    "lr": 3e-3,
    "anneal_lr": False,
    "ent_coef": 0.01,
    "hidden_sizes": [16],
    "train_reward_sharing": 1.0,  # a team reward: the speaker gains from the listener's hits
    "eval_every": 0,
    "gif_frames": 0,
}
