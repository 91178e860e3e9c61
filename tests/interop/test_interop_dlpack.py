"""DLPack handover: batched observations and rewards leave JAX without a copy."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from hivex_jax.interop.dlpack import from_torch, to_numpy, to_torch


@pytest.fixture(scope="module")
def batch(fake_hybrid):
    """Observations and rewards of a jitted, vmapped step over 4 worlds."""
    env, params = fake_hybrid
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    noop = jax.tree.map(lambda x: np.broadcast_to(x, (4,) + x.shape), env.action_space(params).noop())
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    obs, _, reward, terminated, _, _ = step(keys, state, noop, params)
    return {"obs": obs, "reward": reward, "terminated": terminated}


def test_numpy_handover_is_zero_copy(batch):
    out = to_numpy(batch)
    for name, x, y in (
        ("vector", batch["obs"]["vector"], out["obs"]["vector"]),
        ("visual", batch["obs"]["visual"], out["obs"]["visual"]),
        ("reward", batch["reward"], out["reward"]),
        ("terminated", batch["terminated"], out["terminated"]),
    ):
        assert y.__array_interface__["data"][0] == x.unsafe_buffer_pointer(), f"{name} was copied"
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(y, np.asarray(x))
    assert out["obs"]["visual"].dtype == np.uint8


def test_torch_handover_is_zero_copy(batch):
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed (optional; hivex_jax does not depend on it)"
    )
    out = to_torch(batch)
    for x, t in (
        (batch["obs"]["vector"], out["obs"]["vector"]),
        (batch["obs"]["visual"], out["obs"]["visual"]),
        (batch["reward"], out["reward"]),
    ):
        assert isinstance(t, torch.Tensor)
        assert t.data_ptr() == x.unsafe_buffer_pointer()
        np.testing.assert_array_equal(t.numpy(), np.asarray(x))
    actions = {"continuous": torch.zeros(4, 3, 2), "discrete": torch.ones(4, 3, 2, dtype=torch.int32)}
    back = from_torch(actions)
    assert isinstance(back["discrete"], jax.Array)
    assert back["discrete"].unsafe_buffer_pointer() == actions["discrete"].data_ptr()
    np.testing.assert_array_equal(np.asarray(back["discrete"]), 1)


def test_torch_helpers_name_the_missing_package(batch):
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="torch"):
            to_torch(batch)
    else:
        pytest.skip("PyTorch is installed: the missing-package message cannot be shown")
