"""`first_argmin` / `first_argmax` give `jnp.argmin` / `jnp.argmax`'s index: hand cases with ties and
infinities, and random arrays with many ties over leading axes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.core.reductions import first_argmax, first_argmin

INF = np.inf


@pytest.mark.parametrize(
    "row, low, high",
    [
        ([3.0, 1.0, 2.0, 1.0], 1, 0),  # ties go to the first
        ([INF, INF, INF], 0, 0),  # nothing finite: the first
        ([INF, 5.0, INF, 5.0], 1, 0),
        ([0.0, -0.0, 0.0], 0, 0),  # -0 == 0: a tie
        ([-INF, 2.0, -INF], 0, 1),
        ([7.0], 0, 0),
    ],
)
def test_hand_cases(row, low, high):
    x = jnp.asarray(row, jnp.float32)
    assert int(first_argmin(x)) == low == int(jnp.argmin(x))
    assert int(first_argmax(x)) == high == int(jnp.argmax(x))


def test_matches_jnp_over_batches_with_ties():
    """Values from a small set (many ties) and infinities, over two leading axes, jitted."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, size=(4, 3, 257)).astype(np.float32)
    x[rng.random(x.shape) < 0.3] = INF
    x[1, 2] = INF  # a row with nothing finite
    got_min, got_max = jax.jit(lambda v: (first_argmin(v), first_argmax(v)))(jnp.asarray(x))
    np.testing.assert_array_equal(got_min, np.argmin(x, axis=-1))
    np.testing.assert_array_equal(got_max, np.argmax(x, axis=-1))
    assert got_min.dtype == jnp.int32 and got_min.shape == (4, 3)
