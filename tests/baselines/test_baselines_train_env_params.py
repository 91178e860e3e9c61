"""`train_env_params`: EnvParams overrides that training rollouts play and evaluation does not (e.g. the
main job's 500-decision training episodes), annealed to the env's own values when asked
(`train_env_params_anneal_updates`); bad fields are refused in one line before compiling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import (
    ConfigError,
    ExtensionsConfig,
    curriculum_start_params,
    from_dict,
    validate_env,
)
from baselines.core.extensions import EnvParamsAnneal
from baselines.core.ppo import make_train


def _anneal(config, params) -> EnvParamsAnneal:
    """The curriculum `make_train` builds for `config` on the env's own `params`."""
    return EnvParamsAnneal(ExtensionsConfig.of(config), params, curriculum_start_params(config))


def _episode_lengths(**changes) -> tuple:
    """(train, lengths of the episodes that ended in one 8-step rollout of 4 envs)."""
    train = make_train(from_dict({**TINY_CONFIG, **changes}))
    _, (_, episode) = jax.jit(train.rollout)(train.init(jax.random.key(0)))
    episode = jax.device_get(episode)
    return train, episode["length"][episode["done"]]


@pytest.mark.slow
def test_training_plays_the_override_and_evaluation_keeps_the_envs_params():
    train, lengths = _episode_lengths(train_env_params={"max_steps": 3})
    assert int(train.train_params.max_steps) == 3
    assert int(train.env_params.max_steps) == 12  # what held-out evaluation plays (TinyParams' default)
    # 8 steps of 3-step episodes: every env ends two (agents leaving the box can end one sooner)
    assert len(lengths) >= 2 * 4 and np.all(lengths <= 3)

    train, lengths = _episode_lengths()
    assert train.train_params is train.env_params
    assert len(lengths) == 0  # 12-step episodes: none ends within the first 8 steps unless all leave
    assert np.all(lengths <= 12)


def test_override_goes_on_top_of_env_params():
    train = make_train(
        from_dict({**TINY_CONFIG, "env_params": {"max_steps": 7}, "train_env_params": {"max_steps": 4}})
    )
    assert (int(train.train_params.max_steps), int(train.env_params.max_steps)) == (4, 7)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"max_stepz": 3}, r"train_env_params \{'max_stepz': 3\}: .*unknown option.*max_steps"),
        ({"max_steps": "many"}, r"train_env_params \{'max_steps': 'many'\}: "),
        ({"num_agents": 2}, r"train_env_params takes EnvParams fields only; \['num_agents'\] are static"),
        ({"task": 0}, r"train_env_params cannot set the task"),
    ],
)
def test_bad_fields_are_refused_in_one_line(override, message):
    with pytest.raises(ConfigError, match=message) as caught:
        validate_env(from_dict({**TINY_CONFIG, "train_env_params": override}))
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------- train_env_params_anneal_updates
def _lengths_at(update: int, **changes) -> np.ndarray:
    """Lengths of the episodes that ended in one 8-step rollout of 4 envs started at `update`."""
    train = make_train(from_dict({**TINY_CONFIG, **changes}))
    runner = train.init(jax.random.key(0)).replace(update=jnp.int32(update))
    _, (_, episode) = jax.jit(train.rollout)(runner)
    episode = jax.device_get(episode)
    return episode["length"][episode["done"]]


@pytest.mark.slow
def test_an_annealed_override_moves_to_the_envs_value():
    anneal = {"train_env_params": {"max_steps": 3}, "train_env_params_anneal_updates": 3}
    # update 0 plays the override (3-step episodes), update 1 of 3 a third of the way to the env's 12
    # (6), update 3 and later the env's own 12 (no episode ends within 8 steps unless all agents leave)
    first = _lengths_at(0, **anneal)
    assert len(first) >= 2 * 4 and np.all(first <= 3)
    third = _lengths_at(1, **anneal)
    assert len(third) >= 4 and np.all(third <= 6) and np.any(third > 3)
    assert len(_lengths_at(3, **anneal)) == len(_lengths_at(0)) == 0
    assert len(_lengths_at(50, **anneal)) == 0


