"""`hivex_jax.core.seeding`: one module for world keys, seed ranges, key -> integer seeds and the keys
derived from a world seed; old import paths keep working."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core import seeding


def test_old_import_paths_are_the_seeding_functions():
    from hivex_jax.core.registry import world_key as registry_world_key
    from hivex_jax.interop import _common
    from hivex_jax.wrappers import seed_range as wrappers_seed_range
    from hivex_jax.wrappers.world_pool import seed_range as pool_seed_range

    assert hivex_jax.world_key is seeding.world_key is registry_world_key
    assert wrappers_seed_range is pool_seed_range is seeding.seed_range
    assert _common.episode_key is seeding.adapter_episode_key
    assert _common.next_world_seed is seeding.adapter_next_world_seed


def test_world_key_is_the_integer_packed_into_a_key():
    # PRNGKey(s) for s < 2**32 is [0, s]: "world 6000" is the same key everywhere, traced or not
    assert np.array_equal(seeding.world_key(6000), [0, 6000])
    assert np.array_equal(jax.jit(seeding.world_key)(jnp.uint32(6000)), [0, 6000])


@pytest.mark.parametrize(
    ("spec", "message"), [("", "at least one"), ([-1], r"\[0, 2\*\*32\)"), ([2**32], r"\[0, 2\*\*32\)")]
)
def test_world_pool_seeds_rejects_empty_and_out_of_range_pools(spec, message):
    with pytest.raises(ValueError, match=message):
        seeding.world_pool_seeds(spec)


def test_world_noise_seed_is_drawn_from_the_world_key_not_the_world_seed():
    from hivex_jax.envs.drone_based_reforestation import generator as dbr
    from hivex_jax.envs.ocean_plastic_collection import generator as opc

    key = seeding.world_key(6000)
    noise = int(seeding.seed_from_key(key))
    assert noise == int(jax.random.bits(key, (), jnp.uint32)) and noise != 6000
    assert int(dbr.world_noise_seed(key)) == noise == int(opc.world_noise_seed(key))


def test_rollout_keys_depend_on_the_world_seed_and_step_only():
    key = jax.random.PRNGKey(3)
    a = seeding.rollout_step_keys(seeding.rollout_key(key, 6000), 7)
    b = jax.jit(lambda s, t: seeding.rollout_step_keys(seeding.rollout_key(key, s), t))(jnp.uint32(6000), 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], a[1])  # the action and env keys differ
    other_world = seeding.rollout_step_keys(seeding.rollout_key(key, 6001), 7)
    assert not np.array_equal(a[1], other_world[1])


def test_adapter_keys_name_worlds():
    episode = seeding.adapter_episode_key(6000)
    assert not np.array_equal(episode, seeding.world_key(6000))  # the world's own key stays the world's
    steps = {tuple(np.asarray(seeding.adapter_step_key(episode, t))) for t in range(5)}
    assert len(steps) == 5
    next_seed = seeding.adapter_next_world_seed(episode)
    assert next_seed.dtype == jnp.uint32
    assert int(next_seed) != int(seeding.adapter_next_world_seed(seeding.adapter_episode_key(6001)))
