"""How often Ocean Plastic Collection's scripted controller acts on the border, and what tells it.

    PJRT_NPROC=1 python scripts/opc_border_share.py [--worlds 8]

Plays the scripted controller on held-out worlds 6000.. (full 1000-decision episodes) and prints, over
the active vessel-decisions: the share in which its border rule fires (the point 30 m ahead within 15 m of
the border: steer for the centre), the share in which that rule's steering differs from what the pebble /
vessel rules alone would choose (the decisions that teach the border), and the spread of the observed
position (÷ 200, the only border information in the observation) inside and outside those decisions.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import heuristics, scripted_policy


def main() -> None:
    """Print the border rule's share of the scripted controller's decisions."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", type=int, default=8)
    args = parser.parse_args()
    env, params = hivex_jax.make("OceanPlasticCollection-v0", task=0)
    steps = int(params.max_steps)

    def episode(seed, key):
        obs, state = env.reset(hivex_jax.world_key(seed), params)

        def body(carry, t):
            obs, state = carry
            action = scripted_policy(obs, params)
            vector = obs["vector"][:, -6:]
            position = vector[:, 0:2] * params.sea_half_extent
            probe = position + vector[:, 2:4] * heuristics.BORDER_LOOKAHEAD
            near = jnp.any(jnp.abs(probe) > params.sea_half_extent - heuristics.BORDER_MARGIN, axis=-1)
            # What the controller would do without the border rule: hide the border by moving the vessel
            # to the centre in a copy of the observation (the pebble and vessel rules read relative data).
            centred = vector.at[:, 0:2].set(0.0).at[:, 4:6].add(-vector[:, 0:2])
            stacked = obs["vector"].at[:, -6:].set(centred)
            if obs["vector"].shape[-1] >= 12:
                shift = -vector[:, 0:2]  # the same shift keeps both frames' relative motion
                prev = obs["vector"][:, -12:-6]
                stacked = stacked.at[:, -12:-6].set(prev.at[:, 0:2].add(shift).at[:, 4:6].add(shift))
            other = scripted_policy({**obs, "vector": stacked}, params)
            differs = action["discrete"][:, 1] != other["discrete"][:, 1]
            next_obs, state, _, _, _, info = env.step(jax.random.fold_in(key, t), state, action, params)
            return (next_obs, state), (near, differs, info["active"], vector[:, 0:2])

        _, out = jax.lax.scan(body, (obs, state), jnp.arange(steps))
        return out

    worlds = jnp.arange(6000, 6000 + args.worlds, dtype=jnp.uint32)
    keys = jax.random.split(jax.random.PRNGKey(0), args.worlds)
    near, differs, active, position = (np.asarray(x) for x in jax.jit(jax.vmap(episode))(worlds, keys))
    near, differs = near & active, differs & active
    n = active.sum()
    print(f"worlds 6000-{6000 + args.worlds - 1}: {n} active vessel-decisions")
    print(f"border rule fires: {near.sum() / n:.3f} of decisions")
    print(f"border rule changes the steering: {(near & differs).sum() / n:.3f} of decisions")
    radius = np.max(np.abs(position), axis=-1)  # max(|x|, |z|) / 200
    print(
        f"observed max(|x|,|z|)/200: where the rule fires mean {radius[near].mean():.2f} "
        f"(min {radius[near].min():.2f}); elsewhere mean {radius[active & ~near].mean():.2f}, "
        f"std of the vector obs position over all decisions {position[active].std(axis=0).round(2).tolist()}"
    )


if __name__ == "__main__":
    main()
