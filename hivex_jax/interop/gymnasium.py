"""Gymnasium views of hivex_jax environments.

* `HivexVectorEnv`: a `gymnasium.vector.VectorEnv` over a jitted, vmapped batch of worlds in which every
  agent is one sub-environment (index `world * num_agents + agent`): the parameter-sharing view that
  single-agent libraries train on. Auto-reset follows Gymnasium 1.x (`metadata["autoreset_mode"]`,
  next-step by default, same-step on request).
* `HivexGymEnv`: a plain `gymnasium.Env` for one-agent configurations (e.g. `num_agents=1`).
* `register_envs()`: registers `hivex_jax/<id>` ids for `gymnasium.make` / `gymnasium.make_vec`.

```python
from hivex_jax.interop.gymnasium import HivexVectorEnv

envs = HivexVectorEnv("WindFarmControl-v0", num_worlds=16, max_steps=500)   # 16 * 8 sub-envs
obs, info = envs.reset(seed=0)                    # worlds 0..15
obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
```

Agents that finish early. A sub-environment's episode is its agent's life: on the step an agent is
out (crash, empty battery) it reports `terminated`. Its world runs on for the others, so until that
world ends the sub-environment sits in a waiting episode: its agent is inactive (`info["active"]`
False), its reward is 0, and the waiting episode ends with `terminated=True` on the world's last step
(its value is exactly 0, so cutting the bootstrap there is right). Filter on `info["active"]` to leave
those steps out of statistics. When an agent goes out on the step just before its world ends, the
waiting episode has no steps of its own and its `terminated` coincides with the next-step reset step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hivex_jax.core.seeding import adapter_episode_key, adapter_next_world_seed, adapter_step_key, world_key
from hivex_jax.interop._common import (
    ActionLayout,
    HostSession,
    agent_info,
    agent_info_at,
    compiled,
    env_id,
    gymnasium_obs_space,
    index_obs,
    inner_state,
    params_batch_axis,
    require,
    resolve,
    split_obs,
)
from hivex_jax.wrappers.autoreset import reset_where, select_where

gym = require("gymnasium")
from gymnasium.vector import AutoresetMode  # noqa: E402  (after the clear-error import above)
from gymnasium.vector.utils import batch_space  # noqa: E402

NAMESPACE = "hivex_jax"


# =============================================================================== single agent
class HivexGymEnv(gym.Env):
    """A one-agent hivex_jax configuration as a `gymnasium.Env` (NumPy in and out).

    `reset(seed=s)` plays world `s`; `reset()` draws the next world from the seeded stream.
    For several agents use `HivexVectorEnv` (parameter sharing) or the PettingZoo adapter.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, env: Any, params: Any = None, *, render_mode: str | None = None, **make_kwargs: Any):
        self.env, self.params = resolve(env, params, **make_kwargs)
        if self.env.num_agents != 1:
            raise ValueError(
                f"{env_id(self.env)} has {self.env.num_agents} agents; gymnasium.Env is the one-agent "
                "view (pass num_agents=1 where the environment supports it). For several agents use "
                "HivexVectorEnv (one sub-environment per agent) or hivex_jax.interop.pettingzoo."
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array'; got {render_mode!r}")
        self.render_mode = render_mode
        self.layout = ActionLayout.of(self.env, self.params)
        self.observation_space = gymnasium_obs_space(self.env, self.params)
        self.action_space = self.layout.gymnasium_space()
        self._session = HostSession(self.env, self.params)

    @property
    def world_seed(self) -> int | None:
        """The world seed of the current episode."""
        return self._session.world_seed

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        """Start an episode in world `seed` (or the next world of the seeded stream)."""
        super().reset(seed=seed)
        world = int(seed) if seed is not None else int(self.np_random.integers(0, 2**32))
        obs = split_obs(self._session.reset(world))
        return index_obs(obs, 0), {"world_seed": self.world_seed}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """One decision of the single agent."""
        native = self.layout.to_native(action, (1,))
        obs, reward, term, trunc, info, _ = self._session.step(native)
        info = agent_info_at(info, 0)
        info["world_seed"] = self.world_seed
        return index_obs(split_obs(obs), 0), float(reward[0]), bool(term[0]), bool(trunc[0]), info

    def render(self) -> np.ndarray | None:
        """The world's picture `uint8[H, W, 3]` in render_mode "rgb_array"."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._session.state is None:
            raise RuntimeError("call reset() before render()")
        return self._session.render()

    def state(self) -> np.ndarray:
        """The environment's global state `f32[S]`."""
        return self._session.global_state()


# =============================================================================== vector view
@struct.dataclass
class VectorState:
    """The batch of worlds behind `HivexVectorEnv`."""

    env_state: Any  # the environment state, leading world axis [W]
    world_seed: jax.Array  # u32[W], the world each slot is playing
    reset_next: jax.Array  # bool[W], next-step mode: the world ended and resets on the next step()


_MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP,
}


