"""Shared pieces of the adapters: resolving `(env, params)`, per-agent spaces, action conversion.

Nothing here imports an optional library at module import; `gymnasium` and `jaxmarl` are imported
inside the functions that build their spaces.
"""

from __future__ import annotations

import dataclasses
import importlib
import weakref
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core import spaces
from hivex_jax.core.seeding import (
    adapter_episode_key,
    adapter_next_world_seed,
    adapter_step_key,
    seed_from_key,
    world_key,
)

#: the extra that installs the adapters' libraries (pyproject.toml)
INSTALL_HINT = "pip install 'hivex-jax[interop]'"


def require(module: str, extra: str = "interop") -> ModuleType:
    """Import an optional dependency, or fail with the install command that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"hivex_jax.interop needs the optional package '{module.split('.')[0]}': "
            f"pip install 'hivex-jax[{extra}]' (or pip install {module.split('.')[0]})"
        ) from e


# ------------------------------------------------------------------------------- (env, params)
_MADE: dict[tuple, tuple[Any, Any]] = {}


def resolve(env: Any, params: Any = None, **make_kwargs: Any) -> tuple[Any, Any]:
    """`(env, params)` from an env object (params default to `env.default_params()`) or a registry id.

    Ids with the same keyword arguments share one env object, so compiled functions are reused by
    every adapter built from them (e.g. a checker that constructs the environment several times).
    """
    if isinstance(env, str):
        if params is not None:
            raise TypeError("pass either an environment id with make() options, or an env with params")
        import hivex_jax

        try:
            cache_key = (env, tuple(sorted(make_kwargs.items())))
            hash(cache_key)
        except TypeError:
            return hivex_jax.make(env, **make_kwargs)
        if cache_key not in _MADE:
            _MADE[cache_key] = hivex_jax.make(env, **make_kwargs)
        return _MADE[cache_key]
    if make_kwargs:
        raise TypeError(
            f"options {sorted(make_kwargs)} need an environment id; with an env object pass params instead"
        )
    if params is None:
        params = env.default_params()
    return env, params


def params_batch_axis(env: Any, params: Any) -> int | None:
    """0 if every leaf of `params` has one more leading axis than the defaults (a batch), else None."""
    default = env.default_params()
    extra = {
        jnp.ndim(x) - jnp.ndim(d)
        for x, d in zip(jax.tree.leaves(params), jax.tree.leaves(default), strict=True)
    }
    if extra == {0}:
        return None
    if extra == {1}:
        return 0
    raise ValueError("params must be one EnvParams or a batch stacked with hivex_jax.stack_params")


def env_id(env: Any) -> str:
    """The registry id of `env` (through wrappers)."""
    return str(getattr(env, "env_id", type(env).__name__))


# ------------------------------------------------------------------------------- compiled functions
_COMPILED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def compiled(env: Any, name: str, build: Any) -> Any:
    """The function `build()` made once per env object and name (jit caches are per function object)."""
    per_env = _COMPILED.setdefault(env, {})
    if name not in per_env:
        per_env[name] = build()
    return per_env[name]


# ------------------------------------------------------------------------------- observations
def agent_obs_spaces(env: Any, params: Any = None) -> dict[str, spaces.Box]:
    """Per-agent observation parts: our `Box(shape=(A, ...))` spaces with the agent axis dropped."""
    full = env.observation_space(params)
    out = {}
    for key, box in full.spaces.items():
        out[key] = spaces.Box(box.low, box.high, tuple(box.shape[1:]), box.dtype)
    return out


def gymnasium_obs_space(env: Any, params: Any = None) -> Any:
    """One agent's observation as a Gymnasium space: a `Box` for one part, a `Dict` for several."""
    gym_spaces = require("gymnasium.spaces")
    parts = {
        key: gym_spaces.Box(
            low=_bound(box.low, box.dtype),
            high=_bound(box.high, box.dtype),
            shape=box.shape,
            dtype=np.dtype(box.dtype),
        )
        for key, box in agent_obs_spaces(env, params).items()
    }
    if len(parts) == 1:
        return next(iter(parts.values()))
    return gym_spaces.Dict(parts)


