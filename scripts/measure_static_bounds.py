"""One world's cost at an env's static-option bounds: state size, first reset / step / render time, peak RSS.

    PJRT_NPROC=1 python scripts/measure_static_bounds.py OceanPlasticCollection-v0 hi

`hi` sets every option of `STATIC_BOUNDS` to its upper bound at once (`lo`: lower), options with a fixed
set of values to the largest (smallest) member. The env pages' "Static option bounds" tables quote it.
"""

from __future__ import annotations

import resource
import sys
import time

import jax
import jax.numpy as jnp

import hivex_jax
from hivex_jax.core import bounds

#: options whose values are a set: the member used for `hi` / `lo`
SET_VALUED = {
    "AerialWildfireSuppression-v0": {"num_agents": (12, 1), "camera_channels": (3, 1), "vector_size": (9, 8)},
    "DroneBasedReforestation-v0": {"num_agents": (12, 1)},
}


def tree_mb(tree) -> float:
    """Megabytes of a pytree's arrays."""
    return sum(x.nbytes for x in jax.tree.leaves(tree) if hasattr(x, "nbytes")) / 1e6


def main(env_id: str, end: str) -> None:
    """Print one line: the options, the state size, the first reset / step / render times and peak RSS."""
    env0, _ = hivex_jax.make(env_id)
    table = bounds.declared_static_bounds(getattr(env0, "unwrapped", env0).params_type)
    options = {k: (hi if end == "hi" else lo) for k, (lo, hi) in table.items()}
    options.update({k: v[0 if end == "hi" else 1] for k, v in SET_VALUED.get(env_id, {}).items()})
    start = time.perf_counter()
    env, params = hivex_jax.make(env_id, **options)
    obs, state = jax.block_until_ready(jax.jit(env.reset)(hivex_jax.world_key(0), params))
    reset_s = time.perf_counter() - start
    action = {
        "continuous": jnp.zeros((env.num_agents, env.continuous_dims), jnp.float32),
        "discrete": jnp.zeros((env.num_agents, len(env.discrete_branches)), jnp.int32),
    }
    start = time.perf_counter()
    out = jax.block_until_ready(jax.jit(env.step)(jax.random.PRNGKey(1), state, action, params))
    step_s = time.perf_counter() - start
    start = time.perf_counter()
    picture = jax.block_until_ready(jax.jit(env.render)(out[1], params))
    render_s = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{env_id} {end} {options}: state {tree_mb(state):.2f} MB, obs {tree_mb(obs):.2f} MB; first "
        f"reset {reset_s:.1f} s, step {step_s:.1f} s, render {picture.shape} {render_s:.1f} s; "
        f"peak RSS {peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "hi")
