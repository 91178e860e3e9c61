"""Sessions of one environment stepped together: a `SessionPool` holds every session of one env id (and
one set of static options) in fixed-size slots of one batched state, and steps the sessions that sent
an action in one jitted, vmapped call. No HTTP here (`hivex_jax.serve.server` adds the requests).

Slots: the batched state, params and episode keys have `capacity` rows, a power of two that doubles
(up to the server's session limit) only when every slot is taken, so the compiled step changes only at
those sizes, never with the number of sessions or of requests in a batch. Rows without an action this
batch are computed and discarded (`where(mask, new, old)`).

Keys (`hivex_jax.core.seeding`): a session on world seed `w` is reset from `world_key(w)`, the public
world. Its decision at step `t` (0-based) uses `adapter_step_key(root, t)`, where the root is
`adapter_episode_key(w)` (the host adapters' public rule: the served episode equals the in-process one
with the same world seed and actions) when the server exposes its state, and otherwise that key folded
with a 64-bit secret drawn for the session (`step_root_key`), so an agent cannot compute the draws its
steps will make from the seed it chose.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import adapter_episode_key, adapter_step_key, world_key


class RequestError(ValueError):
    """A request the server refuses: HTTP `status` (4xx) and a one-line message naming the problem."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())


@dataclasses.dataclass
class Session:
    """One episode being played: where it lives in its pool and what it has earned so far (host side)."""

    session_id: str
    pool: SessionPool
    slot: int
    env_id: str
    world_seed: int
    task: int
    level: int | None
    options: dict[str, Any]
    params: Any  # the session's EnvParams (numpy leaves)
    visual_encoding: str = "list"
    client: str = "local"  # who opened it (the client's address): the per-client session quota counts these
    owner: str = "local"  # whose it is (a token, an address or a WebSocket connection): only it may use it
    secret: tuple[int, int] | None = None  # the step keys' 64-bit salt; None: the public in-process rule
    step: int = 0
    done: bool = False
    closed: bool = False
    returns: np.ndarray | None = None  # f64[A]
    reward_terms: np.ndarray | None = None  # f64[A, K]
    stats: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    last_used: float = dataclasses.field(default_factory=time.monotonic)

    def touch(self) -> None:
        """Mark the session used now (the idle timeout counts from here)."""
        self.last_used = time.monotonic()


def step_root_key(world_seed: jax.Array, secret: jax.Array, salted: jax.Array) -> jax.Array:
    """`u32[2]`: the key a session's step keys fold their step index into (`adapter_step_key`): the
    public `adapter_episode_key(world_seed)`, or that key folded with the two words of `secret` (`u32[2]`)
    where `salted`. Traceable, so one compiled reset serves both."""
    public = adapter_episode_key(world_seed)
    salted_key = jax.random.fold_in(jax.random.fold_in(public, secret[0]), secret[1])
    return jnp.where(salted, salted_key, public)


def secret_words(secret: tuple[int, int] | None) -> tuple[np.ndarray, np.bool_]:
    """`(u32[2], salted)`: `secret` as `step_root_key`'s arguments (zeros and False for the public rule)."""
    return np.asarray(secret or (0, 0), np.uint32), np.bool_(secret is not None)


def _rows(tree: Any, capacity: int) -> Any:
    """Zeros shaped `[capacity, *leaf.shape]` for every leaf of an abstract `tree`."""
    return jax.tree.map(lambda s: jnp.zeros((capacity, *s.shape), s.dtype), tree)


def _grow(tree: Any, capacity: int) -> Any:
    """`tree`'s rows padded with zero rows to `capacity`."""
    return jax.tree.map(
        lambda x: jnp.concatenate([x, jnp.zeros((capacity - x.shape[0], *x.shape[1:]), x.dtype)]), tree
    )


