"""Config loading (sections, bases, flat files), overrides, derived sizes, each key's declared kind and the
errors raised before anything compiles."""

import pytest
import yaml

from baselines.config import (
    DEFAULT_CONFIG,
    SECTIONS,
    ConfigError,
    IPPOConfig,
    MAPPOConfig,
    from_dict,
    key_kind,
    keys_of_kind,
    load_config,
    parse_overrides,
    program_signature,
)
from baselines.config.declare import KINDS
from baselines.config.schema import declared_fields

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
    assert str(err.value) == "unknown config key 'num_env': did you mean 'num_envs'?"


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
    from baselines.run.runner import scale_hint

    config = load_config(None)  # the default: 8 envs x 3 seeds, sized for a 2-core CPU
    assert scale_hint(config, "cpu") is None
    assert "num_envs=4096" in scale_hint(config, "gpu") and "GPU mostly idle" in scale_hint(config, "gpu")
    assert scale_hint(config.replace(num_envs=4096, num_minibatches=8), "gpu") is None


def test_sweep_grid_values_split_at_top_level_commas_only():
    from baselines.cli.common import split_grid_values

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
    import baselines.config.env
    from baselines.config import validate_env

    def overflow(config):
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(baselines.config.env, "make_env", overflow)
    with pytest.raises(ConfigError, match="WindFarmControl-v0 with env_params=.*too large"):
        validate_env(load_config(None, ["env_params.max_steps=1e30"]))


# ------------------------------------------------------------------------- sections and inheritance
def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_file_overrides_its_base_key_by_key_and_dict_keys_entry_by_entry(tmp_path):
    _write(
        tmp_path,
        "shared/base.yaml",
        "algo: ippo\nenv:\n  env_params: {wind_noise_degrees: 5.0, max_steps: 500}\n"
        "ppo: {lr: 3.0e-4, num_seeds: 2}\n",
    )
    _write(tmp_path, "shared/middle.yaml", "base: base.yaml\nppo: {num_seeds: 4}\n")
    child = _write(
        tmp_path,
        "child.yaml",
        "base: shared/middle.yaml\nalgo: mappo\nenv: {env_params: {max_steps: 100}}\nrun: {name: x}\n",
    )
    config = load_config(child)
    assert isinstance(config, MAPPOConfig)
    assert (config.lr, config.num_seeds, config.name) == (3e-4, 4, "x")  # base, middle, child
    assert config.env_params == {"wind_noise_degrees": 5.0, "max_steps": 100}  # merged entry by entry
    # the command line overrides the whole chain, flat or by section
    assert load_config(child, ["ppo.num_seeds=7", "env.env_params.max_steps=9"]).to_dict() == (
        load_config(child, ["num_seeds=7", "env_params.max_steps=9"]).to_dict()
    )
    assert load_config(child, ["ppo.num_seeds=7"]).num_seeds == 7


def test_a_flat_file_and_its_sectioned_twin_are_the_same_config(tmp_path):
    flat = _write(
        tmp_path, "flat.yaml", "algo: mappo\nlr: 3.0e-4\nhidden_sizes: [32]\ncritic_agent_id: false\n"
    )
    sectioned = _write(
        tmp_path,
        "sectioned.yaml",
        "algo: mappo\nppo: {lr: 3.0e-4}\nnetwork: {hidden_sizes: [32], critic_agent_id: false}\n",
    )
    assert load_config(flat) == load_config(sectioned)
    assert load_config(flat).hidden_sizes == (32,) and load_config(flat).critic_agent_id is False
    assert from_dict({"ppo": {"lr": 3e-4}}).lr == 3e-4  # a run folder's values may come in sections too


def test_a_saved_run_config_is_flat_and_reads_back(tmp_path):
    config = load_config(DEFAULT_CONFIG.parent / "ippo_ocean_plastic_collection.yaml")
    saved = _write(tmp_path, "run/config.yaml", config.to_yaml())
    values = yaml.safe_load(saved.read_text())
    assert values["format_version"] == 1 and values["lr"] == config.lr  # flat: every key top-level
    assert not set(values) & {"env", "ppo", "network", "extensions", "run"}
    assert load_config(saved) == config == from_dict(values)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"a.yaml": "base: b.yaml\n", "b.yaml": "base: a.yaml\n"},
            r"bases form a cycle \(a.yaml -> b.yaml -> a.yaml\)",
        ),
        ({"a.yaml": "base: missing.yaml\n"}, "base missing.yaml does not exist"),
        ({"a.yaml": "base: [b.yaml]\n"}, "base must be the path of another config file"),
        ({"a.yaml": "env: {lr: 1.0e-3}\n"}, "lr belongs in the ppo section, not in env"),
        ({"a.yaml": "algo: ippo\nppo: {algo: mappo}\n"}, "algo belongs in the top level, not in ppo"),
        ({"a.yaml": "lr: 1.0e-3\nppo: {lr: 3.0e-4}\n"}, "lr is given twice"),
        ({"a.yaml": "ppo: 3\n"}, "ppo: a section is a mapping"),
        ({"a.yaml": "ppo: {lrr: 3}\n"}, r"'lrr': did you mean 'lr'\?"),
    ],
)
def test_bad_sections_and_bases_are_one_line_errors(tmp_path, files, expected):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=expected):
        load_config(tmp_path / "a.yaml")


