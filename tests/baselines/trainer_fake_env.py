"""A tiny environment that exercises everything the trainer must handle generically: vector + uint8
visual observations, a hybrid action (continuous dims and two discrete branches), agents that become
inactive early, world seeds and a global state. It is small so tests compile and run in seconds.

Each agent `a` sits at `x_a` in [-1, 1] with a target `g_a` (from the world key). It moves by
0.25 * continuous action; reward = 1 - |x - g| (+0.5 if discrete branch 0 picks 1 while x < g,
+0.25 if branch 1 picks 2). An agent that leaves [-0.9, 0.9] terminates (inactive afterwards);
the episode is truncated after `max_steps`.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import struct

import hivex_jax
from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import _REGISTRY

ENV_ID = "TinyTrainerTest-v0"


@struct.dataclass
class TinyParams:
    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.ones((1, 3), jnp.float32))
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(12))


@struct.dataclass
class TinyState(EnvState):
    x: jax.Array  # f32[A]
    goal: jax.Array  # f32[A]


class TinyEnv(Environment):
    env_id = ENV_ID
    reward_term_names = ("closeness", "direction_bonus", "branch_bonus")
    task_ids = (0,)
    params_type = TinyParams
    static_options: ClassVar[tuple[str, ...]] = ("num_agents",)
    continuous_dims = 1
    discrete_branches = (2, 3)

    def __init__(self, num_agents: int = 3):
        self.num_agents = num_agents

    def default_params(self) -> TinyParams:
        return TinyParams()

    def observation_space(self, params=None) -> spaces.Dict:
        a = self.num_agents
        return spaces.Dict(
            {
                "vector": spaces.Box(-2.0, 2.0, (a, 3 + a), jnp.float32),
                "visual": spaces.Box(0, 255, (a, 8, 8, 1), jnp.uint8),
            }
        )

    def observation_layout(self) -> dict[str, slice]:
        return {"x": slice(0, 1), "goal": slice(1, 2), "time": slice(2, 3), "agent_id": slice(3, None)}

    def _observe(self, state: TinyState, params: TinyParams) -> dict:
        a = self.num_agents
        time = jnp.broadcast_to(state.step.astype(jnp.float32) / params.max_steps, (a,))
        vector = jnp.concatenate(
            [state.x[:, None], state.goal[:, None], time[:, None], jnp.eye(a, dtype=jnp.float32)], axis=1
        )
        cells = jnp.clip(((state.x + 1.0) * 4.0).astype(jnp.int32), 0, 7)
        visual = (jnp.arange(8)[None, :] == cells[:, None]).astype(jnp.uint8) * 255  # [A, 8]
        visual = jnp.broadcast_to(visual[:, None, :, None], (a, 8, 8, 1))
        return {"vector": vector, "visual": visual}

    def reset_env(self, key, params):
        k_goal, k_x = jax.random.split(key)
        a = self.num_agents
        state = TinyState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            x=jax.random.uniform(k_x, (a,), minval=-0.5, maxval=0.5),
            goal=jax.random.uniform(k_goal, (a,), minval=-0.8, maxval=0.8),
        )
        return self._observe(state, params), state

    def step_env(self, key, state, action, params):
        alive = state.alive
        x = jnp.where(alive, state.x + 0.25 * action["continuous"][:, 0], state.x)
        x = x + 0.01 * jax.random.normal(key, x.shape) * alive
        raw = jnp.stack(
            [
                1.0 - jnp.abs(x - state.goal),
                0.5 * ((action["discrete"][:, 0] == 1) & (state.x < state.goal)),
                0.25 * (action["discrete"][:, 1] == 2),
            ],
            axis=-1,
        ).astype(jnp.float32)
        terms = raw * params.task_weights[params.task]
        new_state = state.replace(step=state.step + 1, x=x)
        return StepOutput(
            obs=self._observe(new_state, params),
            state=new_state,
            reward=terms.sum(-1),
            terminated=jnp.abs(x) > 0.9,
            info={
                "reward_terms": terms,
                "raw_reward_terms": raw,
                "stats": {"distance": jnp.abs(x - state.goal)},
            },
        )

    def global_state(self, state, params) -> jax.Array:
        time = state.step.astype(jnp.float32) / params.max_steps
        return jnp.concatenate([state.x, state.goal, state.alive.astype(jnp.float32), time[None]])

    def render(self, state, params) -> jax.Array:
        image = jnp.zeros((16, 16, 3), jnp.uint8)
        cells = jnp.clip(((state.x + 1.0) * 8.0).astype(jnp.int32), 0, 15)
        rows = jnp.arange(self.num_agents) * 4
        return image.at[rows, cells].set(255)


def scripted_policy(obs: dict, params: TinyParams) -> dict:
    """Move towards the goal; discrete choices that earn the bonuses."""
    x, goal = obs["vector"][:, 0], obs["vector"][:, 1]
    a = x.shape[0]
    return {
        "continuous": jnp.clip(4.0 * (goal - x), -1.0, 1.0)[:, None],
        "discrete": jnp.stack([(x < goal).astype(jnp.int32), jnp.full((a,), 2, jnp.int32)], axis=-1),
    }


TinyEnv.scripted_policy = staticmethod(scripted_policy)  # like the real envs: the class exposes it


def register() -> str:
    """Register the env once per process; returns its id."""
    if ENV_ID not in _REGISTRY:
        hivex_jax.register(ENV_ID, TinyEnv, description="trainer test env")
    return ENV_ID


TINY_CONFIG = {
    "algo": "ippo",
    "env_id": ENV_ID,
    "task": 0,
    "num_agents": 3,
    "train_worlds": "100:110",
    "test_worlds": "200:202",
    "num_seeds": 2,
    "num_envs": 4,
    "num_steps": 8,
    "total_env_steps": 192,  # 6 updates of 32 env steps = 3 chunks of 2
    "chunk_updates": 2,
    "update_epochs": 2,
    "num_minibatches": 2,
    "hidden_sizes": [16],
    "cnn_channels": [4],
    "eval_every": 2,
    "checkpoint_every": 1,
    "gif_stride": 2,
    "gif_frames": 4,
}
