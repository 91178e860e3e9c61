"""The truncation bootstrap: V of the observation where an episode's time limit cut it.

GAE reads V(s_{t+1}) at every step. Where the episode goes on, that is the next step's V(s_t), which the
rollout computes anyway; only where an episode was cut by its time limit (and auto-reset) is it the value of
an observation the policy never acts on. So the rollout keeps those final critic inputs in a few slots per
env, and the critic reads them once after the rollout, instead of a second critic pass at every step.

Episodes truncate only at `step >= max_steps` (`hivex_jax.core.environment`), `step` counting from 0 at
reset, so one env cuts at most ceil(T / max_steps) times in a rollout of T steps. A cut past the slots (an
env whose reset does not start at step 0) gets a NaN value: the run stops at a non-finite loss rather than
learn from a wrong number.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


def cut_slots(num_steps: int, *env_params: Any) -> int | None:
    """Slots per env for a rollout of `num_steps` under any of `env_params` (None entries skipped):
    ceil(num_steps / the least `max_steps`); None (every step computes V(final obs)) when that is not under
    half the steps or a `max_steps` is not a concrete value."""
    try:
        least = min(int(np.min(np.asarray(p.max_steps))) for p in env_params if p is not None)
    except (jax.errors.ConcretizationTypeError, TypeError, AttributeError, ValueError):
        return None
    slots = -(-num_steps // max(least, 1))
    return slots if 2 * slots < num_steps else None


@struct.dataclass
class CutInputs:
    """The critic inputs of the rollout's cut steps so far, `[N, K, ...]`, and how many each env kept."""

    inputs: Any  # [N, K, ...] (unused slots hold zeros)
    count: jax.Array  # i32[N]

    @classmethod
    def empty(cls, like: Any, slots: int) -> CutInputs:
        """No cuts yet, for critic inputs shaped as `like` `[N, ...]` (arrays or shape structs)."""
        inputs = jax.tree.map(lambda x: jnp.zeros((x.shape[0], slots, *x.shape[1:]), x.dtype), like)
        return cls(inputs, jnp.zeros(jax.tree.leaves(like)[0].shape[:1], jnp.int32))

    def keep(self, inputs: Any, cut: jax.Array) -> tuple[CutInputs, jax.Array]:
        """Keep `inputs` `[N, ...]` of the envs where `cut` (bool[N]); also the slot each was kept in,
        i32[N] (-1 where no cut; a count past the slots is returned as is and kept nowhere)."""
        slots = jax.tree.leaves(self.inputs)[0].shape[1]
        slot = jnp.minimum(self.count, slots - 1)

        def one_env(kept: jax.Array, index: jax.Array, value: jax.Array, keep: jax.Array) -> jax.Array:
            return kept.at[index].set(jnp.where(keep, value, kept[index]))

        def put(kept: jax.Array, value: jax.Array) -> jax.Array:
            return jax.vmap(one_env)(kept, slot, value, cut & (self.count < slots))

        kept = jax.tree.map(put, self.inputs, inputs)
        return CutInputs(kept, self.count + cut), jnp.where(cut, self.count, -1)


def bootstrap_step(
    cuts: CutInputs | None, final_input: Any, truncated: jax.Array, value_of: Any
) -> tuple[CutInputs | None, jax.Array | None, jax.Array | None]:
    """One rollout step's part: without `cuts`, `(None, V(final_input) f32[N, A(, H)], None)`; with them,
    `(cuts, None, slot i32[N])`, the final input `[N, ...]` kept where an agent was truncated (bool[N, A])."""
    if cuts is None:
        return None, value_of(final_input), None
    cuts, slot = cuts.keep(final_input, jnp.any(truncated, axis=-1))
    return cuts, None, slot


def cut_values(value_of: Any, cuts: CutInputs) -> jax.Array:
    """V of the kept inputs, f32[N, K, A(, H)], with `value_of` of `[N, A, ...]` inputs (the slots run as
    one batch of N * K envs)."""
    n, k = jax.tree.leaves(cuts.inputs)[0].shape[:2]
    flat = jax.tree.map(lambda x: x.reshape(n * k, *x.shape[2:]), cuts.inputs)
    values = value_of(flat)
    return values.reshape(n, k, *values.shape[1:])


def next_values(values: jax.Array, last_value: jax.Array, kept: jax.Array, slot: jax.Array) -> jax.Array:
    """V(s_{t+1}), f32[T, N, A(, H)]: the next step's V(s_t) (`values` [T, N, A(, H)]; after the last step
    `last_value` [N, A(, H)]), and where an episode was cut (`slot` i32[T, N] >= 0) the value kept in that
    slot (`kept` [N, K, A(, H)]; NaN past the slots)."""
    following = jnp.concatenate([values[1:], last_value[None]])
    n, k = kept.shape[:2]
    padded = jnp.concatenate([kept, jnp.full((n, 1, *kept.shape[2:]), jnp.nan, kept.dtype)], axis=1)
    index = jnp.where(slot < 0, 0, jnp.minimum(slot, k))  # [T, N]; k: the NaN row
    gathered = padded[jnp.arange(n)[None, :], index]  # [T, N, A(, H)]
    cut = (slot >= 0).reshape(*slot.shape, *([1] * (values.ndim - 2)))
    return jnp.where(cut, gathered, following)


def with_next_values(traj: Any, last_value: jax.Array, kept: jax.Array) -> Any:
    """`traj` (a rollout's `Transition`s `[T, N, ...]` with `cut_slot`) with its `next_value` filled
    (`next_values`) and `cut_slot` dropped."""
    return traj.replace(next_value=next_values(traj.value, last_value, kept, traj.cut_slot), cut_slot=None)