def _bound(value: float, dtype: Any) -> Any:
    if np.issubdtype(np.dtype(dtype), np.integer):
        return int(value)
    return float(value)


def split_obs(obs: Mapping[str, Any]) -> Any:
    """Native obs dict -> the adapters' obs: the array itself when there is one part, else the dict."""
    if len(obs) == 1:
        return next(iter(obs.values()))
    return dict(obs)


def index_obs(obs: Any, i: Any) -> Any:
    """Entry `i` of every leaf of an obs (array or dict)."""
    if isinstance(obs, Mapping):
        return {k: v[i] for k, v in obs.items()}
    return obs[i]


def to_numpy(tree: Any) -> Any:
    """Every leaf as a NumPy array (copies device arrays to the host)."""
    return jax.tree.map(np.asarray, tree)


# ------------------------------------------------------------------------------- actions
def continuous_action(x: Any, xp: Any = np) -> Any:
    """Continuous actions as float32 by the library's rule (docs/api.md, "Actions"): NaN -> 0, then
    clipped to [-1, 1], so +-inf and float64 values beyond float32 (1e39) become +-1. Applied here, in
    the input's own precision, so that a float64 1e39 is clipped rather than cast to inf first."""
    a = xp.asarray(x)
    if not xp.issubdtype(a.dtype, xp.floating):
        a = a.astype(xp.float32)
    return xp.clip(xp.where(xp.isnan(a), 0.0, a), -1.0, 1.0).astype(xp.float32)


