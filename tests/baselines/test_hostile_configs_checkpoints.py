"""Hostile inputs to the trainer's commands: YAML alias bombs, oversized files and endless `base:` chains
in configs (the bounded reader every config goes through), checkpoints without their checksum record
(refused unless --trust-unverified), an output folder the OS refuses and an absurd --steps. Each is one
line on stderr with exit status 2, before anything long starts (training, evaluation and loading a run
fail the test if reached); with --trust-unverified the command gets through to them."""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import pytest

from baselines.config import MAX_BASE_CHAIN, MAX_YAML_BYTES, ConfigError, load_config, read_config_file
from baselines.run import checkpoint
from baselines.run.checkpoint_checksums import CHECKSUMS_FILE
from hivex_jax.cli import main

pytestmark = pytest.mark.timeout(300)

#: 9 ** 8 = 43 million "lol"s in 300 bytes: PyYAML shares the aliased nodes, every walk of the value
#: (a type check, the repr in an error message) visits them all
LAUGHS = [
    '&a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    *(f"&{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefg", "bcdefgh", strict=True)),
]


def bomb(key: str) -> str:
    """A config whose `key` holds the billion laughs (the anchors nested inside the value)."""
    if key == "train_env_params":  # a dict field: the bomb under one of its entries
        return "train_env_params:\n  wind_noise_degrees:\n" + "".join(f"    - {x}\n" for x in LAUGHS)
    return f"{key}:\n" + "".join(f"  - {x}\n" for x in LAUGHS)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Bad configs, a run folder whose config.yaml is a bomb, and run folders whose checkpoint lacks its
    checksum record (one step) or has it (a sound run), with the default config."""
    tmp = tmp_path_factory.mktemp("hostile_configs")
    for key in ("lr", "hidden_sizes", "train_env_params"):
        (tmp / f"bomb_{key}.yaml").write_text(bomb(key))
    (tmp / "chain").mkdir()
    for i in range(2000):  # c0 -> c1 -> ... -> c1999
        text = f"base: c{i + 1}.yaml\n" if i < 1999 else "lr: 1.0e-3\n"
        (tmp / "chain" / f"c{i}.yaml").write_text(text)
    (tmp / "cycle_a.yaml").write_text("base: cycle_b.yaml\n")
    (tmp / "cycle_b.yaml").write_text("base: cycle_a.yaml\nlr: 1.0e-3\n")
    (tmp / "big.yaml").write_text("lr: 1.0e-3\n" + "# padding\n" * (MAX_YAML_BYTES // 10 + 1))
    config = load_config()
    (tmp / "bomb_run").mkdir()
    (tmp / "bomb_run" / "config.yaml").write_text(config.to_yaml() + bomb("train_env_params"))
    for name in ("unverified_run", "sound_run"):
        run = tmp / name
        run.mkdir()
        (run / "config.yaml").write_text(config.to_yaml())
        meta = {"config": config.to_dict(), "chunks_done": 1}
        checkpoint.save(run, 2, {"params": jnp.arange(3.0)}, meta)
    (tmp / "unverified_run" / "checkpoints" / "2" / CHECKSUMS_FILE).unlink()
    return tmp


class LongWorkReached(Exception):
    """Raised by the stand-ins of training, evaluation and loading a run."""


@pytest.fixture
def nothing_long_starts(monkeypatch):
    """Training, evaluation and restoring a run's population raise `LongWorkReached` if reached."""
    import baselines.run.evaluation
    import baselines.run.runner
    import baselines.run.transfer_matrix

    def reached(*args, **kwargs):
        raise LongWorkReached

    monkeypatch.setattr(baselines.run.runner, "run_training", reached)
    monkeypatch.setattr(baselines.run.evaluation, "evaluate_run", reached)
    monkeypatch.setattr(baselines.run.transfer_matrix, "load", reached)


