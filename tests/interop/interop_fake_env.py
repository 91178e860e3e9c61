"""A tiny environment that exercises every generic path of the adapters.

Vector and uint8 visual observations, a hybrid action (continuous and discrete parts of any width),
and agents that go out early: agent `i` terminates on step `first_out + i * out_spacing`. Rewards
encode the action exactly (`continuous` term: sum_j c_j / 2**j; `discrete` term: 1 + the mixed-radix
number of the branch choices), so a test can tell from the reward which action arrived.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput

IMAGE = 6  # visual observation side, pixels
FRAME = 12  # render side, pixels


@struct.dataclass
class FakeParams:
    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    task_weights: jax.Array = struct.field(default_factory=lambda: jnp.ones((2, 2), jnp.float32))
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(6))
    first_out: jax.Array = struct.field(default_factory=lambda: jnp.int32(2))
    out_spacing: jax.Array = struct.field(default_factory=lambda: jnp.int32(3))


@struct.dataclass
class FakeState(EnvState):
    position: jax.Array  # f32[A, 2] in [0, 1]


class FakeEnv(Environment):
    env_id = "InteropFake-v0"
    reward_term_names = ("continuous", "discrete")
    task_ids = (0, 1)
    task_names = ("plain", "doubled")
    level_field = None
    level_values = ()
    params_type = FakeParams
    static_options: ClassVar[tuple[str, ...]] = (
        "num_agents",
        "continuous_dims",
        "discrete_branches",
        "visual",
    )

    def __init__(
        self,
        num_agents: int = 3,
        continuous_dims: int = 2,
        discrete_branches: tuple[int, ...] = (3, 2),
        visual: bool = True,
    ):
        self.num_agents = num_agents
        self.continuous_dims = continuous_dims
        self.discrete_branches = tuple(discrete_branches)
        self.visual = visual

    def default_params(self) -> FakeParams:
        weights = jnp.asarray([[1.0, 1.0], [2.0, 2.0]], jnp.float32)
        return FakeParams(task_weights=weights)

    def observation_space(self, params=None) -> spaces.Dict:
        parts = {"vector": spaces.Box(0.0, 1.0, (self.num_agents, 4), jnp.float32)}
        if self.visual:
            parts["visual"] = spaces.Box(0, 255, (self.num_agents, IMAGE, IMAGE, 3), jnp.uint8)
        return spaces.Dict(parts)

    def observation_layout(self) -> dict[str, slice]:
        return {"position": slice(0, 2), "time": slice(2, 3), "agent": slice(3, 4)}

    def lifetimes(self, params: FakeParams) -> jax.Array:
        """i32[A]: the step on which each agent goes out."""
        return params.first_out + jnp.arange(self.num_agents, dtype=jnp.int32) * params.out_spacing

    def _observe(self, state: FakeState, params: FakeParams) -> dict[str, jax.Array]:
        a = self.num_agents
        time = jnp.full((a, 1), state.step / params.max_steps, jnp.float32)
        ident = (jnp.arange(a, dtype=jnp.float32) / a)[:, None]
        obs = {"vector": jnp.concatenate([state.position, jnp.clip(time, 0, 1), ident], axis=-1)}
        if self.visual:
            cell = jnp.clip((state.position * IMAGE).astype(jnp.int32), 0, IMAGE - 1)
            rows = jnp.arange(IMAGE)[None, :, None] == cell[:, 1, None, None]
            cols = jnp.arange(IMAGE)[None, None, :] == cell[:, 0, None, None]
            here = (rows & cols).astype(jnp.uint8) * 255
            clock = jnp.broadcast_to((state.step * 10 % 256).astype(jnp.uint8), here.shape)
            who = jnp.broadcast_to((jnp.arange(a) * 40).astype(jnp.uint8)[:, None, None], here.shape)
            obs["visual"] = jnp.stack([here, clock, who], axis=-1)
        return obs

    def reset_env(self, key, params):
        position = jax.random.uniform(key, (self.num_agents, 2))
        state = FakeState(step=jnp.int32(0), alive=jnp.ones(self.num_agents, bool), position=position)
        return self._observe(state, params), state

    def step_env(self, key, state: FakeState, action, params) -> StepOutput:
        c = action["continuous"]
        d = action["discrete"]
        move = jnp.zeros_like(state.position)
        if self.continuous_dims:
            move = move.at[:, : min(2, self.continuous_dims)].set(0.1 * c[:, :2])
        moving = state.alive[:, None]  # agents that are out do not move
        position = jnp.clip(state.position + jnp.where(moving, move, 0.0), 0.0, 1.0)
        cont_term = jnp.sum(c * (0.5 ** jnp.arange(self.continuous_dims)), axis=-1)
        radix = np.cumprod((1,) + self.discrete_branches[:-1]) if self.discrete_branches else np.zeros(0)
        disc_term = 1.0 + jnp.sum(d * jnp.asarray(radix, jnp.int32), axis=-1).astype(jnp.float32)
        raw = jnp.stack([cont_term, disc_term], axis=-1)
        terms = raw * params.task_weights[params.task]
        t = state.step + 1
        new_state = state.replace(step=t, position=position)
        info = {
            "reward_terms": terms,
            "raw_reward_terms": raw,
            "stats": {"distance": jnp.linalg.norm(position - state.position, axis=-1)},
        }
        return StepOutput(
            obs=self._observe(new_state, params),
            state=new_state,
            reward=jnp.sum(terms, axis=-1),
            terminated=t >= self.lifetimes(params),
            info=info,
        )

    def global_state(self, state: FakeState, params) -> jax.Array:
        time = (state.step / params.max_steps).astype(jnp.float32)
        return jnp.concatenate([state.position.reshape(-1), state.alive.astype(jnp.float32), time[None]])

    def render(self, state: FakeState, params) -> jax.Array:
        cell = jnp.clip((state.position * FRAME).astype(jnp.int32), 0, FRAME - 1)
        frame = jnp.zeros((FRAME, FRAME, 3), jnp.uint8)
        return frame.at[cell[:, 1], cell[:, 0]].set(
            jnp.where(state.alive[:, None], 255, 80).astype(jnp.uint8)
        )


def encode_reward(continuous: np.ndarray, discrete: np.ndarray, branches: tuple[int, ...]) -> np.ndarray:
    """The reward FakeEnv pays an active agent for these actions (task 0), f32[...]."""
    c = np.asarray(continuous, np.float64)
    cont = np.sum(c * 0.5 ** np.arange(c.shape[-1]), axis=-1)
    radix = np.cumprod((1,) + tuple(branches[:-1])) if branches else np.zeros(0)
    disc = 1.0 + np.sum(np.asarray(discrete) * radix, axis=-1)
    return (cont + disc).astype(np.float32)
