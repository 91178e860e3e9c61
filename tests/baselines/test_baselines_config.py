"""Config loading, overrides, derived sizes and the errors raised before anything compiles."""

import pytest

from baselines.config import (
    DEFAULT_CONFIG,
    ConfigError,
    IPPOConfig,
    MAPPOConfig,
    from_dict,
    load_config,
    parse_overrides,
)

pytestmark = pytest.mark.timeout(120)


def test_default_config_is_ippo_on_wind_farm_task0_pattern0():
    config = load_config()
    assert isinstance(config, IPPOConfig)
    assert (config.env_id, config.task, config.level) == ("WindFarmControl-v0", 0, 0)
    assert DEFAULT_CONFIG.name == "ippo_wind_farm_control.yaml"


def test_mappo_config_file():
    config = load_config(DEFAULT_CONFIG.parent / "mappo_wind_farm_control.yaml")
    assert isinstance(config, MAPPOConfig) and config.critic_agent_id


def test_overrides_are_typed_and_derived_sizes_follow():
    config = load_config(
        None,
        [
            "lr=1e-3",
            "num_envs=4",
            "num_steps=16",
            "total_env_steps=1000",
            "chunk_updates=3",
            "hidden_sizes=[8,8]",
            "anneal_lr=false",
            "env_params.wind_noise_degrees=5",
            "level=null",
        ],
    )
    assert config.lr == 1e-3 and isinstance(config.lr, float)
    assert config.hidden_sizes == (8, 8) and config.anneal_lr is False and config.level is None
    assert config.env_params == {"wind_noise_degrees": 5}
    assert config.steps_per_update == 64
    # 1000 / 64 = 15.6 updates -> rounded up to whole chunks of 3: 6 chunks, 18 updates
    assert (config.num_chunks, config.num_updates, config.env_steps) == (6, 18, 18 * 64)
    assert config.minibatch_env_steps == 64 // config.num_minibatches
    assert config.num_actors(8) == 32


def test_yaml_round_trip(tmp_path):
    config = load_config(None, ["num_seeds=5", "test_worlds=7000:7010"])
    path = tmp_path / "c.yaml"
    path.write_text(config.to_yaml())
    assert load_config(path) == config


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(ConfigError, match="unknown config key") as err:
        load_config(None, ["num_env=4"])
    assert "'num_env' (did you mean num_envs" in str(err.value)


def test_minibatches_must_divide_the_batch():
    with pytest.raises(ConfigError, match="not divisible into num_minibatches"):
        load_config(None, ["num_envs=3", "num_steps=5", "num_minibatches=4"])


def test_other_impossible_combinations():
    with pytest.raises(ConfigError, match="overlap"):
        load_config(None, ["train_worlds=5000:6000", "test_worlds=5990:6010"])
    with pytest.raises(ConfigError, match="algo"):
        load_config(None, ["algo=dqn"])
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(None, ["num_envs=lots"])
    with pytest.raises(ConfigError, match="num_seeds must be >= 1"):
        from_dict({"num_seeds": 0})
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["lr"])
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("no/such/file.yaml")


def test_a_cpu_sized_config_on_an_accelerator_gets_a_hint():
    from baselines.runner import scale_hint

    config = load_config(None)  # the default: 8 envs x 3 seeds, sized for a 2-core CPU
    assert scale_hint(config, "cpu") is None
    assert "num_envs=4096" in scale_hint(config, "gpu") and "GPU mostly idle" in scale_hint(config, "gpu")
    assert scale_hint(config.replace(num_envs=4096, num_minibatches=8), "gpu") is None


def test_sweep_grid_values_split_at_top_level_commas_only():
    from baselines.cli_sweep import split_grid_values

    assert split_grid_values("3e-4,1e-3") == ["3e-4", "1e-3"]
    assert split_grid_values("[64,64],[128]") == ["[64,64]", "[128]"]  # list-valued keys can be swept
    assert split_grid_values("(8, 16),()") == ["(8, 16)", "()"]
    assert split_grid_values("5000:5001") == ["5000:5001"]