@dataclasses.dataclass(frozen=True)
class ActionLayout:
    """How one agent's action looks to the outside, and its conversion to the native hybrid action.

    | parts                    | per-agent action                                             |
    |--------------------------|--------------------------------------------------------------|
    | continuous and discrete  | `{"continuous": f32[C], "discrete": int[B]}` (a `Dict`)       |
    | continuous only          | `f32[C]` (a `Box` in [-1, 1])                                 |
    | one discrete branch      | an integer (a `Discrete(n)`)                                  |
    | several discrete branches| `int[B]` (a `MultiDiscrete`)                                  |
    """

    continuous_dims: int
    discrete_branches: tuple[int, ...]

    @classmethod
    def of(cls, env: Any, params: Any = None) -> ActionLayout:
        """The layout of `env`'s hybrid action space."""
        space = env.action_space(params)
        c = int(space.spaces["continuous"].shape[-1])
        branches = tuple(int(n) for n in space.spaces["discrete"].nvec)
        return cls(c, branches)

    @property
    def kind(self) -> str:
        """'hybrid', 'continuous', 'discrete', 'multi_discrete' or 'none'."""
        c, b = self.continuous_dims, len(self.discrete_branches)
        if c and b:
            return "hybrid"
        if c:
            return "continuous"
        if b == 1:
            return "discrete"
        if b:
            return "multi_discrete"
        return "none"

    # ---- spaces
    def gymnasium_space(self) -> Any:
        """One agent's action space as a Gymnasium space."""
        gym_spaces = require("gymnasium.spaces")
        box = gym_spaces.Box(-1.0, 1.0, (self.continuous_dims,), np.float32)
        multi = gym_spaces.MultiDiscrete(np.asarray(self.discrete_branches, np.int64))
        return {
            "hybrid": lambda: gym_spaces.Dict({"continuous": box, "discrete": multi}),
            "continuous": lambda: box,
            "discrete": lambda: gym_spaces.Discrete(self.discrete_branches[0]),
            "multi_discrete": lambda: multi,
            "none": lambda: box,
        }[self.kind]()

    def jaxmarl_space(self) -> Any:
        """One agent's action space as a JaxMARL space."""
        jm = require("jaxmarl.environments.spaces", extra="dev")
        box = jm.Box(-1.0, 1.0, (self.continuous_dims,), jnp.float32)
        return {
            "hybrid": lambda: jm.Dict(
                {"continuous": box, "discrete": jm.MultiDiscrete(list(self.discrete_branches))}
            ),
            "continuous": lambda: box,
            "discrete": lambda: jm.Discrete(self.discrete_branches[0]),
            "multi_discrete": lambda: jm.MultiDiscrete(list(self.discrete_branches)),
            "none": lambda: box,
        }[self.kind]()

    # ---- conversion
    def to_native(self, action: Any, lead: tuple[int, ...], xp: Any = np) -> dict[str, Any]:
        """This layout with leading axes `lead` -> `{continuous: f32[*lead, C], discrete: i32[*lead, B]}`."""
        c, b = self.continuous_dims, len(self.discrete_branches)
        kind = self.kind
        try:
            if kind == "hybrid":
                cont = continuous_action(action["continuous"], xp).reshape(lead + (c,))
                disc = xp.asarray(action["discrete"]).astype(xp.int32).reshape(lead + (b,))
            elif kind == "continuous":
                cont = continuous_action(action, xp).reshape(lead + (c,))
                disc = xp.zeros(lead + (0,), xp.int32)
            elif kind in ("discrete", "multi_discrete"):
                cont = xp.zeros(lead + (0,), xp.float32)
                disc = xp.asarray(action).astype(xp.int32).reshape(lead + (b,))
            else:
                cont = xp.zeros(lead + (0,), xp.float32)
                disc = xp.zeros(lead + (0,), xp.int32)
        except (TypeError, ValueError, KeyError, IndexError, OverflowError) as e:
            raise ValueError(
                f"actions for {lead} agents must match the {kind} action space "
                f"(continuous dims {c}, discrete branches {self.discrete_branches}); got "
                f"{_describe(action)}: {e}"
            ) from e
        return {"continuous": cont, "discrete": disc}

    def from_native(self, native: Mapping[str, Any]) -> Any:
        """The inverse of `to_native` (leading axes kept)."""
        kind = self.kind
        if kind == "hybrid":
            return {"continuous": native["continuous"], "discrete": native["discrete"]}
        if kind in ("continuous", "none"):
            return native["continuous"]
        if kind == "discrete":
            return native["discrete"][..., 0]
        return native["discrete"]

    def noop(self, lead: tuple[int, ...] = ()) -> Any:
        """The all-zero action (no-op in every HIVEX branch) in this layout, as NumPy."""
        native = {
            "continuous": np.zeros(lead + (self.continuous_dims,), np.float32),
            "discrete": np.zeros(lead + (len(self.discrete_branches),), np.int64),
        }
        return self.from_native(native)


def _describe(x: Any) -> str:
    if isinstance(x, Mapping):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in x.items()) + "}"
    shape = getattr(x, "shape", None)
    if shape is not None:
        return f"{getattr(x, 'dtype', '')}{tuple(shape)}"
    return type(x).__name__


def stack_agent_actions(actions: Mapping[str, Any], agent_ids: tuple[str, ...], fill: Any) -> Any:
    """`{agent: action}` -> actions stacked on a leading agent axis; missing agents get `fill`."""
    per_agent = [actions.get(a, fill) for a in agent_ids]
    if isinstance(fill, Mapping):
        return {k: np.stack([np.asarray(p[k]) for p in per_agent]) for k in fill}
    return np.stack([np.asarray(p) for p in per_agent])


