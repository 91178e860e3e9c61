"""PettingZoo `ParallelEnv` over one hivex_jax world: host-side, NumPy in and out, agents named.

```python
from hivex_jax.interop.pettingzoo import HivexParallelEnv

env = HivexParallelEnv("WindFarmControl-v0", render_mode="rgb_array", max_steps=200)
obs, infos = env.reset(seed=6000)          # seed = the world seed (hivex_jax.world_key(6000))
while env.agents:
    actions = {a: env.action_space(a).sample() for a in env.agents}
    obs, rewards, terminations, truncations, infos = env.step(actions)
frame = env.render()                        # uint8[H, W, 3]
```
Agents that finish early (crash, empty battery) leave `env.agents` on the step they finish, as the
Parallel API requires; the world keeps running for the others. `state()` is the environment's
`global_state` (the MAPPO critic input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hivex_jax.interop._common import (
    ActionLayout,
    HostSession,
    agent_info_at,
    env_id,
    gymnasium_obs_space,
    index_obs,
    require,
    resolve,
    split_obs,
    stack_agent_actions,
)

_pz = require("pettingzoo")
_gym = require("gymnasium")


class HivexParallelEnv(_pz.ParallelEnv):
    """A hivex_jax environment as a PettingZoo `ParallelEnv`.

    Args:
        env: a registry id (then `make_kwargs` go to `hivex_jax.make`) or an environment object.
        params: its `EnvParams` (default: `env.default_params()`); ignored with an id.
        render_mode: None or "rgb_array".
    Observations are a `Box` for vector-only environments and a `Dict` (`vector`, `visual`) otherwise;
    actions follow `ActionLayout` (a `Dict` for hybrid actions). Seeds are world seeds.
    """

    metadata = {"render_modes": ["rgb_array"], "name": "hivex_jax", "is_parallelizable": True}

    def __init__(self, env: Any, params: Any = None, *, render_mode: str | None = None, **make_kwargs: Any):
        self.env, self.params = resolve(env, params, **make_kwargs)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or 'rgb_array'; got {render_mode!r}")
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": env_id(self.env)}
        self.possible_agents = list(self.env.agent_ids)
        self.agents: list[str] = []
        self.layout = ActionLayout.of(self.env, self.params)
        self._session = HostSession(self.env, self.params)
        self._noop = self.layout.noop()
        self._observation_spaces = {
            a: gymnasium_obs_space(self.env, self.params) for a in self.possible_agents
        }
        self._action_spaces = {a: self.layout.gymnasium_space() for a in self.possible_agents}
        self._rng: np.random.Generator | None = None
        self.state_space = _gym.spaces.Box(-np.inf, np.inf, (self._session.global_state_size(),), np.float32)

    # --------------------------------------------------------------------------------- spaces
    # One space object per agent, returned every time (PettingZoo seeds them per agent).
    def observation_space(self, agent: str) -> Any:
        """One agent's observation space (`Box`, or `Dict` with `vector` and `visual`)."""
        return self._lookup(self._observation_spaces, agent)

    def action_space(self, agent: str) -> Any:
        """One agent's action space (`Discrete`, `MultiDiscrete`, `Box`, or a hybrid `Dict`)."""
        return self._lookup(self._action_spaces, agent)

    def _lookup(self, table: dict[str, Any], agent: str) -> Any:
        if agent not in table:
            raise KeyError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
        return table[agent]

    # ---------------------------------------------------------------------------------- API
    @property
    def world_seed(self) -> int | None:
        """The world seed of the current episode."""
        return self._session.world_seed

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode in world `seed` (without a seed: a world drawn from the last seed's stream).

        `options` is accepted for API compatibility and ignored.
        """
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            world = int(seed)
        else:
            if self._rng is None:
                self._rng = np.random.default_rng()
            world = int(self._rng.integers(0, 2**32))
        obs = split_obs(self._session.reset(world))
        self.agents = list(self.possible_agents)
        observations = {a: index_obs(obs, i) for i, a in enumerate(self.possible_agents)}
        infos = {a: {"world_seed": self.world_seed} for a in self.possible_agents}
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Step every live agent; agents missing from `actions` (and finished ones) take the no-op."""
        if not self.agents:
            raise RuntimeError("the episode is over (no live agents): call reset()")
        unknown = set(actions) - set(self.possible_agents)
        if unknown:
            raise KeyError(f"actions for unknown agents {sorted(unknown)}; agents are {self.possible_agents}")
        stacked = stack_agent_actions(actions, tuple(self.possible_agents), self._noop)
        native = self.layout.to_native(stacked, (len(self.possible_agents),))
        obs, reward, term, trunc, info, _ = self._session.step(native)
        obs = split_obs(obs)
        live = [(i, a) for i, a in enumerate(self.possible_agents) if a in self.agents]
        observations = {a: index_obs(obs, i) for i, a in live}
        rewards = {a: float(reward[i]) for i, a in live}
        terminations = {a: bool(term[i]) for i, a in live}
        truncations = {a: bool(trunc[i]) for i, a in live}
        infos = {a: agent_info_at(info, i) for i, a in live}
        self.agents = [a for _, a in live if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """The global state `f32[S]` (`env.global_state`, the MAPPO critic input)."""
        if self._session.state is None:
            raise RuntimeError("call reset() before state()")
        return self._session.global_state()

    def render(self) -> np.ndarray | None:
        """The world's picture `uint8[H, W, 3]` (render_mode "rgb_array"), else None with a warning."""
        if self.render_mode is None:
            _gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._session.state is None:
            raise RuntimeError("call reset() before render()")
        return self._session.render()

    def close(self) -> None:
        """Nothing to release (compiled functions are shared per environment object)."""

    def __repr__(self) -> str:
        return f"HivexParallelEnv({env_id(self.env)}, agents={len(self.possible_agents)})"


def parallel_env(env: Any, params: Any = None, **kwargs: Any) -> HivexParallelEnv:
    """PettingZoo-style constructor: `parallel_env("WindFarmControl-v0", render_mode=..., **make_kwargs)`."""
    return HivexParallelEnv(env, params, **kwargs)


def aec_env(env: Any, params: Any = None, **kwargs: Any) -> Any:
    """The same environment through PettingZoo's AEC (agent-by-agent) API (`parallel_to_aec`)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(HivexParallelEnv(env, params, **kwargs))
