"""The one auto-reset: when every agent of an env is done, the returned obs/state are a fresh episode's.

`reset_where` is the "reset where done" select every auto-reset of the project goes through (this
wrapper, the trainer's `TrainingEnv`, the Gymnasium and JaxMARL adapters). It puts the reset behind
`lax.cond(any(done))` with a batching rule that keeps it a `cond` under `jax.vmap`: a batch of envs
(`jax.vmap(AutoReset(env).step)`, also vmapped again over training seeds) generates worlds only on
steps where some episode of the whole batch ended, instead of every env's reset at every step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from hivex_jax.core.wrapper import Wrapper


def select_where(mask: jax.Array, new: Any, old: Any) -> Any:
    """`where(mask, new, old)` leaf by leaf; `mask` `bool[]` or `bool[N]` (a batch: it broadcasts over
    each leaf's trailing axes)."""

    def pick(x: jax.Array, y: jax.Array) -> jax.Array:
        m = jnp.reshape(mask, jnp.shape(mask) + (1,) * (jnp.ndim(x) - jnp.ndim(mask)))
        return jnp.where(m, x, y)

    return jax.tree.map(pick, new, old)


def reset_where(done: jax.Array, reset: Callable[..., Any], reset_args: tuple, current: Any) -> Any:
    """`current` with the entries where `done` (`bool[]` or `bool[N]`) replaced by `reset(*reset_args)`'s.

    The reset (e.g. a batch of world generations) runs only when some entry is done; otherwise
    `current` comes back untouched. Under `jax.vmap` (any depth) the test is `any(done)` over the
    whole batch, not a select that computes every reset: see `_skipping_reset`. `reset` must be a
    pure function of `reset_args` (it may not close over traced values). Values are always those of
    `select_where(done, reset(*reset_args), current)`.
    """
    return _reset_where(done, reset, tuple(reset_args), current)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _reset_where(done: jax.Array, reset: Callable[..., Any], reset_args: tuple, current: Any) -> Any:
    return _skipping_reset(reset)(done, reset_args, current)


@_reset_where.defjvp
def _reset_where_jvp(reset: Callable[..., Any], primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    # custom_vmap has no autodiff rule: differentiate the plain select (same values), so gradients
    # through an auto-reset work as before.
    return jax.jvp(lambda d, a, c: select_where(d, reset(*a), c), primals, tangents)


def _skipping_reset(reset: Callable[..., Any]) -> Callable[..., Any]:
    """`(done, reset_args, current) -> current or the reset`, behind one `lax.cond(any(done))`.

    A `lax.cond` whose predicate is batched by `vmap` turns into a select that computes both sides,
    i.e. every env's reset at every step. This custom batching rule keeps it a `cond`: the batched
    call is the same function with `reset` vmapped over the new axis and `done` carrying it, so the
    cond tests the whole batch (nested vmaps recurse the same way)."""

    @jax.custom_batching.custom_vmap
    def skipping(done: jax.Array, reset_args: tuple, current: Any) -> Any:
        return jax.lax.cond(
            jnp.any(done), lambda: select_where(done, reset(*reset_args), current), lambda: current
        )

    @skipping.def_vmap
    def batched(axis_size: int, in_batched: tuple, done: jax.Array, reset_args: tuple, current: Any):
        done_batched, args_batched, current_batched = in_batched

        def batch(x: Any, is_batched: bool) -> Any:
            return x if is_batched else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))

        done = batch(done, done_batched)
        current = jax.tree.map(batch, current, current_batched)
        if any(jax.tree.leaves(args_batched)):
            in_axes = tuple(jax.tree.map(lambda b: 0 if b else None, args_batched))
            batched_reset = jax.vmap(reset, in_axes=in_axes)
        else:  # the reset does not depend on the batch: one reset, broadcast

            def batched_reset(*args: Any) -> Any:
                return jax.tree.map(lambda x: batch(x, False), reset(*args))

        out = _skipping_reset(batched_reset)(done, reset_args, current)
        return out, jax.tree.map(lambda _: True, out)

    return skipping


class AutoReset(Wrapper):
    """Gym-style same-step auto-reset. `info["done"]` marks the last step of an episode.

    With `final_obs=True`, `info["final_obs"]` holds the observation the episode ended on (before the
    reset), so trainers can bootstrap on truncation; with `final_state=True`, `info["final_state"]`
    holds the state it ended in (MAPPO's critic reads the final global state). Opt-in, because each
    doubles what a rollout stores. The reset key is split from the step key, so a rollout stays a pure
    function of its keys. Vmap `step` over a batch of envs: the resets are computed only on steps
    where some env of the batch is done (`reset_where`), with the numbers of a plain select.
    """

    def __init__(self, env: Any, final_obs: bool = False, final_state: bool = False):
        super().__init__(env)
        self.final_obs = final_obs
        self.final_state = final_state

    def reset(self, key: jax.Array, params: Any):
        return self.env.reset(key, params)

    def next_episode(self, key: jax.Array, state: Any, params: Any):
        """`(obs, state)` the next episode starts from, given the finished `state`: a fresh reset.
        Subclasses override this alone to restart differently (e.g. on the same world)."""
        return self.env.reset(key, params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any):
        """One env: `(obs, state, reward f32[A], terminated bool[A], truncated bool[A], info)`."""
        key_step, key_reset = jax.random.split(key)
        obs, state, reward, terminated, truncated, info = self.env.step(key_step, state, action, params)
        done = jnp.all(terminated | truncated)
        obs_out, state_out = reset_where(done, self.next_episode, (key_reset, state, params), (obs, state))
        return obs_out, state_out, reward, terminated, truncated, self._info(info, done, obs, state)

    def _info(self, info: dict, done: jax.Array, obs: Any, state: Any) -> dict:
        info = dict(info)
        if self.final_obs:
            info["final_obs"] = obs
        if self.final_state:
            info["final_state"] = state
        info["done"] = done
        return info


class SameWorldAutoReset(AutoReset):
    """`AutoReset` (same-step, `info["done"]`, optional `info["final_obs"]`/`["final_state"]`) whose
    finished episodes restart on the same world, through the env's cheap `reset_episode(key, state,
    params)` (Aerial Wildfire Suppression: regrow the forest, draw a new fire, weather and spawn; no
    terrain generation). Each parallel env then keeps its world for the whole run (its first world
    comes from `reset`, e.g. through `WorldPool`), so N envs train on N worlds, not on fresh ones every
    episode. Must wrap such an env directly (put `EpisodeStatistics` outside it)."""

    def __init__(self, env: Any, final_obs: bool = False, final_state: bool = False):
        if not hasattr(env, "reset_episode"):
            raise TypeError("SameWorldAutoReset wraps an env with reset_episode (AerialWildfireSuppression)")
        super().__init__(env, final_obs, final_state)

    def next_episode(self, key: jax.Array, state: Any, params: Any):
        return self.env.reset_episode(key, state, params)
