"""JaxMARL `MultiAgentEnv` adapter: agent-keyed dicts at the boundary, the JAX core underneath.

```python
from jaxmarl.wrappers.baselines import LogWrapper
from hivex_jax.interop.jaxmarl import to_jaxmarl

env = LogWrapper(to_jaxmarl("WindFarmControl-v0", max_steps=500))
obs, state = env.reset(key)                                     # obs: {"agent_0": f32[D], ...}
obs, state, rewards, dones, infos = env.step(key, state, actions)  # dones["__all__"]
```
Everything is pure and jittable, so JaxMARL's wrappers and PureJaxRL-style baselines (IPPO, MAPPO with
`world_state=True`) run unmodified under `jit`/`vmap`. `step` auto-resets when `dones["__all__"]`, as
JaxMARL's base class does (through `hivex_jax.wrappers.reset_where`: a vmapped batch generates
worlds only on steps where one of them is done). Every `infos` leaf has shape `[num_agents]`
(JaxMARL's baselines reshape them to actors): `active`, `terminated`, `truncated`,
`reward_terms/<name>`, `stats/<name>`.

The `EnvParams` travel in the state, so one compiled step serves a vmapped batch that mixes tasks and
levels: `jax.vmap(env.reset)(keys, batched_params)` (auto-resets keep each world's params).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hivex_jax.interop._common import (
    ActionLayout,
    agent_info,
    agent_obs_spaces,
    env_id,
    inner_state,
    require,
    resolve,
)
from hivex_jax.wrappers.autoreset import reset_where

_mae = require("jaxmarl.environments.multi_agent_env", extra="dev")
_spaces = require("jaxmarl.environments.spaces", extra="dev")

OBS_FORMATS = ("flat", "dict", "vector")


@struct.dataclass
class HivexJaxMARLState(_mae.State):
    """JaxMARL's `State` (`done`, `step`) plus the hivex_jax state, the current obs and the params."""

    env_state: Any
    obs: Any  # native obs of the current step (lets `get_obs` serve JaxMARL's `reset_state` path)
    params: Any