def _zeros_like_shapes(shapes: Any) -> Any:
    """Zero arrays (and zero PRNG keys) with the given shapes: a placeholder state."""

    def zeros(s):
        if jnp.issubdtype(s.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(jnp.zeros(s.shape + (2,), jnp.uint32))
        return jnp.zeros(s.shape, s.dtype)

    return jax.tree.map(zeros, shapes)


def _vector_functions(env: Any, params_axis: int | None, mode: AutoresetMode) -> dict[str, Any]:
    """One jitted batched step (world axis first; outputs flattened to sub-environments).

    Resets go through the same program (`force` worlds are reset to `reset_seeds`), so the world
    generator is compiled once per vector env instead of once for `reset` and once for auto-reset.
    """
    names = tuple(env.reward_term_names)
    a = env.num_agents
    reset_worlds = jax.vmap(lambda seed, p: env.reset(world_key(seed), p), in_axes=(0, params_axis))

    def flat(tree):
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), tree)

    def per_agent(x):  # [W] -> [W, A]
        return jnp.broadcast_to(x[:, None], (x.shape[0], a))

    def step_world(seed, state, action, params):
        ep_key = adapter_episode_key(seed)
        key = adapter_step_key(ep_key, inner_state(state).step)
        was_alive = inner_state(state).alive
        obs, state, reward, term, trunc, info = env.step(key, state, action, params)
        done = info["done"]
        # A sub-environment's episode is its agent's life, then a waiting episode until the world ends.
        sub_term = (term & was_alive) | (done & ~was_alive)
        sub_trunc = trunc & was_alive
        info = agent_info(info, names)
        return obs, state, reward, sub_term, sub_trunc, info, done, adapter_next_world_seed(ep_key)

    step_worlds = jax.vmap(step_world, in_axes=(0, 0, 0, params_axis))

    def step(vstate: VectorState, action, params, reset_seeds, force):
        obs, state, reward, term, trunc, info, done, new_seed = step_worlds(
            vstate.world_seed, vstate.env_state, action, params
        )
        # per world: this call is a real step (not a reset step, not a reset() call)
        stepped = ~force & ~vstate.reset_next if mode == AutoresetMode.NEXT_STEP else ~force
        need = ~stepped if mode == AutoresetMode.NEXT_STEP else ~stepped | done
        seed = jnp.where(force, reset_seeds, new_seed)
        # World generation runs only on calls where some world actually resets.
        out_obs, out_state = reset_where(need, reset_worlds, (seed, params), (obs, state))
        seeds = jnp.where(need, seed, vstate.world_seed)
        reward = jnp.where(stepped[:, None], reward, 0.0)
        term = term & stepped[:, None]
        trunc = trunc & stepped[:, None]
        # a reset step reports nothing of the discarded step (no agent acted)
        info = jax.tree.map(lambda x: select_where(stepped, x, jnp.zeros_like(x)), info)
        if mode == AutoresetMode.NEXT_STEP:
            step_mask = per_agent(stepped)
            reset_next = done & stepped
            final_obs = None
        else:
            # same-step: where a sub-env is done, the step's info belongs to the episode that ended
            step_mask = per_agent(stepped) & ~(term | trunc)
            reset_next = jnp.zeros_like(done)
            final_obs = flat(obs)
        outputs = {
            "obs": flat(out_obs),
            "reward": reward.reshape(-1),
            "terminated": term.reshape(-1),
            "truncated": trunc.reshape(-1),
            "info": flat(info),
            "step_mask": step_mask.reshape(-1),
            "world_seed": flat(per_agent(seeds)),
            "final_obs": final_obs,
        }
        return VectorState(out_state, seeds, reset_next), outputs

    def placeholder(params, num_worlds):
        seeds = jnp.zeros((num_worlds,), jnp.uint32)
        _, state = jax.eval_shape(reset_worlds, seeds, params)
        return VectorState(_zeros_like_shapes(state), seeds, jnp.zeros((num_worlds,), bool))

    return {"step": jax.jit(step), "placeholder": placeholder}