def test_a_sectioned_override_in_the_wrong_section_is_refused():
    with pytest.raises(ConfigError, match="lr belongs in the ppo section, not in network"):
        load_config(None, ["network.lr=1"])
    with pytest.raises(ConfigError, match="base: names the file"):
        from_dict({"base": "x.yaml"})


def test_message_options_go_in_extensions_and_the_command_line_replaces_them():
    path = DEFAULT_CONFIG.parent / "ippo_wildfire_resource_management_messages.yaml"
    assert load_config(path).env_options == {"message_vocab": 2}
    assert load_config(path, ["message_vocab=null"]).env_options == {"message_vocab": None}
    assert load_config(path, ["extensions.message_loss=1"]).env_options == {
        "message_vocab": 2,
        "message_loss": 1,
    }


# ------------------------------------------------------------------------------ static / data / run
def test_every_key_is_declared_once_with_a_section_and_a_kind():
    fields = declared_fields()
    assert set(fields) == set(MAPPOConfig().to_dict())  # MAPPO has every key (IPPO's and its critic's)
    for name, f in fields.items():
        assert f.metadata["kind"] in KINDS, name
        assert f.metadata["section"] in (*SECTIONS, None), name
        assert (f.metadata["section"] is None) == (name == "algo"), name
        assert f.metadata["switch"] is None or f.metadata["kind"] == "data", name
    assert set(keys_of_kind("static")) | set(keys_of_kind("data")) | set(keys_of_kind("run")) == set(fields)


#: kinds checked by hand against the trainer (docs/training.md, "Static, data, run")
HAND_CHECKED_KINDS = {
    # a number a program computes with: one program could take it as an input
    "data": "lr ent_coef gamma gae_lambda clip_eps vf_coef max_grad_norm seed task level env_params "
    "env_params.wind_noise_degrees train_reward_weights train_reward_sharing teacher_coef eval_seed "
    "train_worlds",  # a fused member draws from its own share of one pool (baselines.core.training_env)
    # a shape, a loop length, a branch or a module's structure
    "static": "algo num_envs num_steps num_seeds update_epochs num_minibatches anneal_lr total_env_steps "
    "recurrent hidden_sizes env_options teacher_where critic_agent_id message_vocab",
    # no compiled program is built from it
    "run": "name out_dir eval_every checkpoint_every gif_frames test_worlds stop_at_test_return",
}


@pytest.mark.parametrize(
    ("key", "kind"), [(key, kind) for kind, keys in HAND_CHECKED_KINDS.items() for key in keys.split()]
)
def test_hand_checked_kinds(key, kind):
    assert key_kind(key) == kind


def test_a_sectioned_key_has_its_flat_kind():
    kinds = key_kind("ppo.lr"), key_kind("env.env_params.max_steps"), key_kind("run.name")
    assert kinds == ("data", "data", "run")


def test_an_unknown_key_has_no_kind():
    with pytest.raises(ConfigError, match="'nope' is not a config key"):
        key_kind("nope")


def test_the_program_signature_ignores_data_values_but_not_their_switches():
    # the OPC config with its optional teacher switched on: a config with every kind of switch
    config = load_config(DEFAULT_CONFIG.parent / "ippo_ocean_plastic_collection.yaml").replace(
        teacher_coef=1.0, teacher_where="safety", teacher_anneal_updates=400
    )
    same = program_signature(config)
    for change in (
        {"lr": 3e-4},
        {"ent_coef": 0.1},
        {"seed": 9},
        {"task": 1},
        {"teacher_coef": 0.5},
        {"name": "x"},
    ):
        assert program_signature(config.replace(**change)) == same, change
    assert program_signature(config.replace(train_reward_weights={"crossed_border": 0.5})) == same
    for change in (
        {"num_envs": 32},
        {"teacher_coef": 0.0},
        {"train_reward_weights": {}},
        {"recurrent": "none"},
    ):
        assert program_signature(config.replace(**change)) != same, change


def test_recipes_still_on_at_the_end_are_warned_about():
    """Bad input: reward weights that never anneal to the env's, or a teacher never annealed to
    0 before training ends, give one warning line each; recipes that end in time give none."""
    # 20480 env steps per seed = 20 updates of 8 envs x 128 steps
    base = ["total_env_steps=20480", "train_reward_weights={power: 0.5}"]
    assert load_config(None, base).num_updates == 20
    assert load_config(None, [*base, "train_reward_weights_anneal_updates=20"]).recipe_notes() == []
    (constant,) = load_config(None, base).recipe_notes()
    assert constant.startswith("warning: train_reward_weights {'power': 0.5} never reach the env's weights (")
    assert "0 of 20 updates" in constant and "\n" not in constant
    (late,) = load_config(None, [*base, "train_reward_weights_anneal_updates=21"]).recipe_notes()
    assert "21 of 20 updates" in late
    assert load_config(None, ["total_env_steps=20480"]).recipe_notes() == []
