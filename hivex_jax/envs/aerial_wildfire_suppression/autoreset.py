"""`SameWorldAutoReset`: auto-reset that starts each new episode on the finished episode's world.

Under `jax.vmap`, `wrappers.AutoReset` computes a full reset for every world at every step (a select
keeps it only where an episode ended). This env's world generation costs about as much as its step, so
`AutoReset` runs at about half the bare step's speed on the CPU (docs page, "Reset cost").
`env.reset_episode` instead regrows the world's forest and draws a new fire, weather and spawn: one cheap
elementwise pass. Each parallel environment then keeps its world for the whole run (its first world comes
from `reset`, e.g. through `WorldPool`), so a batch of N environments trains on N worlds, not on fresh
ones every episode.
"""

from __future__ import annotations

from typing import Any

import jax

from hivex_jax.wrappers.autoreset import AutoReset


class SameWorldAutoReset(AutoReset):
    """Like `hivex_jax.wrappers.AutoReset` (same-step, `info["done"]`, optional `info["final_obs"]`), but a
    finished episode restarts on the same world. Must wrap the `AerialWildfireSuppression` env directly
    (put `EpisodeStatistics` outside it)."""

    def __init__(self, env: Any, final_obs: bool = False):
        if not hasattr(env, "reset_episode"):
            raise TypeError("SameWorldAutoReset wraps an env with reset_episode (AerialWildfireSuppression)")
        super().__init__(env, final_obs)

    def next_episode(self, key: jax.Array, state: Any, params: Any):
        return self.env.reset_episode(key, state, params)
