import jax
import jax.numpy as jnp
import pytest

from hivex_jax.core import spaces


def test_discrete_sample_and_contains():
    s = spaces.Discrete(3, (5,))
    x = s.sample(jax.random.PRNGKey(0))
    assert x.shape == (5,) and x.dtype == jnp.int32
    assert bool(s.contains(x))
    assert not bool(s.contains(jnp.full((5,), 3)))
    assert not bool(s.contains(jnp.zeros((4,), jnp.int32)))
    assert not bool(s.contains(jnp.zeros((5,), jnp.float32)))


def test_multidiscrete_respects_each_branch():
    s = spaces.MultiDiscrete((2, 5), (4, 2))
    xs = jax.vmap(s.sample)(jax.random.split(jax.random.PRNGKey(1), 200))
    assert int(xs[..., 0].max()) == 1 and int(xs[..., 1].max()) == 4
    assert int(xs.min()) == 0
    assert not bool(s.contains(jnp.asarray([[2, 0]] * 4)))
    with pytest.raises(ValueError):
        spaces.MultiDiscrete((2, 5), (4, 3))


def test_box_bounds_and_dtype():
    s = spaces.Box(-1.0, 1.0, (3, 2))
    x = s.sample(jax.random.PRNGKey(2))
    assert bool(s.contains(x))
    assert not bool(s.contains(x + 3.0))
    assert not bool(s.contains(x.astype(jnp.float16)))
    img = spaces.Box(0, 255, (2, 4, 4, 3), jnp.uint8)
    y = img.sample(jax.random.PRNGKey(3))
    assert y.dtype == jnp.uint8 and bool(img.contains(y))


def test_hybrid_action_space_sample_noop_and_jit():
    s = spaces.HybridAction(3, 2, (2, 3))
    a = jax.jit(s.sample)(jax.random.PRNGKey(4))
    assert a["continuous"].shape == (3, 2) and a["discrete"].shape == (3, 2)
    assert bool(jax.jit(s.contains)(a))
    assert bool(s.contains(s.noop()))
    assert not bool(s.contains({"continuous": a["continuous"]}))
    assert s == spaces.HybridAction(3, 2, (2, 3)) and s != spaces.HybridAction(3, 1, (2, 3))