def test_the_anneal_interpolates_each_field_in_its_own_type():
    from hivex_jax import make

    _, params = make("OceanPlasticCollection-v0")  # vessel_radius 2.5 (f32), max_steps 1000 (int)
    config = from_dict(
        {
            "env_id": "OceanPlasticCollection-v0",
            "train_env_params": {"vessel_radius": 5.0, "max_steps": 500},
            "train_env_params_anneal_updates": 10,
        }
    )
    anneal = _anneal(config, params)
    start = params.replace(vessel_radius=jnp.float32(5.0), max_steps=jnp.asarray(500, params.max_steps.dtype))
    for update, radius, steps in ((0, 5.0, 500), (4, 4.0, 700), (10, 2.5, 1000), (99, 2.5, 1000)):
        moved = anneal(start, jnp.int32(update))
        np.testing.assert_allclose(float(moved.vessel_radius), radius, rtol=1e-6)
        assert int(moved.max_steps) == steps and moved.max_steps.dtype == params.max_steps.dtype
    # a fused member carries the env's values as its own arrays and is read from them
    assert anneal.arrays() == {"env_params_final.vessel_radius": 2.5, "env_params_final.max_steps": 1000.0}
    member = {
        "env_params_final.vessel_radius": jnp.float32(3.0),
        "env_params_final.max_steps": jnp.float32(600),
    }
    moved = anneal(start, jnp.int32(5), member)
    np.testing.assert_allclose(float(moved.vessel_radius), 4.0, rtol=1e-6)
    assert int(moved.max_steps) == 550
    # off: the params as given
    assert _anneal(config.replace(train_env_params_anneal_updates=0), params)(start, jnp.int32(5)) is start


def test_bad_anneals_are_refused_in_one_line_and_a_late_one_warned():
    with pytest.raises(ConfigError, match="train_env_params_anneal_updates must be >= 0"):
        from_dict(
            {**TINY_CONFIG, "train_env_params": {"max_steps": 3}, "train_env_params_anneal_updates": -1}
        )
    with pytest.raises(ConfigError, match="anneals train_env_params, but none are set"):
        from_dict({**TINY_CONFIG, "train_env_params_anneal_updates": 4})
    late = from_dict(
        {**TINY_CONFIG, "train_env_params": {"max_steps": 3}, "train_env_params_anneal_updates": 7}
    )
    assert late.num_updates == 6
    assert any("never reach the env's values" in note for note in late.recipe_notes())
    assert not late.replace(train_env_params_anneal_updates=6).recipe_notes()


# ---------------------------------------------------------------- train_env_params_start (grown in)
def test_a_grown_in_setting_moves_from_its_start_to_train_env_params_and_stays():
    grown = {
        "train_env_params": {"max_steps": 3},
        "train_env_params_start": {"max_steps": 12},
        "train_env_params_anneal_updates": 3,
    }
    # update 0 plays the start (the env's own 12: no episode ends within 8 steps unless all agents
    # leave), update 2 of 3 two thirds of the way to 3 (6), update 3 and later train_env_params' 3
    assert len(_lengths_at(0, **grown)) == 0
    two_thirds = _lengths_at(2, **grown)
    assert len(two_thirds) >= 4 and np.all(two_thirds <= 6) and np.any(two_thirds > 3)
    for update in (3, 50):
        last = _lengths_at(update, **grown)
        assert len(last) >= 2 * 4 and np.all(last <= 3)


