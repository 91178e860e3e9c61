"""Seconds for 50 steps of 64 envs (jit(scan(vmap(step))), observations summed so the camera counts;
min of 5 after compiling): the step cost of world options such as DBR's `terrain_grid` (docs/worlds.md).

    PJRT_NPROC=1 python scripts/worlds_step_cost.py DroneBasedReforestation-v0 '{"terrain_grid": true}'
"""

from __future__ import annotations

import json
import sys
import time

import jax
import jax.numpy as jnp

import hivex_jax


def main() -> None:
    """Print the min time over 5 runs of 50 steps x 64 envs of `argv[1]` made with options `argv[2]`."""
    env, params = hivex_jax.make(sys.argv[1], **json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}"))
    batch = 64
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    actions = jax.vmap(env.action_space(params).sample)(keys)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def roll(state):
        def body(s, k):
            o, s, r, *_ = step(jax.random.split(k, batch), s, actions, params)
            return s, (r, jax.tree.map(lambda x: x.astype(jnp.float32).sum(), o))

        return jax.lax.scan(body, state, jax.random.split(jax.random.PRNGKey(1), 50))

    run = jax.jit(roll)
    jax.block_until_ready(run(state))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        jax.block_until_ready(run(state))
        times.append(time.perf_counter() - start)
    print(f"{sys.argv[1]} {sys.argv[2:]}: min {min(times):.4f} s per 50 steps x {batch} envs")


if __name__ == "__main__":
    main()
