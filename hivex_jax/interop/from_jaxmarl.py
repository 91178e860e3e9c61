"""A JaxMARL environment behind the hivex_jax API, so the bundled trainer, wrappers, evaluation and
`hivex bench` run on it unchanged (e.g. a trainer-level peer: the same IPPO on MPE and on Wind Farm).

```python
env, params = hivex_jax.make("jaxmarl/MPE_simple_spread_v3")      # any jaxmarl.make name after "jaxmarl/"
obs, state = env.reset(key, params)                               # obs["vector"]: f32[A, D]
```
and from the shell `hivex train --config configs/ippo_jaxmarl_mpe_simple_spread.yaml`.

Agent-keyed dicts become a leading agent axis (agents in `env.agents` order). Observations must be
flat boxes; agents with shorter ones are zero-padded at the end to the longest. Actions must be the
same for every agent: `Discrete(n)` becomes one discrete branch of `n`, `Box(low, high, (d,))` `d`
continuous dims in [-1, 1] mapped linearly onto [low, high]. The JaxMARL `step_env` (no auto-reset)
is called; its per-agent `dones` become `terminated` unless the time limit (`EnvParams.max_steps`, default the
JaxMARL env's `max_steps`) ends the episode on that step, which is a truncation: an episode lasts
`max_steps` decisions (JaxMARL's MPE itself raises done one step later, after 26). The world of a
reset is whatever the JaxMARL env draws from the key (so `world_key(seed)` pools work). Reward terms:
one, the JaxMARL reward. `global_state` is every agent's observation concatenated; `render` is a
blank frame (JaxMARL renders with matplotlib on the host).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.core.registry import register_namespace

PREFIX = "jaxmarl/"


@struct.dataclass
class JaxMARLParams:
    max_steps: jax.Array  # i32[], the time limit (truncation)
    task: jax.Array  # i32[], always 0 (one task); present so trainer configs can name it


#: Bounds of `JaxMARLParams` (hivex_jax.core.bounds): checked by `make`, clamped by reset/step.
PARAM_BOUNDS: dict[str, tuple[int, int]] = {"max_steps": (1, 1_000_000), "task": (0, 0)}


@struct.dataclass
class JaxMARLState(EnvState):
    inner: Any  # the JaxMARL env's state
    obs: jax.Array  # f32[A, D], the last observation (for global_state)


class FromJaxMARL(Environment):
    """`jaxmarl.make(name, **kwargs)` as a hivex_jax `Environment`."""

    reward_term_names = ("reward",)
    task_ids = (0,)
    params_type = JaxMARLParams

    def __init__(self, name: str, **kwargs: Any):
        try:
            import jaxmarl
        except ImportError as exc:  # optional dependency
            raise ImportError("jaxmarl/... environments need jaxmarl: pip install -e '.[bench]'") from exc
        # duck-typed: jaxmarl types its spaces as a bare `Space` and its envs without `max_steps`
        self.inner: Any = jaxmarl.make(name, **kwargs)
        self.env_id = PREFIX + name
        self.agents = tuple(self.inner.agents)
        self.num_agents = len(self.agents)
        obs_shapes = {a: tuple(self.inner.observation_space(a).shape) for a in self.agents}
        if any(len(s) != 1 for s in obs_shapes.values()):
            raise ValueError(f"{self.env_id}: only flat (1-D) observations are supported; got {obs_shapes}")
        self.obs_sizes = np.asarray([s[0] for s in obs_shapes.values()])
        self.obs_dim = int(self.obs_sizes.max())
        action_spaces = [self.inner.action_space(a) for a in self.agents]
        first = action_spaces[0]
        if hasattr(first, "n"):
            if any(getattr(s, "n", None) != first.n for s in action_spaces):
                raise ValueError(f"{self.env_id}: agents have different discrete action counts")
            self.discrete_branches, self.continuous_dims = (int(first.n),), 0
            self._low = self._high = None
        else:
            shape = tuple(first.shape)
            if len(shape) != 1 or any(tuple(s.shape) != shape for s in action_spaces):
                raise ValueError(
                    f"{self.env_id}: continuous actions must be flat and the same for every agent"
                )
            self.discrete_branches, self.continuous_dims = (), int(shape[0])
            self._low = jnp.broadcast_to(jnp.asarray(first.low, jnp.float32), shape)
            self._high = jnp.broadcast_to(jnp.asarray(first.high, jnp.float32), shape)

    def default_params(self) -> JaxMARLParams:
        return JaxMARLParams(
            max_steps=jnp.asarray(int(self.inner.max_steps), jnp.int32), task=jnp.asarray(0, jnp.int32)
        )

    def observation_space(self, params: Any = None) -> spaces.Dict:
        return spaces.Dict(
            {"vector": spaces.Box(-np.inf, np.inf, (self.num_agents, self.obs_dim), jnp.float32)}
        )

    def observation_layout(self) -> dict[str, slice]:
        return {"obs": slice(0, self.obs_dim)}

    def global_state(self, state: JaxMARLState, params: Any) -> jax.Array:
        """Every agent's observation concatenated, f32[A * D]."""
        return state.obs.reshape(-1)

    def render(self, state: Any, params: Any) -> jax.Array:
        """A blank uint8[8, 8, 3] frame (JaxMARL's renderers run on the host)."""
        return jnp.zeros((8, 8, 3), jnp.uint8)

    # ----------------------------------------------------------------------------------- hooks
    def _stack_obs(self, obs: dict[str, jax.Array]) -> jax.Array:
        rows = [jnp.pad(obs[a].astype(jnp.float32), (0, self.obs_dim - obs[a].shape[0])) for a in self.agents]
        return jnp.stack(rows)

    def reset_env(self, key: jax.Array, params: JaxMARLParams) -> tuple[dict, JaxMARLState]:
        obs, inner = self.inner.reset(key)
        vector = self._stack_obs(obs)
        state = JaxMARLState(
            step=jnp.asarray(0, jnp.int32), alive=jnp.ones(self.num_agents, bool), inner=inner, obs=vector
        )
        return {"vector": vector}, state

    def step_env(
        self, key: jax.Array, state: JaxMARLState, action: dict, params: JaxMARLParams
    ) -> StepOutput:
        if self.continuous_dims:
            low, high = self._low, self._high
            assert low is not None and high is not None  # set with continuous_dims in __init__
            scaled = low + (action["continuous"] + 1.0) * 0.5 * (high - low)
            actions = {a: scaled[i] for i, a in enumerate(self.agents)}
        else:
            actions = {a: action["discrete"][i, 0] for i, a in enumerate(self.agents)}
        obs, inner, rewards, dones, _ = self.inner.step_env(key, state.inner, actions)
        step = state.step + 1
        reward = jnp.stack([jnp.asarray(rewards[a], jnp.float32) for a in self.agents])
        done = jnp.stack([jnp.asarray(dones[a], bool) for a in self.agents])
        terminated = done & (step < params.max_steps)  # the env's own time limit is a truncation
        vector = self._stack_obs(obs)
        new_state = state.replace(step=step, inner=inner, obs=vector)
        info = {"reward_terms": reward[:, None], "stats": {}}
        return StepOutput({"vector": vector}, new_state, reward, terminated, info)


def make_jaxmarl(name: str, **overrides: Any) -> tuple[FromJaxMARL, JaxMARLParams]:
    """`(env, params)` for `jaxmarl.make(name)`: `max_steps` and `task` (0) set `EnvParams`; every other
    keyword (e.g. `num_agents`) goes to `jaxmarl.make`."""
    dynamic = {k: overrides.pop(k) for k in ("max_steps", "task") if k in overrides}
    env = FromJaxMARL(name, **overrides)
    params = env.default_params()
    if int(dynamic.get("task", 0)) != 0:
        raise ValueError(f"{env.env_id} has one task (0); got task={dynamic['task']}")
    if "max_steps" in dynamic:
        max_steps = jnp.asarray(int(dynamic["max_steps"]), jnp.int32)
        # flax.struct.dataclass adds `replace` at run time; type checkers do not see it
        params = params.replace(max_steps=max_steps)  # pyright: ignore[reportAttributeAccessIssue]
    env.validate_params(params)
    return env, params


# `make("jaxmarl/<name>")`; pyproject.toml's `hivex_jax.namespaces` entry point finds it before this import
register_namespace(PREFIX.rstrip("/"), make_jaxmarl, "a JaxMARL env (jaxmarl.make(name)) behind this API")