class SessionPool:
    """Fixed-size slots for the sessions of one `(env, static options)`; `step` advances any subset."""

    def __init__(self, env: Any, template_params: Any, capacity: int, max_capacity: int):
        self.env = env
        # numpy leaves: every session's params are cast to these dtypes and shapes, so one program serves all
        self.template = jax.tree.map(np.asarray, template_params)
        self.capacity = capacity
        self.max_capacity = max_capacity
        self.sessions: dict[int, Session] = {}
        obs_shape, state_shape = jax.eval_shape(env.reset, world_key(0), self.template)
        self.states = _rows(state_shape, capacity)
        self.params = _rows(jax.eval_shape(lambda: self.template), capacity)
        self.episode_keys = np.zeros((capacity, 2), np.uint32)
        self._reset = jax.jit(self._reset_slot, donate_argnums=(0, 1))
        self._step = jax.jit(self._step_slots, donate_argnums=(0,))

    # ------------------------------------------------------------------------------ compiled parts
    def _reset_slot(self, states: Any, params: Any, slot: jax.Array, world_seed, secret, salted, slot_params):
        obs, state = self.env.reset(world_key(world_seed), slot_params)
        states = jax.tree.map(lambda rows, x: rows.at[slot].set(x), states, state)
        params = jax.tree.map(lambda rows, x: rows.at[slot].set(x), params, slot_params)
        return states, params, obs, step_root_key(world_seed, secret, salted)

    def _step_slots(self, states: Any, params: Any, episode_keys: jax.Array, t: jax.Array, action, mask):
        keys = jax.vmap(adapter_step_key)(episode_keys, t)
        obs, new_states, reward, terminated, truncated, info = jax.vmap(self.env.step)(
            keys, states, action, params
        )

        def keep(new: jax.Array, old: jax.Array) -> jax.Array:
            return jnp.where(mask.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

        return jax.tree.map(keep, new_states, states), (obs, reward, terminated, truncated, info)

    # ----------------------------------------------------------------------------------- host side
    @property
    def full(self) -> bool:
        """Whether every slot is taken and the pool cannot grow."""
        return len(self.sessions) >= self.max_capacity

    def _free_slot(self) -> int:
        if len(self.sessions) >= self.capacity:
            new_capacity = min(self.capacity * 2, self.max_capacity)
            if new_capacity <= self.capacity:
                raise RequestError(429, f"the server holds its maximum of {self.max_capacity} sessions")
            self.states = _grow(self.states, new_capacity)
            self.params = _grow(self.params, new_capacity)
            self.episode_keys = np.concatenate(
                [self.episode_keys, np.zeros((new_capacity - self.capacity, 2), np.uint32)]
            )
            self.capacity = new_capacity
        return next(i for i in range(self.capacity) if i not in self.sessions)

    def cast_params(self, params: Any) -> Any:
        """`params` with the template's dtypes and shapes (numpy), or a `RequestError` naming the field."""

        def cast(path, template: np.ndarray, value: Any) -> np.ndarray:
            value = np.asarray(value)
            if value.shape != template.shape:
                name = jax.tree_util.keystr(path)
                raise RequestError(400, f"option {name} must have shape {template.shape}; got {value.shape}")
            return value.astype(template.dtype)

        return jax.tree_util.tree_map_with_path(cast, self.template, params)

    def open(self, session: Session) -> dict[str, np.ndarray]:
        """Reset `session`'s world into a free slot (sets `session.slot`); returns its first obs (numpy)."""
        slot = self._free_slot()
        session.slot = slot
        params = self.cast_params(session.params)
        secret, salted = secret_words(session.secret)
        self.states, self.params, obs, episode_key = self._reset(
            self.states, self.params, jnp.int32(slot), np.uint32(session.world_seed), secret, salted, params
        )
        self.episode_keys[slot] = np.asarray(episode_key)
        a, k = self.env.num_agents, len(self.env.reward_term_names)
        session.returns = np.zeros(a)
        session.reward_terms = np.zeros((a, k))
        self.sessions[slot] = session
        return jax.tree.map(np.asarray, obs)

    def close(self, session: Session) -> None:
        """Free `session`'s slot (its rows stay until a new session overwrites them)."""
        session.closed = True
        if self.sessions.get(session.slot) is session:
            del self.sessions[session.slot]

    def step(self, sessions: list[Session], actions: list[dict[str, np.ndarray]]) -> list[dict[str, Any]]:
        """Advance `sessions` (distinct, open, not done) by their `actions` in one batched call; per session
        `{obs, reward, terminated, truncated, info}` as numpy, and their totals updated."""
        a = self.env.num_agents
        continuous = np.zeros((self.capacity, a, self.env.continuous_dims), np.float32)
        discrete = np.zeros((self.capacity, a, len(self.env.discrete_branches)), np.int32)
        mask = np.zeros(self.capacity, bool)
        t = np.zeros(self.capacity, np.int32)
        for session, action in zip(sessions, actions, strict=True):
            continuous[session.slot] = action["continuous"]
            discrete[session.slot] = action["discrete"]
            mask[session.slot] = True
            t[session.slot] = session.step
        action_rows = {"continuous": continuous, "discrete": discrete}
        self.states, out = self._step(self.states, self.params, self.episode_keys, t, action_rows, mask)
        obs, reward, terminated, truncated, info = jax.device_get(out)
        results = []
        for session in sessions:
            i = session.slot
            row = {
                "obs": jax.tree.map(lambda x, i=i: x[i], obs),
                "reward": reward[i],
                "terminated": terminated[i],
                "truncated": truncated[i],
                "info": jax.tree.map(lambda x, i=i: x[i], info),
            }
            session.step += 1
            session.done = bool(row["info"]["done"])
            session.returns += row["reward"]
            if "reward_terms" in row["info"]:
                session.reward_terms += row["info"]["reward_terms"]
            for name, value in row["info"].get("stats", {}).items():
                session.stats[name] = session.stats.get(name, 0.0) + np.asarray(value, np.float64)
            results.append(row)
        return results

    def state_of(self, session: Session) -> Any:
        """The full (hidden) environment state of `session`, numpy leaves."""
        return jax.tree.map(lambda rows: np.asarray(rows[session.slot]), self.states)


def params_digest(params: Any) -> str:
    """A digest of every leaf of `params` (numpy, cast to the pool's template): the grade cache's key."""
    return hashlib.sha256(
        b"".join(np.ascontiguousarray(x).tobytes() for x in jax.tree.leaves(params))
    ).hexdigest()
