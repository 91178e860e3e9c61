"""Group-up (task 7) cannot be earned by standing still: drones start evenly spaced on a
`group_up_spawn_radius` ring, every neighbour beyond `group_up_distance`, so the zero action earns no
group-up reward; `group_up_spawn_radius=0` restores the default 3 m start ring, where it earned ~71 %."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.seeding import world_key
from hivex_jax.envs.drone_based_reforestation.params import GROUP_UP, TASK_GROUP_UP
from hivex_jax.eval.rollout import evaluate_params

DBR = "DroneBasedReforestation-v0"


def _closest_other(position: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(position[:, None] - position[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


@pytest.mark.parametrize("num_agents", [3, 12])
def test_group_up_start_is_spread_beyond_the_group_up_distance(num_agents):
    env, params = hivex_jax.make(DBR, task=TASK_GROUP_UP, num_agents=num_agents)
    radius = float(params.group_up_spawn_radius)
    reset = jax.jit(env.reset)
    for seed in range(6000, 6003):
        _, state = reset(world_key(seed), params)
        position = np.asarray(state.env_state.position)
        station = np.asarray(state.env_state.world.station)
        # evenly spaced: the horizontal chord to the nearest neighbour is 2 r sin(pi / A) for every drone
        horizontal = np.linalg.norm((position - station)[:, [0, 2]], axis=-1)
        np.testing.assert_allclose(horizontal, radius, atol=1e-3)
        chord = 2 * radius * np.sin(np.pi / num_agents)
        assert np.all(_closest_other(position) >= min(chord, 2 * radius) - 1e-3)
        assert np.all(_closest_other(position) > float(params.group_up_distance))
        # the other tasks keep the default start ring (same world, same uniforms)
        _, main = reset(world_key(seed), env.variant_params(params, task=0))
        offset = np.asarray(main.env_state.position - main.env_state.world.station)[:, [0, 2]]
        np.testing.assert_allclose(
            np.linalg.norm(offset, axis=-1), float(params.spawn_ring_radius), atol=1e-3
        )


def test_zero_action_earns_no_group_up_and_did_on_the_old_ring():
    env, params = hivex_jax.make(DBR, task=TASK_GROUP_UP)
    noop = env.action_space().noop()
    old = params.replace(group_up_spawn_radius=jnp.float32(0.0))

    batch = hivex_jax.stack_params([params, old])  # one compiled program for both
    out = evaluate_params(env, batch, lambda p: lambda pp, key, obs, state: noop, [6000, 6001], num_steps=20)
    group_up = out["reward_terms"][..., GROUP_UP].sum(axis=-1) / env.num_agents  # [start, world]
    assert np.all(group_up[0] == 0.0)
    # on the 3 m start ring (the one before) at least one pair starts within 5 m and earns 10 a decision
    assert np.all(group_up[1] >= 10.0 * 20 * 2 / 3 - 1e-3)
