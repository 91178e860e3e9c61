"""The episodes a grade compares a session with: the env's scripted controller and the uniform random
policy, each played on the session's world, task, level and options, in slices (JAX only, no HTTP).

`ReferenceEpisodes.start` resets the world; `play(name, carry, params, limit)` plays policy `name`'s steps
until the episode ends or `limit` steps are played in all. The limit is an argument, not a constant, so one
compiled program per policy plays slices of any length: the server plays a long episode in short slices
between the pools' batched steps instead of in one call that would hold the CPU for the whole episode.
Carry: `(obs, state, totals, done, root_key)`; totals `{return f32[A], length i32, reward_terms f32[A, K],
stats}`, summed over the steps played. Step `t` uses `adapter_step_key(root_key, t)` (the sessions' rule,
`step_root_key`); the random policy draws its action from that key folded with `RANDOM_ACTION`.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import adapter_step_key, world_key
from hivex_jax.eval.rollout import find_scripted_policy
from hivex_jax.serve.sessions import step_root_key

#: what the random policy folds into a step's key to draw its action (the env's step uses the key itself)
RANDOM_ACTION = 0x52414E44
#: the reference policies a grade plays, in order
POLICIES = ("scripted", "random")


class ReferenceEpisodes:
    """The scripted and random episodes of one env, each a compiled, sliced `while_loop`."""

    def __init__(self, env: Any):
        self.env = env
        scripted = find_scripted_policy(env)
        if scripted is None:
            raise ValueError(f"{env.env_id} has no scripted controller to grade against")
        space = env.action_space()
        self.policies = {
            "scripted": lambda key, obs, params: scripted(obs, params),
            "random": lambda key, obs, params: space.sample(jax.random.fold_in(key, RANDOM_ACTION)),
        }
        self.start = jax.jit(self._start)
        self.advance = {
            name: jax.jit(
                lambda carry, params, limit, name=name: self._advance(name, carry, params, limit),
                donate_argnums=(0,),
            )
            for name in POLICIES
        }

    def _start(self, params: Any, world_seed: jax.Array, secret: jax.Array, salted: jax.Array) -> tuple:
        env = self.env
        obs, state = env.reset(world_key(world_seed), params)
        root = step_root_key(world_seed, secret, salted)
        a, k = env.num_agents, len(env.reward_term_names)
        info_shape = jax.eval_shape(lambda: env.step(root, state, env.action_space().noop(), params)[5])
        totals = {
            "return": jnp.zeros(a, jnp.float32),
            "length": jnp.zeros((), jnp.int32),
            "reward_terms": jnp.zeros((a, k), jnp.float32),
            "stats": jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), info_shape.get("stats", {})),
        }
        return obs, state, totals, jnp.zeros((), bool), root

    def _advance(self, name: str, carry: tuple, params: Any, limit: jax.Array) -> tuple:
        env, policy = self.env, self.policies[name]
        root = carry[4]

        def cond(carry):
            _, _, totals, done, _ = carry
            return ~done & (totals["length"] < limit)

        def body(carry):
            obs, state, totals, _, _ = carry
            key = adapter_step_key(root, totals["length"])
            obs, state, reward, _, _, info = env.step(key, state, policy(key, obs, params), params)
            totals = {
                "return": totals["return"] + reward,
                "length": totals["length"] + 1,
                "reward_terms": totals["reward_terms"] + info.get("reward_terms", 0.0),
                "stats": jax.tree.map(
                    lambda x, y: x + y.astype(jnp.float32), totals["stats"], info.get("stats", {})
                ),
            }
            return obs, state, totals, info["done"], root

        return jax.lax.while_loop(cond, body, carry)

    def play(self, name: str, carry: tuple, params: Any, limit: int) -> tuple[tuple, int, bool, float]:
        """`advance` policy `name` to `limit` steps in all, waiting for it: (carry, steps played, episode
        ended, seconds it took here, which excludes waiting for a thread or the GIL on a busy server)."""
        began = time.perf_counter()
        carry = self.advance[name](carry, params, np.int32(limit))
        length, done = int(carry[2]["length"]), bool(carry[3])
        return carry, length, done, time.perf_counter() - began

    @staticmethod
    def totals(carry: tuple) -> dict[str, Any]:
        """The carry's totals as numpy."""
        return jax.tree.map(np.asarray, carry[2])
