"""`MessageChannel`: agents send a message with each action and hear the others' on the next decision.

```python
env, params = hivex_jax.make("WildfireResourceManagement-v0", message_vocab=4, message_loss=0.2)
# action["discrete"] gains one branch of 4 symbols at the end; obs["vector"] gains, at the end, one
# one-hot block of 4 per heard agent (all zero = nothing received). See docs/messages.md.
```

The wrapper keeps no state of its own: the messages sent with the action of step t are delivered in
the observation that step t returns, so the inner state passes through unchanged (`alive`, `step`,
`render`, `global_state`, AutoReset and EpisodeStatistics work as without it). The inner env gets the
same key and its own part of the action, so its part of every output is bit-identical to the env
without the wrapper. The channel draws its randomness from `fold_in(step key, MESSAGE_STREAM)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment
from hivex_jax.core.errors import UserError
from hivex_jax.core.wrapper import Wrapper

#: `jax.random.fold_in` tag of the channel's randomness (the inner env keeps the step key itself)
MESSAGE_STREAM = 0x6D736721
#: allowed message widths / vocabulary sizes and the largest Gaussian noise std (continuous)
DIMS_RANGE = (1, 16)
VOCAB_RANGE = (2, 64)
MAX_CONTINUOUS_NOISE = 10.0
#: `message_range` values: the env's own `message_senders` table (else all others), or all others
MESSAGE_RANGES = ("neighbours", "all")


def all_others_senders(num_agents: int) -> np.ndarray:
    """i32[A, A-1]: receiver i's slot s hears agent s if s < i else s + 1 (all others, index order)."""
    idx = np.arange(num_agents)
    table = [np.delete(idx, i) for i in range(num_agents)]
    return np.asarray(table, np.int32).reshape(num_agents, max(num_agents - 1, 0))


def _whole_number(name: str, value: Any, lo: int, hi: int) -> int:
    """`value` as an int in [lo, hi], else a UserError naming the option."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok and isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        ok, value = True, int(value)
    if not ok or not lo <= int(value) <= hi:
        raise UserError(f"{name} must be a whole number in {lo}..{hi}; got {value!r}")
    return int(value)


def _probability_like(name: str, value: Any, hi: float, what: str) -> float:
    """`value` as a float in [0, hi], else a UserError naming the option."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a number in [0, {hi:g}] ({what}); got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(x) or not 0.0 <= x <= hi:
        raise UserError(f"{name} must be a number in [0, {hi:g}] ({what}); got {value!r}")
    return x