def test_a_shipped_config_named_from_another_folder_is_pointed_to(tmp_path, monkeypatch):
    from baselines.config import DEFAULT_CONFIG, ConfigError, load_config

    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigError, match="does not exist; the shipped one is .*configs/ippo_wind_farm_control"
    ):
        load_config("configs/ippo_wind_farm_control.yaml")
    with pytest.raises(ConfigError, match="nothing.yaml does not exist$"):
        load_config("configs/nothing.yaml")
    assert DEFAULT_CONFIG.is_file()


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("num_seeds=1e30", "num_seeds = ~1e30 is over its bound 4,096"),
        ("num_seeds=4097", "num_seeds = 4,097 is over its bound 4,096"),
        ("num_envs=2097152", "num_envs = 2,097,152 is over its bound 1,048,576"),
        ("num_steps=65537", "num_steps = 65,537 is over its bound 65,536"),
        ("total_env_steps=1e13", "total_env_steps = 10,000,000,000,000 is over its bound"),
        ("update_epochs=1025", "update_epochs = 1,025 is over its bound 1,024"),
        ("chunk_updates=4097", "chunk_updates = 4,097 is over its bound 4,096"),
        ("gif_frames=10001", "gif_frames = 10,001 is over its bound 10,000"),
        ("hidden_sizes=[64,16385]", "hidden_sizes: layer size 16,385 is outside [1, 16,384]"),
        ("hidden_sizes=[0]", "hidden_sizes: layer size 0 is outside"),
        ("cnn_channels=[8,4097]", "cnn_channels: layer size 4,097 is outside [1, 4,096]"),
        ("seed=-1", "seed must be in [0, 2**32); got -1"),
        ("eval_seed=4294967296", "eval_seed must be in [0, 2**32)"),
        ("num_seeds=1e400", "num_seeds: cannot read '1e400' as int"),
        ("hidden_sizes=[1.5]", "hidden_sizes: cannot read [1.5] as tuple"),
        ("num_envs=true", "num_envs: cannot read True as int"),
        ("name=../x", "name '../x' must be a folder name"),
        ("out_dir=", "out_dir: cannot read None as str"),
        ("train_worlds=0:4294967295", "names 4,294,967,295 seeds; at most 16,777,216"),
        (  # within every bound, but 10**12 updates x 4 epochs x 1 minibatch overflow optax's int32 count
            "total_env_steps=1e12 num_envs=1 num_steps=1 num_minibatches=1 chunk_updates=1",
            "the run would take 4,000,000,000,000 optimiser steps (num_updates 1,000,000,000,000 x",
        ),
    ],
)
def test_impossible_sizes_are_refused_naming_the_bound(override, expected):
    with pytest.raises(ConfigError, match=None) as info:
        load_config(None, override.split())
    assert expected in str(info.value), str(info.value)


@pytest.mark.parametrize("key", ["lr", "gamma", "clip_eps", "ent_coef", "init_log_std", "obs_norm_clip"])
@pytest.mark.parametrize("value", ["1e400", "-1e400", ".inf", "nan"])
def test_every_float_key_refuses_non_finite_values(key, value):
    with pytest.raises(ConfigError, match=rf"^{key} must be"):
        load_config(None, [f"{key}={value}"])


def test_largest_allowed_sizes_pass_validation():
    # the bounds are inclusive: exactly at the bound is accepted (nothing is built here)
    config = load_config(
        None, ["num_seeds=4096", "hidden_sizes=[16384]", "seed=4294967295", "num_minibatches=1"]
    )
    assert config.num_seeds == 4096 and config.hidden_sizes == (16384,) and config.seed == 2**32 - 1


def test_rounded_total_env_steps_is_said_in_one_line():
    config = load_config(None, ["total_env_steps=20000"])  # chunks of 5 x 8 x 128 = 5,120 env steps
    assert config.env_steps == 20480
    assert config.rounding_note() == (
        "note: total_env_steps 20,000 rounded up to 20,480 per seed (whole chunks of chunk_updates x "
        "num_envs x num_steps = 5 x 8 x 128 = 5,120 env steps)"
    )
    assert load_config(None, ["total_env_steps=20480"]).rounding_note() is None


def test_huge_pregenerated_world_pool_is_refused_before_it_is_built():
    from baselines.config import validate_env

    config = load_config(None, ["train_worlds=10000:16010000"])  # 16M worlds, each a few KiB
    with pytest.raises(ConfigError, match=r"pregenerate_worlds: a pool of 16,000,000 train worlds needs"):
        validate_env(config)
    validate_env(config.replace(pregenerate_worlds=False))  # generated at reset: nothing to hold


def test_an_overflowing_env_option_is_a_config_error(monkeypatch):
    # jnp's OverflowError for an int past int64 (before make bounds every field) is one line, not a traceback
    import baselines.common
    from baselines.config import validate_env

    def overflow(config):
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(baselines.common, "make_env", overflow)
    with pytest.raises(ConfigError, match="WindFarmControl-v0 with env_params=.*too large"):
        validate_env(load_config(None, ["env_params.max_steps=1e30"]))
