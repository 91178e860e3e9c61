"""The reward assembly every env's `step_env` ends with: the unweighted terms, named by their column
constant, stacked in `reward_term_names` order, weighted by the task's row and summed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Rewards(NamedTuple):
    """One step's rewards: `reward` f32[A] (the sum of the weighted terms), `terms` f32[A, K] weighted,
    `raw` f32[A, K] unweighted."""

    reward: jax.Array
    terms: jax.Array
    raw: jax.Array

    def info(self) -> dict[str, jax.Array]:
        """The `info` entries every env reports: `reward_terms` (weighted) and `raw_reward_terms`."""
        return {"reward_terms": self.terms, "raw_reward_terms": self.raw}


def assemble_rewards(columns: Mapping[int, jax.Array], weights: jax.Array) -> Rewards:
    """`{column: f32[A]}` for every column 0..K-1 and the task's weights f32[K] -> `Rewards`."""
    num_terms = weights.shape[-1]
    if sorted(columns) != list(range(num_terms)):
        raise ValueError(
            f"reward columns must be exactly 0..{num_terms - 1} (one per term of the weight row); "
            f"got {sorted(columns)}"
        )
    raw = jnp.stack([columns[k] for k in range(num_terms)], axis=-1).astype(jnp.float32)
    terms = raw * weights
    return Rewards(reward=jnp.sum(terms, axis=-1), terms=terms, raw=raw)
