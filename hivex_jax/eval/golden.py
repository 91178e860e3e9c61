"""Short fixed-key rollouts of an environment as a behaviour fingerprint: `scripts/golden_rollouts.py
--write` records every bundled env's into `tests/envs/golden_rollouts.json`, and
`tests/envs/test_golden_rollouts.py` replays them and compares.

Per env: every task at the default level and the last task at the highest level, worlds 6000 and 6001,
`STEPS` decisions of uniform random actions from a fixed key (no auto-reset), one compiled program over
all (task, world) pairs. Recorded per pair and step: the sum of rewards over agents, the mean of
`obs["vector"]`, the number of terminated agents.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax

STEPS = 24
WORLDS = (6000, 6001)


def variants(env: Any, params: Any) -> list[tuple[int, int | None]]:
    """(task, level) pairs: every task at the default level, the last task at the highest level."""
    pairs: list[tuple[int, int | None]] = [(t, None) for t in env.task_ids]
    if env.level_field is not None:
        pairs.append((env.task_ids[-1], max(env.level_values)))
    return pairs


def fingerprint(env_id: str) -> dict[str, Any]:
    """`{"variants": [[task, level], ...], "reward": [V, W, T], "obs_mean": [V, W, T], "terminated": ...}`."""
    env, params = hivex_jax.make(env_id)
    pairs = variants(env, params)
    batch = hivex_jax.stack_params([env.variant_params(params, task=t, level=lv) for t, lv in pairs])
    space = env.action_space(params)

    def one(p: Any, world: jax.Array) -> dict[str, jax.Array]:
        obs, state = env.reset(hivex_jax.world_key(world), p)
        key = jax.random.fold_in(jax.random.PRNGKey(7), world)

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            obs, state, reward, terminated, _, _ = env.step(k_step, state, space.sample(k_act), p)
            return state, (reward.sum(), obs["vector"].mean(), terminated.sum())

        _, (reward, obs_mean, terminated) = jax.lax.scan(body, state, jax.random.split(key, STEPS))
        return {"reward": reward, "obs_mean": obs_mean, "terminated": terminated}

    worlds = jnp.asarray(WORLDS, jnp.uint32)
    out = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))(batch, worlds)
    record = {k: np.asarray(v).tolist() for k, v in out.items()}
    record["variants"] = [[t, lv] for t, lv in pairs]
    return record
