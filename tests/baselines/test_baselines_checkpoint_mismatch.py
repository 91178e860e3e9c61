"""A checkpoint whose saved state has other arrays than this version builds fails in one line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from baselines.run import checkpoint
from hivex_jax.core.errors import UserError


def test_restore_of_a_state_with_an_extra_array_is_a_one_line_error(tmp_path):
    saved = {"params": jnp.arange(3.0), "env_field_since_removed": jnp.ones((2, 4))}
    checkpoint.save(tmp_path, 5, saved, {"note": "test"})
    # Same structure: restores exactly (the check does not fire on a matching state).
    state, meta = checkpoint.restore(tmp_path, jax.eval_shape(lambda: saved))
    assert jnp.array_equal(state["params"], saved["params"]) and meta["note"] == "test"
    # One array fewer than on disk (an env state field removed since): UserError, one line.
    with pytest.raises(UserError) as info:
        checkpoint.restore(tmp_path, {"params": jax.ShapeDtypeStruct((3,), jnp.float32)})
    message = str(info.value)
    assert "\n" not in message and "checkpoints/5" in message and "1 arrays" in message
