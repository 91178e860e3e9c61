"""The `Environment` base class: a pure, array-native multi-agent API (Gymnax 1.0 order).

```
obs, state = env.reset(key, params)
obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
```
Agents are a leading axis. `step` never resets (auto-reset is a wrapper). The base class validates
inputs at trace time (clear errors instead of silent broadcasts), makes any action valid (NaN
continuous components become 0, then everything, +-inf included, is clipped into range), clamps params
into their documented bounds (`hivex_jax.core.bounds`), masks the rewards of inactive agents and derives
`terminated` / `truncated`; subclasses implement `reset_env` and `step_env`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

import jax
import jax.numpy as jnp
from flax import struct
from jax.experimental import checkify

from hivex_jax.core import bounds, spaces

Obs = dict[str, jax.Array]
Action = dict[str, jax.Array]


@struct.dataclass
class EnvState:
    """Fields every environment state has. Subclasses add their own."""

    step: jax.Array  # i32[], decisions taken this episode
    alive: jax.Array  # bool[A], False once an agent is out for the rest of the episode

    if TYPE_CHECKING:  # flax.struct.dataclass adds `replace` at run time; declared for type checkers

        def replace(self, **changes: Any) -> Self:
            """A copy with `changes` applied (dataclasses.replace)."""
            ...


@struct.dataclass
class StepOutput:
    """What `step_env` returns before the base class applies masks and time limits."""

    obs: Obs
    state: Any
    reward: jax.Array  # f32[A], task-weighted total
    terminated: jax.Array  # bool[A], per-agent terminal (crash, goal reached, env-level end)
    info: dict


class Environment:
    """Base class. Subclasses set the class attributes below and implement the `*_env` hooks."""

    #: registry id, e.g. "WindFarmControl-v0" (set by the subclass; an adapter such as FromJaxMARL sets
    #: it per instance)
    env_id: str = "Environment-v0"
    #: names of the reward terms, in the order of `info["reward_terms"]`'s last axis
    reward_term_names: ClassVar[tuple[str, ...]] = ()
    #: the tasks (code ids as in HIVEX)
    task_ids: ClassVar[tuple[int, ...]] = (0,)
    #: the name of the level field in EnvParams ("pattern" or "terrain_level") and its values
    level_field: ClassVar[str | None] = None
    level_values: ClassVar[tuple[int, ...]] = ()
    #: the EnvParams class
    params_type: ClassVar[type] = object

    num_agents: int
    continuous_dims: int = 0
    discrete_branches: tuple[int, ...] = ()

    # ----------------------------------------------------------------------------------- public API
    @property
    def agent_ids(self) -> tuple[str, ...]:
        """Agent names (used only by adapters): `agent_0`, `agent_1`, ..."""
        return tuple(f"agent_{i}" for i in range(self.num_agents))

    @property
    def name(self) -> str:
        return self.env_id

    def default_params(self) -> Any:
        """The default `EnvParams` (arrays as leaves)."""
        raise NotImplementedError

    def reset(self, key: jax.Array, params: Any) -> tuple[Obs, Any]:
        """Generate a world from `key` and return `(obs, state)`; obs leaves have a leading agent axis."""
        self._check_params(params)
        params = self.clamp_params(params)
        return self.reset_env(key, params)

    def step(
        self, key: jax.Array, state: Any, action: Action, params: Any
    ) -> tuple[Obs, Any, jax.Array, jax.Array, jax.Array, dict]:
        """One decision: `(obs, state, reward f32[A], terminated bool[A], truncated bool[A], info)`."""
        self._check_params(params)
        params = self.clamp_params(params)
        action = self.validate_action(action)
        was_alive = state.alive
        out = self.step_env(key, state, action, params)
        new_state = out.state
        active = was_alive.astype(jnp.float32)
        reward = out.reward * active
        info = dict(out.info)
        if "reward_terms" in info:
            info["reward_terms"] = info["reward_terms"] * active[:, None]
        if "raw_reward_terms" in info:
            info["raw_reward_terms"] = info["raw_reward_terms"] * active[:, None]
        # An agent that was already out stays terminated; once every agent is out the episode ends.
        terminated = out.terminated | ~was_alive
        new_alive = was_alive & ~terminated
        new_state = new_state.replace(alive=new_alive)
        time_up = new_state.step >= params.max_steps
        truncated = jnp.broadcast_to(time_up, terminated.shape) & ~terminated
        info["active"] = was_alive  # agents that acted this step (trainers mask the others)
        info["done"] = jnp.all(terminated | truncated)
        return out.obs, new_state, reward, terminated, truncated, info

    def observation_space(self, params: Any = None) -> spaces.Dict:
        """Observation space with the leading agent axis."""
        raise NotImplementedError

    def action_space(self, params: Any = None) -> spaces.HybridAction:
        """Hybrid action space `{continuous: [A, C], discrete: [A, B]}`."""
        return spaces.HybridAction(self.num_agents, self.continuous_dims, self.discrete_branches)

    def observation_layout(self) -> dict[str, slice]:
        """Named slices into `obs["vector"]`'s last axis."""
        raise NotImplementedError

    def global_state(self, state: Any, params: Any) -> jax.Array:
        """Centralised-critic input `f32[S]` (MAPPO)."""
        raise NotImplementedError

    def render(self, state: Any, params: Any) -> jax.Array:
        """Top-down picture `uint8[H, W, 3]`; pure and vmappable."""
        raise NotImplementedError

    def variant_params(self, params: Any, task: int | None = None, level: int | None = None) -> Any:
        """`params` with another task and/or level (pattern or terrain level)."""
        changes: dict[str, Any] = {}
        if task is not None:
            if task not in self.task_ids:
                raise ValueError(f"{self.env_id}: unknown task {task}; tasks are {self.task_ids}")
            changes["task"] = jnp.asarray(task, jnp.int32)
        if level is not None:
            if self.level_field is None:
                raise ValueError(f"{self.env_id} has no level parameter")
            if level not in self.level_values:
                raise ValueError(
                    f"{self.env_id}: unknown {self.level_field} {level}; values are {self.level_values}"
                )
            changes[self.level_field] = jnp.asarray(level, jnp.int32)
        return params.replace(**changes)

    @property
    def param_bounds(self) -> dict[str, tuple[float, float]]:
        """`{field: (lo, hi)}`, inclusive and elementwise: the `PARAM_BOUNDS` declared next to the params
        class, with bounds that name static options resolved for this env."""
        return bounds.resolve_bounds(bounds.declared_bounds(self.params_type), self)

    def validate_params(self, params: Any) -> Any:
        """Raise ValueError naming the field, value and bounds if concrete `params` (any batch shape) has a
        value outside `param_bounds` or a NaN; returns `params`."""
        self._check_params(params)
        return bounds.validate_params(params, self.param_bounds, self.env_id)

    def clamp_params(self, params: Any) -> Any:
        """`params` clipped into `param_bounds` elementwise (NaN -> lower bound); identity inside them.

        `reset` and `step` call it, so traced params (which cannot raise) stay in the documented range.
        Under `hivex_jax.debug_checks()` it also adds checkify checks of the same bounds."""
        table = self.param_bounds
        if bounds.debug_checks_enabled():
            bounds.check_params(params, table, self.env_id)
        return bounds.clamp_params(params, table)

    # ------------------------------------------------------------------------- subclass hooks
    def reset_env(self, key: jax.Array, params: Any) -> tuple[Obs, Any]:
        raise NotImplementedError

    def step_env(self, key: jax.Array, state: Any, action: Action, params: Any) -> StepOutput:
        raise NotImplementedError

    # ------------------------------------------------------------------------------ validation
    def _check_params(self, params: Any) -> None:
        if not isinstance(params, self.params_type):
            raise TypeError(
                f"{self.env_id}: params must be {self.params_type.__name__} "
                f"(from hivex_jax.make or env.default_params()); got {type(params).__name__}"
            )

    def validate_action(self, action: Any) -> Action:
        """Check shapes/dtypes at trace time and make every value valid: `{continuous f32[A, C], discrete
        i32[A, B]}`. Raises a clear error on bad shapes or dtypes.

        Continuous: a NaN component becomes 0 ("no input" in every HIVEX branch), then every component is
        clipped to [-1, 1]: +-inf and values beyond float32 (1e39) become +-1. Discrete: a choice outside
        [0, n) becomes the nearest valid one (clipped to [0, n - 1]). Under `hivex_jax.debug_checks()`
        non-finite continuous components and out-of-range discrete choices are also checkify errors."""
        a = self.num_agents
        c = self.continuous_dims
        b = len(self.discrete_branches)
        expected = (
            f"{{'continuous': float32[{a}, {c}], 'discrete': int32[{a}, {b}]}} (see env.action_space())"
        )
        if not isinstance(action, Mapping):
            shape = getattr(action, "shape", None)
            got = f"an array of shape {tuple(shape)}" if shape is not None else type(action).__name__
            raise TypeError(f"{self.env_id}: action must be a dict {expected}; got {got}")
        unknown = set(action.keys()) - {"continuous", "discrete"}
        if unknown:
            raise ValueError(f"{self.env_id}: unknown action keys {sorted(unknown)}; expected {expected}")
        out = {}
        for part, width, kind in (("continuous", c, "float"), ("discrete", b, "int")):
            if part not in action:
                if width == 0:
                    out[part] = jnp.zeros((a, 0), jnp.float32 if kind == "float" else jnp.int32)
                    continue
                raise ValueError(f"{self.env_id}: action is missing '{part}'; expected {expected}")
            x = action[part]
            shape = tuple(getattr(x, "shape", ()))
            dtype = jnp.result_type(x)
            if shape != (a, width):
                raise ValueError(
                    f"{self.env_id}: action['{part}'] must have shape ({a}, {width}) "
                    f"[agents, {'dims' if kind == 'float' else 'branches'}]; got shape {shape}. "
                    "Batched actions need jax.vmap over env.step."
                )
            if kind == "float" and not jnp.issubdtype(dtype, jnp.floating):
                raise TypeError(
                    f"{self.env_id}: action['continuous'] must be a float array; got dtype {dtype}"
                )
            if kind == "int" and not jnp.issubdtype(dtype, jnp.integer):
                raise TypeError(
                    f"{self.env_id}: action['discrete'] must be an integer array (branch choices); "
                    f"got dtype {dtype}"
                )
            x = jnp.asarray(x)
            debug = bounds.debug_checks_enabled()
            if kind == "float":
                finite = jnp.isfinite(x)
                if debug:
                    checkify.check(
                        jnp.all(finite),
                        f"{self.env_id}: action['continuous'] has non-finite values {{x}}",
                        x=x,
                    )
                # NaN -> 0 before the clip (jnp.clip keeps NaN); +-inf and values beyond float32 (cast to
                # +-inf) clip to +-1 like any value beyond the box (docs/api.md, "Actions")
                out[part] = jnp.clip(jnp.where(jnp.isnan(x), 0.0, x), -1.0, 1.0).astype(jnp.float32)
            else:
                hi = jnp.asarray(self.discrete_branches, jnp.int32) - 1
                if debug:
                    checkify.check(
                        jnp.all((x >= 0) & (x <= hi)),
                        f"{self.env_id}: action['discrete'] {{x}} is outside [0, branch size) "
                        f"for branches {self.discrete_branches}",
                        x=x,
                    )
                out[part] = jnp.clip(x, 0, hi).astype(jnp.int32)
        return out