def one_line(argv: list[str], files: Path, capsys) -> str:
    """The one stderr line of `hivex *argv` (exit status 2, no traceback)."""
    rc = main([a.replace("{tmp}", str(files)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-2000:]
    return lines[0]


ALIAS = "YAML aliases are not accepted in a config (*a at line 3): write the value out"
CASES = [
    # the review's bombs, under a float, a tuple and a dict field, for each command reading a config
    (["train", "--config", "{tmp}/bomb_lr.yaml"], [ALIAS, "bomb_lr.yaml"]),
    (["train", "--config", "{tmp}/bomb_hidden_sizes.yaml"], [ALIAS, "bomb_hidden_sizes.yaml"]),
    (["train", "--config", "{tmp}/bomb_train_env_params.yaml"], ["YAML aliases are not accepted", "*a"]),
    (["sweep", "--config", "{tmp}/bomb_lr.yaml", "--grid", "seed=1,2"], [ALIAS]),
    (["evaluate", "{tmp}/bomb_run"], ["bomb_run", "YAML aliases are not accepted"]),
    (["train", "lr=[&x 1, *x]"], ["override lr: YAML aliases are not accepted", "*x"]),
    # base: chains and sizes
    (["train", "--config", "{tmp}/chain/c0.yaml"], [f"longer than {MAX_BASE_CHAIN} files", "c0.yaml"]),
    (["train", "--config", "{tmp}/cycle_a.yaml"], ["its bases form a cycle (cycle_a.yaml -> cycle_b.yaml"]),
    (["train", "--config", "{tmp}/big.yaml"], [f"is over {MAX_YAML_BYTES:,} bytes"]),
    # a checkpoint without its checksum record, for each command that restores one
    (["evaluate", "{tmp}/unverified_run"], ["step 2 in", "is unverified (no hivex_checksums.json)"]),
    (["train", "--resume", "{tmp}/unverified_run"], ["is unverified", "--trust-unverified restores"]),
    (["transfer", "{tmp}/unverified_run", "--eval-grid", "task=1"], ["is unverified", "--trust-unverified"]),
    # sizes the OS or the compiled program would refuse later
    (
        ["evaluate", "{tmp}/sound_run", "--steps", "100000000000"],
        ["--steps must be in [1, ", "100,000,000,000"],
    ),
    (["evaluate", "{tmp}/sound_run", "--steps", "9" * 40], ["--steps must be in [1, ", "of 40 digits"]),
    (
        ["transfer", "{tmp}/sound_run", "--eval-grid", "task=1", "--steps", "100000000000"],
        ["--steps must be"],
    ),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a)[:70] for a, _ in CASES])
def test_hostile_input_is_one_line_before_anything_starts(argv, expected, files, nothing_long_starts, capsys):
    line = one_line(argv, files, capsys)
    assert line.startswith(f"hivex {argv[0]}: "), line[:300]
    for text in expected:
        assert text in line, (text, line[:600])
    assert len(line) < 1000  # a value in a message is shown short, whatever its size


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "{tmp}/unverified_run", "--trust-unverified"],
        ["train", "--resume", "{tmp}/unverified_run", "--trust-unverified"],
        ["transfer", "{tmp}/unverified_run", "--eval-grid", "task=1", "--trust-unverified", "--out", "{out}"],
    ],
    ids=lambda argv: argv[0],
)
def test_trust_unverified_lets_each_restoring_command_through(argv, files, nothing_long_starts, tmp_path):
    with pytest.raises(LongWorkReached):  # past every check, at the restore / the work itself
        main([a.replace("{tmp}", str(files)).replace("{out}", str(tmp_path)) for a in argv])


def test_the_unverified_setting_ends_with_the_command(files, nothing_long_starts):
    with pytest.raises(LongWorkReached):
        main(["evaluate", str(files / "unverified_run"), "--trust-unverified"])
    with pytest.raises(checkpoint.DamagedCheckpointError, match="is unverified"):
        checkpoint.read_meta(files / "unverified_run")  # the next caller in the process trusts nothing