# ------------------------------------------------------------------------------- info
def agent_info(info: Mapping[str, Any], reward_term_names: tuple[str, ...]) -> dict[str, Any]:
    """The per-agent parts of a native `info` (every leaf `[A, ...]`), reward terms split by name."""
    out: dict[str, Any] = {"active": info["active"]}
    if "reward_terms" in info:
        terms = info["reward_terms"]
        out["reward_terms"] = {name: terms[..., i] for i, name in enumerate(reward_term_names)}
    if "stats" in info:
        out["stats"] = dict(info["stats"])
    return out


# ------------------------------------------------------------------------------- keys
# Every adapter derives its keys from the integer world seed the same way (`hivex_jax.core.seeding`),
# so world `s` driven by the same actions gives the same trajectory through PettingZoo, Gymnasium and
# the vector view. The short names below are the adapters' (and their tests') old names for them.
world_seed_from_key = seed_from_key
episode_key = adapter_episode_key
step_key = adapter_step_key
next_world_seed = adapter_next_world_seed


def inner_state(state: Any) -> Any:
    """The innermost environment state below any stack of hivex_jax wrappers."""
    from hivex_jax.core.wrapper import WrappedState

    while isinstance(state, WrappedState):
        state = state.env_state
    return state


def _host_functions(env: Any) -> dict[str, Any]:
    """Jitted single-world `reset`, `step`, `global_state` and `render` (the env's own signatures)."""
    return {
        "reset": jax.jit(env.reset),
        "step": jax.jit(env.step),
        "global_state": jax.jit(env.global_state),
        "render": jax.jit(env.render),
    }


def host_functions(env: Any) -> dict[str, Any]:
    """`_host_functions(env)`, compiled once per env object (shared by every host-side adapter)."""
    return compiled(env, "host", lambda: _host_functions(env))


class HostSession:
    """One world stepped from the host: NumPy out, keys derived from the world seed."""

    def __init__(self, env: Any, params: Any):
        self.env = env
        self.params = params
        self.fns = host_functions(env)
        self.names = tuple(env.reward_term_names)
        self.state: Any = None
        self.world_seed: int | None = None
        self._episode_key: jax.Array | None = None
        self._t = 0

    def reset(self, world_seed: int) -> dict[str, np.ndarray]:
        """Start an episode in world `world_seed`; returns the native obs as NumPy (`[A, ...]`)."""
        self.world_seed = int(world_seed) % 2**32
        obs, self.state = self.fns["reset"](world_key(self.world_seed), self.params)
        self._episode_key = adapter_episode_key(self.world_seed)
        self._t = 0
        return {k: np.array(v) for k, v in obs.items()}

    def step(self, native_action: dict[str, np.ndarray]) -> tuple:
        """One decision: `(obs, reward, terminated, truncated, per-agent info, done)` as NumPy."""
        if self.state is None or self._episode_key is None:  # reset() sets both
            raise RuntimeError("call reset() before step()")
        key = adapter_step_key(self._episode_key, self._t)
        obs, self.state, reward, term, trunc, info = self.fns["step"](
            key, self.state, native_action, self.params
        )
        self._t += 1
        return (
            {k: np.array(v) for k, v in obs.items()},
            np.asarray(reward),
            np.asarray(term),
            np.asarray(trunc),
            to_numpy(agent_info(info, self.names)),
            bool(info["done"]),
        )

    def global_state(self) -> np.ndarray:
        """The centralised state `f32[S]` of the current world."""
        return np.asarray(self.fns["global_state"](self.state, self.params))

    def global_state_size(self) -> int:
        """S, from shapes only (traced once per env object; nothing is computed)."""

        def size() -> int:
            _, state = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0), self.params)
            return int(jax.eval_shape(self.env.global_state, state, self.params).shape[0])

        return compiled(self.env, "global_state_size", size)

    def render(self) -> np.ndarray:
        """The current world's picture `uint8[H, W, 3]`."""
        return np.asarray(self.fns["render"](self.state, self.params))


def agent_info_at(info: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Agent `i`'s entries of a per-agent info tree, as Python scalars."""
    return jax.tree.map(lambda x: x[i].item(), info)
