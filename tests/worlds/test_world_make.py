"""`hivex_jax.make(id, world_files=..., stress_worlds=...)`: the trainer's env options reach the worlds."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds import save_world, world_of_seed
from hivex_jax.worlds.stress import StressWorlds


def test_make_with_world_files_resets_into_the_file_worlds(tmp_path):
    env, params = hivex_jax.make("WildfireResourceManagement-v0")
    raw = env.unwrapped
    for seed in (6000, 6001):
        save_world(world_of_seed(raw, params, seed), tmp_path / f"w{seed}", raw, seed=seed)
    files_env, files_params = hivex_jax.make(
        "WildfireResourceManagement-v0", world_files=str(tmp_path / "w*")
    )
    reset = jax.jit(files_env.reset)
    heights = [
        np.asarray(files_env.inner_state(reset(world_key(s), files_params)[1]).heights) for s in range(8)
    ]
    wanted = [world_of_seed(raw, params, s)["heights"] for s in (6000, 6001)]
    # every reset is one of the two file worlds, and both occur over 8 keys
    matches = [[np.array_equal(h, w) for w in wanted] for h in heights]
    assert all(any(m) for m in matches)
    assert any(m[0] for m in matches) and any(m[1] for m in matches)


def test_make_with_stress_worlds_and_bad_globs():
    env, _ = hivex_jax.make("OceanPlasticCollection-v0", stress_worlds="far_corner")
    assert isinstance(env.env, StressWorlds) and env.env.names == ("far_corner",)
    with pytest.raises(UserError, match="matches no file"):
        hivex_jax.make("OceanPlasticCollection-v0", world_files="/nonexistent/*.png")
    with pytest.raises(UserError, match="unknown stress world"):
        hivex_jax.make("OceanPlasticCollection-v0", stress_worlds="volcano")