def test_a_grown_in_anneal_interpolates_from_the_start_in_each_fields_type():
    from hivex_jax import make

    _, params = make("OceanPlasticCollection-v0")  # vessel_radius 2.5 (f32), max_steps 1000 (int)
    config = from_dict(
        {
            "env_id": "OceanPlasticCollection-v0",
            "train_env_params": {"vessel_radius": 7.5, "max_steps": 500},
            "train_env_params_start": {"vessel_radius": 2.5, "max_steps": 1000},
            "train_env_params_anneal_updates": 10,
        }
    )
    anneal = _anneal(config, params)
    trained = params.replace(
        vessel_radius=jnp.float32(7.5), max_steps=jnp.asarray(500, params.max_steps.dtype)
    )
    for update, radius, steps in ((0, 2.5, 1000), (4, 4.5, 800), (10, 7.5, 500), (99, 7.5, 500)):
        moved = anneal(trained, jnp.int32(update))
        np.testing.assert_allclose(float(moved.vessel_radius), radius, rtol=1e-6)
        assert int(moved.max_steps) == steps and moved.max_steps.dtype == params.max_steps.dtype
    # a fused member carries its start values as its own arrays and is read from them
    assert anneal.arrays() == {"env_params_start.vessel_radius": 2.5, "env_params_start.max_steps": 1000.0}
    member = {
        "env_params_start.vessel_radius": jnp.float32(5.5),
        "env_params_start.max_steps": jnp.float32(600),
    }
    moved = anneal(trained, jnp.int32(5), member)
    np.testing.assert_allclose(float(moved.vessel_radius), 6.5, rtol=1e-6)
    assert int(moved.max_steps) == 550
    # the start field only: the other train_env_params field stays at its training value throughout
    one = _anneal(config.replace(train_env_params_start={"vessel_radius": 2.5}), params)
    moved = one(trained, jnp.int32(4))
    assert int(moved.max_steps) == 500 and abs(float(moved.vessel_radius) - 4.5) < 1e-6
    # grown in without the params it starts from: refused, not a silent anneal from nowhere
    with pytest.raises(TypeError, match="start params"):
        EnvParamsAnneal(ExtensionsConfig.of(config), params)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"train_env_params_anneal_updates": 0},
            r"train_env_params_start needs train_env_params_anneal_updates > 0",
        ),
        (
            {"train_env_params_start": {"max_steps": 12, "min_x": 0}},
            r"fields \['min_x'\] are not in train_env_params",
        ),
    ],
)
def test_bad_starts_are_refused_in_one_line(changes, message):
    grown = {
        **TINY_CONFIG,
        "train_env_params": {"max_steps": 3},
        "train_env_params_start": {"max_steps": 12},
        "train_env_params_anneal_updates": 3,
    }
    with pytest.raises(ConfigError, match=message) as caught:
        from_dict({**grown, **changes})
    assert "\n" not in str(caught.value)


def test_a_start_outside_the_envs_bounds_is_refused_and_a_late_one_warned():
    config = from_dict(
        {
            "env_id": "OceanPlasticCollection-v0",
            "train_env_params": {"vessel_radius": 7.5},
            "train_env_params_start": {"vessel_radius": 99.0},
            "train_env_params_anneal_updates": 10,
        }
    )
    with pytest.raises(ConfigError, match=r"^train_env_params_start \{'vessel_radius': 99.0\}: ") as caught:
        validate_env(config)
    assert "\n" not in str(caught.value)
    late = from_dict(
        {
            **TINY_CONFIG,
            "train_env_params": {"max_steps": 3},
            "train_env_params_start": {"max_steps": 12},
            "train_env_params_anneal_updates": 7,
        }
    )
    assert any(
        "train_env_params_start {'max_steps': 12} never reach train_env_params" in n
        for n in late.recipe_notes()
    )


def test_start_values_are_data_and_which_fields_is_static():
    from baselines.config.schema import key_kind, program_signature

    config = from_dict(
        {
            **TINY_CONFIG,
            "train_env_params": {"max_steps": 3},
            "train_env_params_start": {"max_steps": 12},
            "train_env_params_anneal_updates": 3,
        }
    )
    assert key_kind("train_env_params_start") == "data"
    signature = program_signature(config)
    assert program_signature(config.replace(train_env_params_start={"max_steps": 9})) == signature
    assert program_signature(config.replace(train_env_params_start={})) != signature