class HivexJaxMARLEnv(_mae.MultiAgentEnv):
    """A hivex_jax environment behind JaxMARL's `MultiAgentEnv` interface.

    Args:
        env: a registry id (then `make_kwargs` go to `hivex_jax.make`) or an environment object.
        params: default `EnvParams` for `reset(key)`.
        obs_format: "flat" (default: one f32 vector per agent, visual parts flattened and scaled to
            [0, 1], what JaxMARL's MLP baselines expect), "dict" (the native `{"vector", "visual"}`
            per agent) or "vector" (the vector part only).
        world_state: add `obs["world_state"]` `f32[A, S]` (the global state repeated per agent), the
            input of JaxMARL's MAPPO critics; `world_state_agent_id` appends a one-hot agent id.
    Actions per agent follow `ActionLayout`: an int for one discrete branch, `int[B]` for several,
    `f32[C]` for continuous only, `{"continuous", "discrete"}` for hybrid.
    """

    def __init__(
        self,
        env: Any,
        params: Any = None,
        *,
        obs_format: str = "flat",
        world_state: bool = False,
        world_state_agent_id: bool = False,
        **make_kwargs: Any,
    ):
        self.env, self.params = resolve(env, params, **make_kwargs)
        super().__init__(num_agents=self.env.num_agents)
        if obs_format not in OBS_FORMATS:
            raise ValueError(f"obs_format must be one of {OBS_FORMATS}; got {obs_format!r}")
        self.obs_format = obs_format
        self.world_state = world_state
        self.world_state_agent_id = world_state_agent_id
        self.agents = list(self.env.agent_ids)
        self.layout = ActionLayout.of(self.env, self.params)
        self._parts = agent_obs_spaces(self.env, self.params)
        if obs_format == "vector" and "vector" not in self._parts:
            raise ValueError(f"{env_id(self.env)} has no 'vector' observation")
        obs_space = self._make_obs_space()
        self.observation_spaces = {a: obs_space for a in self.agents}
        self.action_spaces = {a: self.layout.jaxmarl_space() for a in self.agents}

    # --------------------------------------------------------------------------------- spaces
    def _make_obs_space(self) -> Any:
        if self.obs_format == "vector":
            box = self._parts["vector"]
            return _spaces.Box(box.low, box.high, box.shape, box.dtype)
        if self.obs_format == "dict":
            return _spaces.Dict(
                {k: _spaces.Box(b.low, b.high, b.shape, b.dtype) for k, b in self._parts.items()}
            )
        lows, highs = [], []
        for box in self._parts.values():
            scale = 255.0 if np.issubdtype(np.dtype(box.dtype), np.integer) else 1.0
            size = int(np.prod(box.shape))
            lows.append(np.full(size, box.low / scale, np.float32))
            highs.append(np.full(size, box.high / scale, np.float32))
        low, high = np.concatenate(lows), np.concatenate(highs)
        return _spaces.Box(jnp.asarray(low), jnp.asarray(high), low.shape, jnp.float32)

    def world_state_size(self) -> int:
        """Width of `obs["world_state"]` per agent (S, plus A with the agent id)."""
        _, state = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0), self.params)
        size = int(jax.eval_shape(self.env.global_state, state, self.params).shape[0])
        return size + (self.num_agents if self.world_state_agent_id else 0)

    @property
    def name(self) -> str:
        return env_id(self.env)

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """All agents are one class (HIVEX agents are homogeneous and share a policy)."""
        return {"agent": list(self.agents)}

    # -------------------------------------------------------------------------- conversions
    def _agent_obs(self, obs: dict[str, jax.Array]) -> Any:
        """Native obs `{part: [A, ...]}` -> per-agent obs stacked on axis 0 in `obs_format`."""
        if self.obs_format == "vector":
            return obs["vector"]
        if self.obs_format == "dict":
            return dict(obs)
        flat = []
        for key, box in self._parts.items():
            x = obs[key].reshape(self.num_agents, -1)
            if np.issubdtype(np.dtype(box.dtype), np.integer):
                x = x.astype(jnp.float32) / 255.0
            flat.append(x.astype(jnp.float32))
        return jnp.concatenate(flat, axis=-1)

    def _obs_dict(self, obs: dict[str, jax.Array], env_state: Any, params: Any) -> dict[str, Any]:
        stacked = self._agent_obs(obs)
        out = {a: jax.tree.map(lambda x, i=i: x[i], stacked) for i, a in enumerate(self.agents)}
        if self.world_state:
            gs = self.env.global_state(env_state, params)
            ws = jnp.broadcast_to(gs[None], (self.num_agents, gs.shape[0]))
            if self.world_state_agent_id:
                ws = jnp.concatenate([ws, jnp.eye(self.num_agents, dtype=ws.dtype)], axis=-1)
            out["world_state"] = ws
        return out

    def _native_action(self, actions: dict[str, Any]) -> dict[str, jax.Array]:
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise KeyError(f"{self.name}: actions missing for agents {missing}")
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[actions[a] for a in self.agents])
        return self.layout.to_native(stacked, (self.num_agents,), jnp)

    def _wrap(self, obs: Any, env_state: Any, params: Any, done: jax.Array) -> HivexJaxMARLState:
        return HivexJaxMARLState(
            done=done, step=inner_state(env_state).step, env_state=env_state, obs=obs, params=params
        )

    # ---------------------------------------------------------------------------------- API
    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key: jax.Array, params: Any = None) -> tuple[dict[str, Any], HivexJaxMARLState]:
        """A new world from `key` (`params` default to the adapter's)."""
        params = self.params if params is None else params
        obs, env_state = self.env.reset(key, params)
        state = self._wrap(obs, env_state, params, jnp.asarray(False))
        return self._obs_dict(obs, env_state, params), state

    @partial(jax.jit, static_argnums=(0,))
    def step(
        self,
        key: jax.Array,
        state: HivexJaxMARLState,
        actions: dict[str, Any],
        reset_state: HivexJaxMARLState | None = None,
    ) -> tuple[dict, HivexJaxMARLState, dict, dict, dict]:
        """JaxMARL's step with auto-reset; a reset keeps the world's params (mixed-task batches)."""
        key, key_reset = jax.random.split(key)
        obs_st, states_st, rewards, dones, infos = self.step_env(key, state, actions)
        # hivex_jax's one auto-reset select: under vmap, worlds are generated only when one is done
        if reset_state is None:
            reset, reset_args = self.reset, (key_reset, state.params)
        else:
            reset, reset_args = self._given_reset, (reset_state,)
        obs, states = reset_where(dones["__all__"], reset, reset_args, (obs_st, states_st))
        return obs, states, rewards, dones, infos

    def _given_reset(self, reset_state: HivexJaxMARLState) -> tuple[dict[str, Any], HivexJaxMARLState]:
        """`(obs, state)` of a caller's `reset_state` (JaxMARL's `step(..., reset_state)`)."""
        return self.get_obs(reset_state), reset_state

    def step_env(
        self, key: jax.Array, state: HivexJaxMARLState, actions: dict[str, Any]
    ) -> tuple[dict, HivexJaxMARLState, dict, dict, dict]:
        """One decision without auto-reset."""
        native = self._native_action(actions)
        obs, env_state, reward, term, trunc, info = self.env.step(key, state.env_state, native, state.params)
        done_all = info["done"]
        new_state = self._wrap(obs, env_state, state.params, done_all)
        finished = term | trunc
        rewards = {a: reward[i] for i, a in enumerate(self.agents)}
        dones = {a: finished[i] for i, a in enumerate(self.agents)}
        dones["__all__"] = done_all
        infos = agent_info(info, tuple(self.env.reward_term_names))
        infos["terminated"] = term
        infos["truncated"] = trunc
        return self._obs_dict(obs, env_state, state.params), new_state, rewards, dones, infos

    def get_obs(self, state: HivexJaxMARLState) -> dict[str, Any]:
        """The observations of `state` (stored at its reset/step)."""
        return self._obs_dict(state.obs, state.env_state, state.params)

    @partial(jax.jit, static_argnums=(0,))
    def get_avail_actions(self, state: HivexJaxMARLState) -> dict[str, jax.Array]:
        """Per agent `bool[sum(branches)]`: every choice while active; only the no-op (0) once out."""
        branches = self.layout.discrete_branches
        alive = inner_state(state.env_state).alive
        if not branches:
            return {a: jnp.zeros((0,), bool) for a in self.agents}
        noop_only = np.concatenate([np.arange(n) == 0 for n in branches])
        mask = jnp.where(alive[:, None], True, jnp.asarray(noop_only)[None, :])
        return {a: mask[i] for i, a in enumerate(self.agents)}

    def render(self, state: HivexJaxMARLState) -> jax.Array:
        """The world's picture `uint8[H, W, 3]`."""
        return self.env.render(state.env_state, state.params)

    def __repr__(self) -> str:
        return f"HivexJaxMARLEnv({self.name}, obs_format={self.obs_format!r})"


def to_jaxmarl(env: Any, params: Any = None, **kwargs: Any) -> HivexJaxMARLEnv:
    """`HivexJaxMARLEnv(env, params, **kwargs)`: JaxMARL's `MultiAgentEnv` view of a hivex_jax env."""
    return HivexJaxMARLEnv(env, params, **kwargs)
