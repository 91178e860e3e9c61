import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core import registry
from hivex_jax.envs import BUNDLED_ENV_IDS


def test_list_has_wind_farm():
    assert "WindFarmControl-v0" in hivex_jax.registered_envs()


def test_unknown_id_suggests_closest():
    with pytest.raises(KeyError, match="Did you mean: WindFarmControl-v0"):
        hivex_jax.make("WindFarmControll-v0")


def test_duplicate_and_malformed_ids_rejected():
    with pytest.raises(ValueError, match="already registered"):
        hivex_jax.register("WindFarmControl-v0", "hivex_jax.envs.wind_farm_control:WindFarmControl")
    with pytest.raises(ValueError, match="must look like"):
        hivex_jax.register("wind farm", "x:y")


def test_make_splits_static_and_dynamic_overrides():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=16, task=1, pattern=3)
    assert env.num_agents == 16
    assert int(params.task) == 1 and int(params.pattern) == 3
    assert params.task.dtype == jnp.int32


def test_make_level_names_the_envs_level_field():
    """`level=` works as in the CLI and configs: it names `env.level_field` (`pattern`, `terrain_level`)."""
    assert int(hivex_jax.make("WindFarmControl-v0", level=3)[1].pattern) == 3
    assert int(hivex_jax.make("WildfireResourceManagement-v0", level=4)[1].terrain_level) == 4
    with pytest.raises(ValueError, match="unknown pattern 11"):  # validated as the field itself
        hivex_jax.make("WindFarmControl-v0", level=11)
    with pytest.raises(TypeError, match="not both"):
        hivex_jax.make("WindFarmControl-v0", level=1, pattern=2)
    with pytest.raises(TypeError, match="has no level"):
        hivex_jax.make("OceanPlasticCollection-v0", level=1)


def test_make_rejects_unknown_option_and_bad_values():
    with pytest.raises(TypeError, match="did you mean"):
        hivex_jax.make("WindFarmControl-v0", patern=3)
    hivex_and_farms = r"unknown pattern 11; values are \(0, 1, 2, 3, 4, 5, 6, 7, 8\) .* 9 Horns Rev"
    with pytest.raises(ValueError, match=hivex_and_farms):
        hivex_jax.make("WindFarmControl-v0", pattern=11)
    assert int(hivex_jax.make("WindFarmControl-v0", pattern=9)[1].pattern) == 9  # a real farm (Horns Rev 1)
    with pytest.raises(ValueError, match="num_agents must be one of"):
        hivex_jax.make("WindFarmControl-v0", num_agents=5)


def test_world_key_is_stable_and_traceable():
    k = hivex_jax.world_key(6000)
    assert np.array_equal(np.asarray(k), np.asarray(jax.random.PRNGKey(6000)))
    traced = jax.jit(registry.world_key)(jnp.uint32(6000))
    assert np.array_equal(np.asarray(k), np.asarray(traced))
    assert not np.array_equal(np.asarray(k), np.asarray(hivex_jax.world_key(6001)))


def test_stack_params_gives_leading_batch_axis():
    env, params = hivex_jax.make("WindFarmControl-v0")
    batch = hivex_jax.stack_params([env.variant_params(params, task=t) for t in (0, 1, 1)])
    assert batch.task.shape == (3,) and batch.task_weights.shape == (3, 2, 2)


def test_hivex_list_names_every_registered_env_and_the_jaxmarl_prefix(capsys):
    from hivex_jax.cli import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in BUNDLED_ENV_IDS:
        assert env_id in out
    assert "jaxmarl/<name>" in out


def test_hivex_list_says_which_wind_farm_patterns_are_hivex_levels_and_which_real_farms(capsys):
    from hivex_jax.cli import main
    from hivex_jax.envs.wind_farm_control.params import ALL_PATTERN_NAMES, FIRST_REAL_FARM

    assert main(["list"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("WindFarmControl-v0")]
    assert "patterns 0-8 (HIVEX's levels), 9-10 (real farms: Horns Rev 1, Lillgrund)" in row
    # what the line says is what the env accepts: 0-8 its levels, 9 and 10 the two real farms
    env, params = hivex_jax.make("WindFarmControl-v0")
    assert env.level_values == tuple(range(9)) and FIRST_REAL_FARM == 9
    assert ALL_PATTERN_NAMES[9:] == ("Horns Rev 1", "Lillgrund")
    assert int(env.variant_params(params, level=10).pattern) == 10
    with pytest.raises(ValueError, match="unknown pattern 11"):
        env.variant_params(params, level=11)
