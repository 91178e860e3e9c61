"""The scripted controller of Wildfire Resource Management: the whole budget where the task pays most."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.wildfire_resource_management import dynamics
from hivex_jax.envs.wildfire_resource_management.params import NUM_BRANCHES, WildfireParams, task_weight_row


def scripted_policy(obs: dict[str, jax.Array], params: WildfireParams) -> dict[str, jax.Array]:
    """Put the whole budget where the task pays most per unit: neighbours (scaled by
    `neighbour_resource_scale`) when their weight beats self's, else self; take it from the other side.

    Task 0 and 2 -> all to the 3 neighbours, task 1 (Keep All) -> all to self. Uses no fire information:
    a tower's observation does not say where the tower is, so it cannot tell which neighbour is nearer.
    """
    a = obs["vector"].shape[0]
    w = task_weight_row(params)
    to_neighbours = w[1] * params.neighbour_resource_scale > w[0]
    self_branch = jnp.where(to_neighbours, dynamics.REMOVE, dynamics.ADD)
    nb_branch = jnp.where(to_neighbours, dynamics.ADD, dynamics.REMOVE)
    row = jnp.stack([self_branch, nb_branch, nb_branch, nb_branch]).astype(jnp.int32)
    return {
        "continuous": jnp.zeros((a, 0), jnp.float32),
        "discrete": jnp.broadcast_to(row, (a, NUM_BRANCHES)),
    }
