"""Every user error of every `hivex` sub-command: one line on stderr naming what was wrong, exit status 2,
no traceback, and nothing compiled first (each case runs in well under a second)."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hivex_jax.cli import main
from hivex_jax.cli_support import reports_user_errors
from hivex_jax.core.errors import UserError, one_line


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """tmp_path with a plain file `afile`, a broken YAML config `bad.yaml` and run folders:
    `old_run` (config.yaml of format_version 99), `no_ckpt` (valid config.yaml, no checkpoint),
    `corrupt_run` (config.yaml that is not YAML) and `bad_meta` (a checkpoint whose JSON record is cut)."""
    from baselines.config import load_config

    (tmp_path / "afile").write_text("x")
    (tmp_path / "bad.yaml").write_text("lr: [\n")
    config_yaml = load_config().to_yaml()
    values = yaml.safe_load(config_yaml)
    for name, text in {
        "old_run": yaml.safe_dump({**values, "format_version": 99}),
        "no_ckpt": config_yaml,
        "corrupt_run": "algo: ippo\nlr: {\n",
        "bad_meta": config_yaml,
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(text)
    meta = tmp_path / "bad_meta" / "checkpoints" / "3" / "meta"
    meta.mkdir(parents=True)
    (meta / "metadata").write_text('{"chunks_done": ')
    return tmp_path


def _assert_one_line_error(capsys, argv: list[str], expected: list[str]) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    prefix = "hivex:" if argv[0] == "nope" else f"hivex {argv[0]}: "
    assert lines[0].startswith(prefix), lines[0]
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


# (argv with {tmp} for the files fixture, substrings the one line must contain: what was wrong and what
# is accepted)
CASES = [
    (["nope"], ["unknown command 'nope'", "train, evaluate, sweep, bench, render, list"]),
    (["list", "extra"], ["takes no arguments", "'extra'"]),
    # bench
    (["bench", "--env", "Nope-v0"], ["unknown environment id 'Nope-v0'", "WindFarmControl-v0"]),
    (["bench", "--env", "WindFarmControll-v0"], ["Did you mean: WindFarmControl-v0"]),
    (["bench", "task=7"], ["unknown task 7", "(0, 1)"]),
    (["bench", "nope=1"], ["unknown option(s) ['nope']", "num_agents"]),
    (["bench", "num_agents"], ["expected key=value", "'num_agents'"]),
    (["bench", "--steps", "0"], ["--steps must be >= 1", "got 0"]),
    (["bench", "--steps", "many"], ["--steps: invalid int value: 'many'"]),
    (["bench", "--batch-sizes", "1,x"], ["--batch-sizes", "'x' is not a positive integer"]),
    (["bench", "--pregenerate", "-1"], ["--pregenerate must be >= 0"]),
    (["bench", "--json", "{tmp}/afile/out.json"], ["afile is a file, not a folder"]),
    (["bench", "--train", "{tmp}/missing.yaml"], ["missing.yaml does not exist"]),
    (["bench", "--bogus"], ["unrecognized arguments: --bogus", "hivex bench --help"]),
    # train
    (["train", "task=7"], ["unknown task 7", "tasks are (0, 1)"]),
    (["train", "level=99"], ["unknown pattern 99", "values are (0, 1, 2"]),
    (["train", "num_agents=3"], ["num_agents must be one of (1, 2, 4, 8, 12, 16)", "got 3"]),
    (["train", "env_id=Nope-v0"], ["unknown environment id 'Nope-v0'", "WindFarmControl-v0"]),
    (["train", "env_params.nope=1"], ["unknown option(s) ['nope']", "EnvParams fields"]),
    (["train", "env_params.wind_noise_degrees=abc"], ["wind_noise_degrees", "'abc'"]),
    (["train", "lerning_rate=1"], ["unknown config key", "'lerning_rate'"]),
    (["train", "learning_rate=1e-3"], ["unknown config key 'learning_rate': did you mean 'lr'?"]),
    (["train", "lr=abc"], ["lr: cannot read 'abc' as float"]),
    (["train", "num_envs=1.5"], ["num_envs: cannot read 1.5 as int"]),
    (["train", "lr=["], ["override 'lr=['", "YAML syntax"]),
    (["train", "lr"], ["override 'lr' must look like key=value"]),
    (["train", "test_worlds=-3:2"], ["test_worlds '-3:2'", "[0, 2**32)"]),
    (["train", "test_worlds=5000:5010"], ["overlap"]),
    (["train", "cnn_channels=[8]"], ["cnn_channels=[8] builds convolutions", "set cnn_channels=[]"]),
    (["train", "recurrent=lstm"], ["recurrent must be one of ('none', 'gru')", "'lstm'"]),
    (["train", "recurrent=gru", "gru_size=0"], ["gru_size must be >= 1; got 0"]),
    (["train", "recurrent=gru"], ["whole env sequences", "num_envs = 8", "num_minibatches = 16"]),
    (["train", "ent_coef_discrete=-0.1"], ["ent_coef_discrete must be >= 0"]),
    (["train", "lr=-1"], ["lr must be > 0; got -1"]),
    (["train", "clip_eps=0"], ["clip_eps must be > 0; got 0"]),
    (["train", "--config", "{tmp}/missing.yaml"], ["missing.yaml does not exist"]),
    (["train", "--config", "{tmp}/afile/x.yaml"], ["x.yaml does not exist"]),
    (["train", "--config", "{tmp}/bad.yaml"], ["bad.yaml is not valid YAML", "line 2"]),
    (["train", "--out-dir", "{tmp}/afile/runs"], ["out_dir", "afile is a file, not a folder"]),
    (["train", "--max-chunks", "0"], ["--max-chunks must be >= 1"]),
    (["train", "--bogus"], ["unrecognized arguments: --bogus", "hivex train --help"]),
    (["train", "--resume", "{tmp}/nothing"], ["is not a run folder (no config.yaml: it does not exist)"]),
    (["train", "--resume", "{tmp}/afile"], ["is not a run folder (no config.yaml: it is a file)"]),
    (["train", "--resume", "{tmp}/old_run"], ["format_version 99", "reads format_version 1"]),
    (["train", "--resume", "{tmp}/no_ckpt"], ["has no checkpoint under"]),
    (["train", "--resume", "{tmp}/corrupt_run"], ["config.yaml is not valid YAML"]),
    (["train", "--resume", "{tmp}/bad_meta"], ["checkpoint step 3", "no intact checkpoint is left"]),
    (["train", "--resume", "{tmp}/no_ckpt", "--name", "x"], ["drop --name"]),
    # evaluate
    (["evaluate"], ["give a run folder (hivex evaluate RUN_DIR) or --pretrained ENV"]),
    (["evaluate", "--pretrained", "NoSuchEnv-v0"], ["no pretrained policy for 'NoSuchEnv-v0'; there are:"]),
    (["evaluate", "--pretrained", "wfc", "--algo", "sarsa"], ["invalid choice: 'sarsa'"]),
    (
        ["evaluate", "{tmp}/no_ckpt", "--pretrained", "wfc"],
        ["give a run folder or --pretrained ENV, not both"],
    ),
    (["evaluate", "{tmp}/no_ckpt", "--algo", "mappo"], ["--algo picks a pretrained policy"]),
    (["evaluate", "--pretrained", "wfc", "--protocol", "hivex"], ["--protocol hivex plays a run folder's"]),
    (["evaluate", "--pretrained", "wfc", "--worlds", "1", "test_worlds=2"], ["give the worlds once"]),
    (["evaluate", "{tmp}"], ["no config.yaml; it holds 4 run folder(s)", "`hivex transfer"]),  # like a sweep
    (["evaluate", "{tmp}/old_run"], ["format_version 99"]),
    (["evaluate", "{tmp}/corrupt_run"], ["not valid YAML"]),
    (["evaluate", "{tmp}/no_ckpt"], ["has no checkpoint"]),
    (["evaluate", "{tmp}/bad_meta", "--worlds", "a:b"], ["--worlds 'a:b'", "6000:6100"]),
    (["evaluate", "{tmp}/bad_meta"], ["checkpoint step 3", "no intact checkpoint is left"]),
    (["evaluate", "{tmp}/no_ckpt", "--steps", "-1"], ["--steps must be >= 1"]),
    # sweep
    (["sweep", "--grid", "lr"], ["--grid 'lr' must look like key=v1,v2"]),
    (["sweep", "--grid", "lr="], ["--grid 'lr=' must look like key=v1,v2"]),
    (["sweep", "--grid", "lr=1e-3", "--grid", "lr=1e-4"], ["--grid lr is given twice"]),
    (["sweep", "--grid", "task=0,7"], ["unknown task 7"]),
    (["sweep", "--grid", "lerning_rate=1,2"], ["unknown config key", "'lerning_rate'"]),
    (["sweep", "--grid", "n_envs=4,8"], ["unknown config key 'n_envs': did you mean 'num_envs'?"]),
    (["sweep", "--out-dir", "{tmp}/afile"], ["sweep folder", "afile is a file"]),
    # render
    (["render", "--env", "Nope-v0"], ["unknown environment id 'Nope-v0'"]),
    (["render", "--task", "9"], ["unknown task 9", "(0, 1)"]),
    (["render", "--env", "DroneBasedReforestation-v0", "--level", "99"], ["unknown terrain_level 99"]),
    (["render", "--num-agents", "-3"], ["num_agents = -3 is outside its bounds [1, 80]"]),
    (["render", "--policy", "best"], ["invalid choice: 'best'", "'scripted'"]),
    (["render", "--frames", "0"], ["--frames must be >= 1"]),
    (["render", "--world", "-1"], ["--world must be in [0, 2**32)"]),
    (["render", "--out", "{tmp}/afile/x.gif"], ["afile is a file, not a folder"]),
    (["render", "--out", "{tmp}"], ["is a folder; give a file name"]),
    (
        ["render", "--pretrained", "wfc", "--level", "3"],
        ["--pretrained plays its card's env", "drop --level"],
    ),
    (["render", "--algo", "mappo"], ["--algo picks a pretrained policy"]),
    (["render", "--pretrained", "NoSuchEnv-v0"], ["no pretrained policy for 'NoSuchEnv-v0'"]),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_user_error_is_one_line_with_status_2(argv, expected, files, capsys, monkeypatch):
    import baselines.run.evaluation
    import baselines.run.runner

    def must_not_run(*args, **kwargs):
        raise AssertionError("a user error must be reported before training or evaluating")

    monkeypatch.setattr(baselines.run.runner, "run_training", must_not_run)
    monkeypatch.setattr(baselines.run.evaluation, "evaluate_run", must_not_run)
    monkeypatch.chdir(files)  # nothing any case might write lands in the repository
    argv = [a.replace("{tmp}", str(files)) for a in argv]
    expected = [e.replace("{tmp}", str(files)) for e in expected]
    _assert_one_line_error(capsys, argv, expected)


def test_param_bounds_from_make_are_one_line_errors(capsys):
    # a value outside an EnvParams field's documented bounds, through each path user input enters make
    pytest.importorskip("hivex_jax.core.bounds")  # the bounds arrive with their own change

    for argv in (["train", "env_params.max_steps=0"], ["bench", "max_steps=0"]):
        _assert_one_line_error(capsys, argv, ["max_steps = 0 is outside its bounds [1,"])


def test_existing_named_run_is_refused_before_training(files, capsys, monkeypatch):
    import baselines.run.runner

    def must_not_train(*args, **kwargs):
        raise AssertionError("the check should have refused the run before training")

    monkeypatch.setattr(baselines.run.runner, "run_training", must_not_train)
    (files / "runs" / "taken" / "checkpoints" / "3" / "meta").mkdir(parents=True)  # a committed step
    argv = ["train", "--out-dir", str(files / "runs"), "--name", "taken"]
    _assert_one_line_error(capsys, argv, ["already holds a run", "--resume"])


def test_world_ranges_with_colons_stay_text():
    # YAML 1.1 would read 5:30 as the base-60 integer 330 (one world); a world range is meant
    from baselines.config import load_config

    config = load_config(None, ["train_worlds=5:30", "test_worlds=100:103"])
    assert config.train_worlds == "5:30" and config.test_worlds == "100:103"


def test_run_config_records_its_format_version():
    from baselines.config import FORMAT_VERSION, from_dict, load_config

    config = load_config()
    values = yaml.safe_load(config.to_yaml())
    assert values["format_version"] == FORMAT_VERSION
    assert from_dict(values) == config  # a run's config.yaml reads back as the same config
    del values["format_version"]  # run folders from before the field: read as the current format
    assert from_dict(values) == config


def test_bug_keeps_its_traceback(capsys):
    # only UserError becomes one line; any other exception (a bug) propagates with its traceback
    @reports_user_errors("hivex demo")
    def buggy(argv: list[str]) -> int:
        raise KeyError("internal")

    @reports_user_errors("hivex demo")
    def wrong_input(argv: list[str]) -> int:
        raise UserError("bad\n  value")

    with pytest.raises(KeyError):
        buggy([])
    assert wrong_input([]) == 2
    assert capsys.readouterr().err == "hivex demo: bad value\n"
    assert one_line(KeyError("unknown id 'x'")) == "unknown id 'x'"  # no repr quotes around the message


def test_traceback_env_var_shows_user_error_traceback(monkeypatch):
    monkeypatch.setenv("HIVEX_TRACEBACK", "1")
    with pytest.raises(UserError, match="unknown command|takes no arguments"):
        main(["list", "extra"])


def test_subprocess_bench_unknown_env():
    out = subprocess.run(
        [sys.executable, "-m", "hivex_jax", "bench", "--env", "Nope-v0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("hivex bench: unknown environment id 'Nope-v0'")
    assert "WindFarmControl-v0" in lines[0] and out.stdout == ""
