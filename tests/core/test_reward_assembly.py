"""The reward assembly every env's step ends with (hivex_jax.core.rewards)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.core.rewards import assemble_rewards


def test_terms_are_stacked_by_column_weighted_and_summed():
    # columns given out of order: the stack follows the column numbers, not the dict's order
    columns = {1: jnp.asarray([10.0, 20.0]), 0: jnp.asarray([1.0, 2.0]), 2: jnp.asarray([True, False])}
    rewarded = assemble_rewards(columns, jnp.asarray([0.5, 2.0, -3.0]))
    np.testing.assert_array_equal(rewarded.raw, [[1.0, 10.0, 1.0], [2.0, 20.0, 0.0]])
    np.testing.assert_array_equal(rewarded.terms, [[0.5, 20.0, -3.0], [1.0, 40.0, 0.0]])
    np.testing.assert_array_equal(rewarded.reward, [17.5, 41.0])
    assert rewarded.raw.dtype == jnp.float32
    assert rewarded.info().keys() == {"reward_terms", "raw_reward_terms"}
    assert rewarded.info()["reward_terms"] is rewarded.terms


@pytest.mark.parametrize("columns", [{0: jnp.zeros(2)}, {0: jnp.zeros(2), 2: jnp.zeros(2)}])
def test_a_missing_or_stray_column_is_refused(columns):
    with pytest.raises(ValueError, match="reward columns must be exactly 0..1"):
        assemble_rewards(columns, jnp.ones(2))