class MessageChannel(Wrapper):
    """Adds a message to every agent's action and the heard messages to every agent's `obs["vector"]`.

    Exactly one of `message_dims` (k continuous values in [-1, 1]) or `message_vocab` (one symbol of v).
    `message_loss`: probability in [0, 1] that one delivery (receiver, slot) is dropped.
    `message_noise`: continuous: std of Gaussian noise added before clipping to [-1, 1] (0..10);
    discrete: probability in [0, 1] that the symbol is replaced by a uniformly drawn one (maybe itself).
    `message_range`: "neighbours" (the env's `message_senders` table if it has one, else all others)
    or "all" (all others, index order). Goes outside FrameStack: messages are not frame-stacked.

    Action: continuous: `action["continuous"]` f32[A, C + k] (message last); discrete:
    `action["discrete"]` i32[A, B + 1] (the symbol is the last branch). Observation: `obs["vector"]`
    f32[A, D + K * w], one block of w per slot s: continuous k values then a "received" flag (w = k + 1),
    discrete a one-hot of the symbol (w = v); nothing received = all zeros. Slot s of receiver i holds
    agent `senders[i, s]`'s message; a sender that was inactive at the step is never received.
    """

    def __init__(
        self,
        env: Any,
        message_dims: int | None = None,
        message_vocab: int | None = None,
        message_loss: float = 0.0,
        message_noise: float = 0.0,
        message_range: str = "neighbours",
    ):
        super().__init__(env)
        if (message_dims is None) == (message_vocab is None):
            raise UserError(
                "MessageChannel needs exactly one of message_dims (continuous) or message_vocab "
                f"(discrete symbols); got message_dims={message_dims!r}, message_vocab={message_vocab!r}"
            )
        self.discrete = message_vocab is not None
        if self.discrete:
            self.message_vocab = _whole_number("message_vocab", message_vocab, *VOCAB_RANGE)
            self.message_dims = 0
            self.slot_width = self.message_vocab
        else:
            self.message_dims = _whole_number("message_dims", message_dims, *DIMS_RANGE)
            self.message_vocab = 0
            self.slot_width = self.message_dims + 1
        self.message_loss = _probability_like("message_loss", message_loss, 1.0, "drop probability")
        if self.discrete:
            noise = _probability_like("message_noise", message_noise, 1.0, "symbol swap probability")
        else:
            noise = _probability_like(
                "message_noise", message_noise, MAX_CONTINUOUS_NOISE, "Gaussian noise std"
            )
        self.message_noise = noise
        if message_range not in MESSAGE_RANGES:
            raise UserError(f"message_range must be one of {MESSAGE_RANGES}; got {message_range!r}")
        self.message_range = message_range

        inner_obs = env.observation_space()
        if "vector" not in inner_obs.spaces:
            raise UserError(
                f"{env.env_id}: MessageChannel appends messages to obs['vector'], but this env's "
                f"observation has only {sorted(inner_obs.spaces)}"
            )
        self.inner_vector_width = int(inner_obs.spaces["vector"].shape[-1])
        a = int(env.num_agents)
        table = getattr(env, "message_senders", None)
        if message_range == "all" or table is None:
            table = all_others_senders(a)
        table = np.asarray(table)
        if (
            table.ndim != 2
            or table.shape[0] != a
            or not np.issubdtype(table.dtype, np.integer)
            or (table.size and (table.min() < 0 or table.max() >= a))
        ):
            raise UserError(
                f"{env.env_id}: message_senders must be int[{a}, K] with agent indices in [0, {a}); "
                f"got {table.dtype}{table.shape}"
            )
        #: i32[A, K]: receiver i's slot s holds the message of agent senders[i, s] (static, numpy)
        self.senders = table.astype(np.int32)
        self.num_slots = int(table.shape[1])
        self.inner_continuous_dims = int(env.continuous_dims)
        self.inner_discrete_branches = tuple(int(n) for n in env.discrete_branches)
        # The widened action the wrapper takes (validate_action and action_space read these).
        self.continuous_dims = self.inner_continuous_dims + self.message_dims
        self.discrete_branches = self.inner_discrete_branches + (
            (self.message_vocab,) if self.discrete else ()
        )

    # ------------------------------------------------------------------------------------ spaces
    def action_space(self, params: Any = None) -> spaces.HybridAction:
        """`{continuous: f32[A, C (+k)], discrete: i32[A, B (+1)]}`: the env's action, message last."""
        return spaces.HybridAction(self.num_agents, self.continuous_dims, self.discrete_branches)

    @property
    def message_width(self) -> int:
        """Width of the whole message block at the end of `obs["vector"]` (K slots * slot width)."""
        return self.num_slots * self.slot_width

    def observation_space(self, params: Any = None) -> spaces.Dict:
        """The env's observation space with `vector` widened by the message block."""
        inner = self.env.observation_space(params)
        box = inner.spaces["vector"]
        out = dict(inner.spaces)
        low = min(float(box.low), 0.0 if self.discrete else -1.0)
        out["vector"] = spaces.Box(
            low,
            max(float(box.high), 1.0),
            tuple(box.shape[:-1]) + (box.shape[-1] + self.message_width,),
            box.dtype,
        )
        return spaces.Dict(out)

    def observation_layout(self) -> dict[str, slice]:
        """The env's layout plus `messages` (the whole block) and `message_slot_<s>` (one per slot)."""
        layout = dict(self.env.observation_layout())
        start = self.inner_vector_width
        layout["messages"] = slice(start, start + self.message_width)
        for s in range(self.num_slots):
            a = start + s * self.slot_width
            layout[f"message_slot_{s}"] = slice(a, a + self.slot_width)
        return layout

    # ------------------------------------------------------------------------------------ actions
    def validate_action(self, action: Any) -> dict[str, jax.Array]:
        """The base class's checks and cleaning for the widened action (NaN -> 0, clip to range)."""
        # borrowed: the checks read num_agents, continuous_dims, discrete_branches and env_id, which the
        # wrapper has (widened), though it is no Environment subclass
        return Environment.validate_action(self, action)  # pyright: ignore[reportArgumentType]

    def split_action(self, action: Any) -> tuple[dict[str, jax.Array], jax.Array]:
        """`(env action, message)`: message f32[A, k] (continuous) or i32[A] (symbol)."""
        action = self.validate_action(action)
        c = self.inner_continuous_dims
        b = len(self.inner_discrete_branches)
        inner = {"continuous": action["continuous"][:, :c], "discrete": action["discrete"][:, :b]}
        message = action["discrete"][:, b] if self.discrete else action["continuous"][:, c:]
        return inner, message

    # ------------------------------------------------------------------------------------ channel
    def nothing_received(self, num_agents: int | None = None) -> jax.Array:
        """f32[A, K * w] of zeros: no slot received anything (the reset value)."""
        a = self.num_agents if num_agents is None else num_agents
        return jnp.zeros((a, self.message_width), jnp.float32)

    def deliver(self, key: jax.Array, message: jax.Array, sender_active: jax.Array) -> jax.Array:
        """f32[A, K * w]: what every receiver hears of `message` (f32[A, k] or i32[A]) from the agents
        active at the step (`sender_active` bool[A]), through the lossy, noisy channel."""
        a, k_slots = self.senders.shape
        senders = jnp.asarray(self.senders)
        if self.message_loss > 0.0 or self.message_noise > 0.0:  # static: a clean channel draws nothing
            k_loss, k_noise, k_symbol = jax.random.split(key, 3)
        received = sender_active[senders]  # [A, K]
        if self.message_loss > 0.0:
            received = received & (jax.random.uniform(k_loss, (a, k_slots)) >= self.message_loss)
        heard = message[senders]  # [A, K, k] or [A, K]
        if self.discrete:
            if self.message_noise > 0.0:
                swap = jax.random.uniform(k_noise, (a, k_slots)) < self.message_noise
                other = jax.random.randint(k_symbol, (a, k_slots), 0, self.message_vocab, heard.dtype)
                heard = jnp.where(swap, other, heard)
            block = jax.nn.one_hot(heard, self.message_vocab, dtype=jnp.float32)
            block = jnp.where(received[..., None], block, 0.0)
        else:
            if self.message_noise > 0.0:
                noise = jax.random.normal(k_noise, heard.shape, jnp.float32) * self.message_noise
                heard = jnp.clip(heard + noise, -1.0, 1.0)
            flag = received.astype(jnp.float32)[..., None]
            block = jnp.concatenate([jnp.where(received[..., None], heard, 0.0), flag], axis=-1)
        return block.reshape(a, k_slots * self.slot_width)

    def _with_messages(self, obs: dict[str, jax.Array], block: jax.Array) -> dict[str, jax.Array]:
        out = dict(obs)
        vector = obs["vector"]
        out["vector"] = jnp.concatenate([vector, block.astype(vector.dtype)], axis=-1)
        return out

    # ------------------------------------------------------------------------------------ API
    def reset(self, key: jax.Array, params: Any) -> tuple[dict[str, jax.Array], Any]:
        """The env's `(obs, state)` with nothing received in every slot."""
        obs, state = self.env.reset(key, params)
        return self._with_messages(obs, self.nothing_received(obs["vector"].shape[0])), state

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        """The env's step on its part of `action`; obs carries the messages sent with this action."""
        inner_action, message = self.split_action(action)
        sender_active = getattr(state, "alive", None)
        if sender_active is None:
            sender_active = jnp.ones((self.num_agents,), bool)
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, inner_action, params)
        channel_key = jax.random.fold_in(key, MESSAGE_STREAM)  # the env keeps `key` itself
        block = self.deliver(channel_key, message, sender_active)
        return self._with_messages(obs, block), state, reward, terminated, truncated, info

    @property
    def scripted_policy(self):
        """The env's `scripted_policy(obs, params)` on the obs without messages, sending a neutral message
        (zeros / symbol 0). AttributeError if the env has none."""
        inner: Callable[[dict[str, jax.Array], Any], dict[str, jax.Array]] | None = getattr(
            self.env, "scripted_policy", None
        )
        if not callable(inner):
            raise AttributeError(f"{self.env_id} has no scripted_policy")
        d = self.inner_vector_width

        def policy(obs: dict[str, jax.Array], params: Any) -> dict[str, jax.Array]:
            stripped = dict(obs)
            stripped["vector"] = obs["vector"][..., :d]
            act = inner(stripped, params)
            cont, disc = act["continuous"], act["discrete"]
            lead = cont.shape[:-1]
            if self.discrete:
                disc = jnp.concatenate([disc, jnp.zeros(lead + (1,), disc.dtype)], axis=-1)
            else:
                cont = jnp.concatenate([cont, jnp.zeros(lead + (self.message_dims,), cont.dtype)], axis=-1)
            return {"continuous": cont, "discrete": disc}

        return policy

    def __repr__(self) -> str:
        kind = f"message_vocab={self.message_vocab}" if self.discrete else f"message_dims={self.message_dims}"
        return (
            f"MessageChannel({self.env!r}, {kind}, message_loss={self.message_loss}, "
            f"message_noise={self.message_noise}, message_range={self.message_range!r})"
        )


#: the `make` options that turn the channel on or shape it
MESSAGE_OPTIONS = ("message_dims", "message_vocab", "message_loss", "message_noise", "message_range")


def wrap_messages(env: Any, options: dict[str, Any]) -> Any:
    """`env` in a `MessageChannel` built from the `make` options in `options` (None = not given), or `env`
    itself when none is given; loss/noise/range without dims or vocab is a UserError."""
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return env
    if "message_dims" not in given and "message_vocab" not in given:
        raise UserError(
            f"{', '.join(f'{k}={v!r}' for k, v in given.items())} needs message_dims=k (continuous) or "
            "message_vocab=v (discrete symbols) to turn the message channel on"
        )
    return MessageChannel(env, **given)
