"""ActionLayout: every shape of hybrid action maps to the right space and converts both ways."""

from __future__ import annotations

import numpy as np
import pytest

from hivex_jax.interop._common import ActionLayout

CASES = {
    "hybrid": ActionLayout(2, (3, 2)),
    "continuous": ActionLayout(3, ()),
    "discrete": ActionLayout(0, (5,)),
    "multi_discrete": ActionLayout(0, (2, 4, 3)),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_gymnasium_space_and_round_trip(kind):
    gym = pytest.importorskip(
        "gymnasium", reason="gymnasium is not installed (pip install 'hivex-jax[interop]')"
    )
    layout = CASES[kind]
    assert layout.kind == kind
    space = layout.gymnasium_space()
    expected = {
        "hybrid": gym.spaces.Dict,
        "continuous": gym.spaces.Box,
        "discrete": gym.spaces.Discrete,
        "multi_discrete": gym.spaces.MultiDiscrete,
    }[kind]
    assert isinstance(space, expected)
    space.seed(0)
    samples = [space.sample() for _ in range(4)]
    batch = (
        {k: np.stack([s[k] for s in samples]) for k in samples[0]} if kind == "hybrid" else np.stack(samples)
    )
    native = layout.to_native(batch, (2, 2))
    assert native["continuous"].shape == (2, 2, layout.continuous_dims)
    assert native["continuous"].dtype == np.float32 and native["discrete"].dtype == np.int32
    assert native["discrete"].shape == (2, 2, len(layout.discrete_branches))
    assert (native["discrete"] < np.asarray(layout.discrete_branches or [1])).all()
    back = layout.from_native(native)
    for x, y in zip(
        [batch] if not isinstance(batch, dict) else [batch[k] for k in sorted(batch)],
        [back] if not isinstance(back, dict) else [back[k] for k in sorted(back)],
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(x).reshape(np.asarray(y).shape), y)
    noop = layout.noop((3,))
    assert space.contains(first_agent(noop))


def first_agent(tree):
    """Agent 0 of a batched action (NumPy), in the same layout."""
    if isinstance(tree, dict):
        return {k: v[0] for k, v in tree.items()}
    return tree[0]


@pytest.mark.parametrize("kind", list(CASES))
def test_jaxmarl_space_samples_convert(kind):
    pytest.importorskip("jaxmarl", reason="jaxmarl is not installed (pip install 'hivex-jax[dev]')")
    import jax

    layout = CASES[kind]
    space = layout.jaxmarl_space()
    sample = space.sample(jax.random.PRNGKey(0))
    native = layout.to_native(sample, (1,), xp=jax.numpy)
    assert native["discrete"].shape == (1, len(layout.discrete_branches))
    assert native["continuous"].shape == (1, layout.continuous_dims)
    assert bool(space.contains(sample))


def test_bad_action_names_the_layout():
    with pytest.raises(ValueError, match="hybrid action space"):
        CASES["hybrid"].to_native(np.zeros((4, 2)), (4,))
