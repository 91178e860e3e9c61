"""`first_argmin` / `first_argmax` give `jnp.argmin` / `jnp.argmax`'s index: hand cases with ties and
infinities, and random arrays with many ties over leading axes; `exact_reduce` gives `jnp`'s reductions bit
for bit without XLA's CPU reduce-window rewrite."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hivex_jax.core.reductions import CPU_REDUCE_CHUNK, exact_reduce, first_argmax, first_argmin

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


@pytest.mark.parametrize("axes", [(1, 2), -1, (0, 2), 1])
def test_exact_reduce_is_numpys_reduction_in_pieces(axes):
    """Dimensions longer than a piece (39, 70: two and three pieces; 3: one), integers, booleans and floats
    with infinities and ties: the same values as `jnp.any`, an integer `jnp.sum`, `jnp.min`, `jnp.max`."""
    rng = np.random.default_rng(0)
    ints = jnp.asarray(rng.integers(-5, 6, (3, 39, 70)), jnp.int32)
    floats = jnp.asarray(
        np.where(rng.random((3, 39, 70)) < 0.1, INF, rng.normal(size=(3, 39, 70))), jnp.float32
    )
    flags = ints > 4
    cases = [
        (flags, "any", jnp.any),
        (ints, "sum", jnp.sum),
        (floats, "min", jnp.min),
        (floats, "max", jnp.max),
    ]
    for x, kind, reference in cases:
        got = jax.jit(lambda x, kind=kind: exact_reduce(x, kind, axes))(x)
        np.testing.assert_array_equal(got, reference(x, axis=axes), err_msg=kind)


def test_exact_reduce_leaves_out_the_cpu_reduce_window_and_refuses_float_sums():
    flags = jnp.zeros((4, 39, 39), bool)
    if jax.default_backend() == "cpu":  # what it is for: XLA's CPU backend rewrites the plain `any` (39 > 32)
        assert CPU_REDUCE_CHUNK == 32
        plain = jax.jit(lambda x: jnp.any(x, axis=(1, 2))).lower(flags).compile().as_text()
        pieces = jax.jit(lambda x: exact_reduce(x, "any", (1, 2))).lower(flags).compile().as_text()
        assert "reduce-window" in plain and "reduce-window" not in pieces
    with pytest.raises(ValueError, match="sums integers only"):
        exact_reduce(jnp.ones((40,), jnp.float32), "sum", 0)