@pytest.mark.skipif(
    not Path("/proc").is_dir(), reason="needs /proc, where mkdir fails whatever the mode bits"
)
@pytest.mark.parametrize("command", ["train", "sweep"])
def test_an_out_dir_the_os_refuses_is_one_line_naming_it_and_why(command, files, nothing_long_starts, capsys):
    line = one_line([command, "--out-dir", "/proc/nope", "--no-progress"], files, capsys)
    assert "/proc/nope" in line and "cannot be created: No such file or directory" in line, line


def test_the_out_dir_check_leaves_nothing_behind(tmp_path):
    """The check creates the missing folders and a probe to be sure, then removes what it made."""
    from hivex_jax.cli_support import check_writable_dir

    check_writable_dir(tmp_path / "a" / "b" / "c", "out_dir")
    check_writable_dir(tmp_path, "out_dir")
    assert list(tmp_path.iterdir()) == []


def test_the_out_dir_check_takes_a_folder_another_process_makes_meanwhile(tmp_path, monkeypatch):
    """Both processes of a multi-process run check the same new folder: the other one's mkdir lands
    between this one's look and its mkdir (CI saw 'cannot be created: File exists'). The check passes and
    leaves the other's folder alone."""
    from hivex_jax.cli_support import check_writable_dir

    target = tmp_path / "sweep"
    real_mkdir = Path.mkdir

    def other_process_first(self, *args, **kwargs):
        if self == target and not self.exists():
            real_mkdir(self)  # the other process's
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", other_process_first)
    check_writable_dir(target, "sweep folder")
    assert target.is_dir() and list(target.iterdir()) == []


@pytest.mark.parametrize("found", [False, True], ids=["made-here", "found-made"])
def test_the_out_dir_check_probes_again_when_another_process_removes_the_folder(found, tmp_path, monkeypatch):
    """The other process removes the folder it made (its own check done) just before this one's probe,
    whether this one made the folder too (its mkdir met nothing) or found it made: the check looks again,
    makes it, probes, and leaves nothing behind."""
    import hivex_jax.cli_support as cli_support

    target = tmp_path / "a" / "sweep"
    if found:
        target.mkdir(parents=True)
    real_mkdtemp = cli_support.tempfile.mkdtemp
    removed = []

    def other_process_cleans_up(*args, **kwargs):
        if not removed:
            removed.append(True)
            target.rmdir()
        return real_mkdtemp(*args, **kwargs)

    monkeypatch.setattr(cli_support.tempfile, "mkdtemp", other_process_cleans_up)
    cli_support.check_writable_dir(target, "sweep folder")
    assert removed and not target.exists()
    if not found:
        assert list(tmp_path.iterdir()) == []


def test_the_bounded_reader_keeps_what_configs_need(tmp_path):
    """Anchors without aliases, a short base: chain and sections still read; a long value's error is short."""
    (tmp_path / "base.yaml").write_text("ppo:\n  lr: &rate 5.0e-4\n")
    (tmp_path / "top.yaml").write_text("base: base.yaml\nnetwork:\n  hidden_sizes: [32, 32]\n")
    assert load_config(tmp_path / "top.yaml").lr == 5.0e-4
    assert load_config(tmp_path / "top.yaml").hidden_sizes == (32, 32)
    (tmp_path / "long.yaml").write_text("lr: [" + ", ".join(["1"] * 10_000) + "]\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "long.yaml")
    assert "lr: cannot read [1, 1, 1, 1, 1, 1, ...] as float" in str(info.value)
    assert len(str(info.value)) < 200


def test_a_saved_runs_config_goes_through_the_bounded_reader(files):
    """`hivex evaluate`'s library path (`evaluation.load_run`) reads config.yaml as the commands do."""
    from baselines.run.evaluation import load_run

    with pytest.raises(ConfigError, match="YAML aliases are not accepted"):
        load_run(files / "bomb_run")
    with pytest.raises(ConfigError, match="YAML aliases are not accepted"):
        read_config_file(files / "bomb_run" / "config.yaml")