def _with_masks(info: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    """Gymnasium's vector-info layout: every key `k` paired with a boolean mask `_k`."""
    out: dict[str, Any] = {}
    for k, v in info.items():
        out[k] = _with_masks(v, mask) if isinstance(v, dict) else v
        out[f"_{k}"] = mask
    return out


class HivexVectorEnv(gym.vector.VectorEnv):
    """A batch of hivex_jax worlds as a Gymnasium `VectorEnv` with one sub-environment per agent.

    Args:
        env: a registry id (then `make_kwargs` go to `hivex_jax.make`) or an environment object.
        params: `EnvParams`, or a batch of `num_worlds` of them (`hivex_jax.stack_params`, e.g. a mix of
            tasks and levels: still one compiled step).
        num_worlds: worlds stepped together (or give `num_envs`, a multiple of the agent count).
        autoreset_mode: "next_step" (Gymnasium's default) or "same_step" (`info["final_obs"]`).
        arrays: "numpy" (default) or "jax" (device arrays in and out, e.g. for
            `gymnasium.wrappers.vector.JaxToTorch` or `hivex_jax.interop.dlpack`).
        render_mode: None or "rgb_array" (`render()` returns one frame per world).
    Sub-environment `i` is agent `i % num_agents` of world `i // num_agents`.
    """

    def __init__(
        self,
        env: Any,
        params: Any = None,
        *,
        num_worlds: int | None = None,
        num_envs: int | None = None,
        autoreset_mode: str | AutoresetMode = "next_step",
        arrays: str = "numpy",
        render_mode: str | None = None,
        **make_kwargs: Any,
    ):
        self.env, self.params = resolve(env, params, **make_kwargs)
        agents = self.env.num_agents
        self.params_axis = params_batch_axis(self.env, self.params)
        if num_worlds is None:
            if num_envs is None:
                num_worlds = 1 if self.params_axis is None else int(jax.tree.leaves(self.params)[0].shape[0])
            elif num_envs % agents:
                raise ValueError(f"num_envs={num_envs} must be a multiple of the {agents} agents per world")
            else:
                num_worlds = int(num_envs // agents)
        if num_envs is not None and num_envs != num_worlds * agents:
            raise ValueError(f"num_envs={num_envs} != num_worlds={num_worlds} x {agents} agents")
        if self.params_axis == 0:
            batch = int(jax.tree.leaves(self.params)[0].shape[0])
            if batch != num_worlds:
                raise ValueError(f"a batch of {batch} EnvParams needs num_worlds={batch}; got {num_worlds}")
        if autoreset_mode not in _MODES:
            raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step'; got {autoreset_mode!r}")
        if arrays not in ("numpy", "jax"):
            raise ValueError(f"arrays must be 'numpy' or 'jax'; got {arrays!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array'; got {render_mode!r}")
        self.num_worlds = int(num_worlds)
        self.num_agents = agents
        self.num_envs = self.num_worlds * agents
        self.autoreset_mode = _MODES[autoreset_mode]
        self.arrays = arrays
        self.render_mode = render_mode
        self.metadata = {
            "autoreset_mode": self.autoreset_mode,
            "render_modes": ["rgb_array"],
            "jax": arrays == "jax",
        }
        self.layout = ActionLayout.of(self.env, self.params)
        self.single_observation_space = gymnasium_obs_space(self.env, self.params)
        self.single_action_space = self.layout.gymnasium_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._fns = compiled(
            self.env,
            f"vector/{self.params_axis}/{self.autoreset_mode.value}",
            lambda: _vector_functions(self.env, self.params_axis, self.autoreset_mode),
        )
        self._render = compiled(
            self.env,
            f"vector_render/{self.params_axis}",
            lambda: jax.jit(jax.vmap(self.env.render, in_axes=(0, self.params_axis))),
        )
        self.vector_state: VectorState | None = None
        self._no_seeds = jnp.zeros((self.num_worlds,), jnp.uint32)
        self._placeholder: VectorState | None = None
        self._no_force = jnp.zeros((self.num_worlds,), bool)

    # ---------------------------------------------------------------------------------- API
    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        """Reset every world: `seed=s` plays worlds s, s+1, ...; a list gives one world seed per world."""
        super().reset(seed=seed if isinstance(seed, int | None) else None)
        if seed is None:
            seeds = self.np_random.integers(0, 2**32, self.num_worlds)
        elif isinstance(seed, int | np.integer):
            seeds = int(seed) + np.arange(self.num_worlds)
        else:
            seeds = np.asarray(list(seed), np.int64)
            if seeds.shape != (self.num_worlds,):
                raise ValueError(f"give one seed per world ({self.num_worlds}); got {seeds.shape[0]}")
        seeds = jnp.asarray((seeds % 2**32).astype(np.uint32))
        if self._placeholder is None:  # shapes only: a stand-in state that the forced reset replaces
            self._placeholder = self._fns["placeholder"](self.params, self.num_worlds)
        placeholder = self._placeholder
        noop = self.layout.to_native(
            self.layout.noop((self.num_worlds, self.num_agents)), (self.num_worlds, self.num_agents)
        )
        everything = jnp.ones((self.num_worlds,), bool)
        self.vector_state, out = self._fns["step"](placeholder, noop, self.params, seeds, everything)
        info = _with_masks({"world_seed": out["world_seed"]}, np.ones(self.num_envs, bool))
        return self._out(split_obs(out["obs"])), self._out(info)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        """Step every world; `actions` batched over sub-environments in `single_action_space`'s layout."""
        if self.vector_state is None:
            raise RuntimeError("call reset() before step()")
        xp = jnp if self.arrays == "jax" else np
        native = self.layout.to_native(actions, (self.num_worlds, self.num_agents), xp)
        self.vector_state, out = self._fns["step"](
            self.vector_state, native, self.params, self._no_seeds, self._no_force
        )
        step_mask = np.asarray(out["step_mask"])
        info = _with_masks(dict(out["info"]), step_mask)
        info["world_seed"] = out["world_seed"]
        info["_world_seed"] = np.ones(self.num_envs, bool)
        obs = split_obs(out["obs"])
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            done = np.asarray(out["terminated"]) | np.asarray(out["truncated"])
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_info = _with_masks(self._host(dict(out["info"])), done)
            if done.any():
                host_final = self._host(split_obs(out["final_obs"]))
                for i in np.flatnonzero(done):
                    final_obs[i] = index_obs(host_final, i)
            info.update(final_obs=final_obs, _final_obs=done, final_info=final_info, _final_info=done)
        return (
            self._out(obs),
            self._out(out["reward"]),
            self._out(out["terminated"]),
            self._out(out["truncated"]),
            self._out(info),
        )

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One picture `uint8[H, W, 3]` per world (not per sub-environment)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self.vector_state is None:
            raise RuntimeError("call reset() before render()")
        frames = np.asarray(self._render(self.vector_state.env_state, self.params))
        return tuple(frames)

    def global_state(self) -> Any:
        """The global state of every world, `f32[W, S]` (the MAPPO critic input)."""
        fn = compiled(
            self.env,
            f"vector_global_state/{self.params_axis}",
            lambda: jax.jit(jax.vmap(self.env.global_state, in_axes=(0, self.params_axis))),
        )
        if self.vector_state is None:
            raise RuntimeError("call reset() before global_state()")
        return self._out(fn(self.vector_state.env_state, self.params))

    # ------------------------------------------------------------------------------ helpers
    @staticmethod
    def _host(tree: Any) -> Any:
        return jax.tree.map(np.asarray, tree)

    def _out(self, tree: Any) -> Any:
        """NumPy (default) or JAX arrays; Python objects (masks, final_obs) pass through."""
        if self.arrays == "jax":
            return tree
        return jax.tree.map(lambda x: x if isinstance(x, np.ndarray) else np.asarray(x), tree)

    def __repr__(self) -> str:
        return (
            f"HivexVectorEnv({env_id(self.env)}, num_worlds={self.num_worlds}, "
            f"num_envs={self.num_envs}, autoreset_mode={self.autoreset_mode.value})"
        )


# =============================================================================== registration
def register_envs(namespace: str = NAMESPACE) -> list[str]:
    """Register every hivex_jax id as `<namespace>/<id>` for `gymnasium.make` and `gymnasium.make_vec`.

    `gymnasium.make("hivex_jax/WindFarmControl-v0", num_agents=1)` builds a `HivexGymEnv`;
    `gymnasium.make_vec("hivex_jax/WindFarmControl-v0", num_envs=64, vectorization_mode="vector_entry_point")`
    a `HivexVectorEnv` (extra keyword arguments go to `hivex_jax.make`). Idempotent; returns the ids.
    """
    import hivex_jax

    ids = []
    for hivex_id in hivex_jax.registered_envs():
        gym_id = f"{namespace}/{hivex_id}"
        if gym_id not in gym.registry:
            gym.register(
                id=gym_id,
                entry_point="hivex_jax.interop.gymnasium:HivexGymEnv",
                vector_entry_point="hivex_jax.interop.gymnasium:HivexVectorEnv",
                kwargs={"env": hivex_id},
                disable_env_checker=True,
            )
        ids.append(gym_id)
    return ids
