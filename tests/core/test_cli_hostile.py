"""Hostile and careless command lines for every `hivex` sub-command: impossible sizes,
non-finite and out-of-range numbers, values too large or too deeply nested to parse, path tricks and
damaged files. Each is refused in one line on stderr with exit status 2 and no traceback, before
anything long starts: training, evaluation, benchmarking, rendering and the server are replaced by
functions that fail the test if reached. Cases run in-process (a few through a real subprocess)."""

import subprocess
import sys
from pathlib import Path

import pytest

from hivex_jax.cli import main

pytestmark = pytest.mark.timeout(300)

WRM = "WildfireResourceManagement-v0"
DEEP = "[" * 3000  # nesting past Python's recursion limit
HUGE_INT = "9" * 5000  # past Python's 4,300-digit int parsing limit
BOUND = "(docs/training.md, Bounds)"

# (argv with {tmp} for the files fixture, substrings of the one line)
CASES = [
    # top level and list
    (["nope"], ["unknown command 'nope'"]),
    (["TRAIN"], ["unknown command 'TRAIN'"]),
    (["list", "--bogus"], ["takes no arguments"]),
    (["list", "x" * 5000], ["takes no arguments"]),
    # train: sizes (num_seeds=1e30 once grew to 13.8 GB before the OOM killer)
    (["train", "num_seeds=1e30"], ["num_seeds = ~1e30 is over its bound 4,096", BOUND]),
    (["train", "num_seeds=4097"], ["num_seeds = 4,097 is over its bound 4,096"]),
    (["train", "num_seeds=-1"], ["num_seeds must be >= 1; got -1"]),
    (["train", "num_seeds=1e400"], ["num_seeds: cannot read '1e400' as int"]),
    (["train", "num_seeds=nan"], ["num_seeds: cannot read 'nan' as int"]),
    (["train", f"num_seeds={HUGE_INT}"], ["cannot read the value (YAML syntax or size)"]),
    (["train", "num_envs=1e30"], ["num_envs = ~1e30 is over its bound 1,048,576"]),
    (["train", "num_envs=2097152"], ["num_envs = 2,097,152 is over its bound 1,048,576"]),
    (["train", "num_steps=1e9"], ["num_steps = 1,000,000,000 is over its bound 65,536"]),
    (["train", "total_env_steps=1e30"], ["total_env_steps = ~1e30 is over its bound"]),
    (["train", "total_env_steps=-5"], ["total_env_steps must be >= 1"]),
    (["train", "num_minibatches=1e30"], ["num_minibatches = ~1e30 is over its bound"]),
    (["train", "update_epochs=1e6"], ["update_epochs = 1,000,000 is over its bound 1,024"]),
    (["train", "chunk_updates=1e9"], ["chunk_updates = 1,000,000,000 is over its bound 4,096"]),
    (["train", "hidden_sizes=[1e9]"], ["hidden_sizes: layer size 1,000,000,000 is outside [1, 16,384]"]),
    (["train", "hidden_sizes=[-1]"], ["hidden_sizes: layer size -1 is outside"]),
    (["train", "hidden_sizes=1e30"], ["hidden_sizes: cannot read '1e30' as tuple"]),
    (["train", "cnn_channels=[1000000]"], ["cnn_channels: layer size 1,000,000 is outside [1, 4,096]"]),
    (["train", "recurrent=gru", "gru_size=1e9"], ["gru_size = 1,000,000,000 is over its bound"]),
    (["train", "gif_frames=1e9"], ["gif_frames = 1,000,000,000 is over its bound 10,000"]),
    (["train", "gif_stride=1e30"], ["gif_stride = ~1e30 is over its bound"]),
    (["train", "eval_every=1e30"], ["eval_every = ~1e30 is over its bound"]),
    # train: every float key refuses non-finite values (lr=1e400 once parsed to inf)
    (["train", "lr=1e400"], ["lr must be a finite number; got inf"]),
    (["train", "lr=-1e400"], ["lr must be a finite number; got -inf"]),
    (["train", "lr=.nan"], ["lr must be a finite number; got nan"]),
    (["train", "gamma=1e400"], ["gamma must be a finite number; got inf"]),
    (["train", "clip_eps=nan"], ["clip_eps must be a finite number"]),
    (["train", "ent_coef=.inf"], ["ent_coef must be a finite number"]),
    (["train", "max_grad_norm=nan"], ["max_grad_norm must be a finite number"]),
    (["train", "vf_coef=1e400"], ["vf_coef must be a finite number"]),
    (["train", "init_log_std=-.inf"], ["init_log_std must be a finite number"]),
    (["train", "stop_at_test_return=.nan"], ["stop_at_test_return must be a finite number"]),
    (["train", "train_reward_sharing=nan"], ["train_reward_sharing must be a finite number"]),
    (["train", "teacher_coef=1e400"], ["teacher_coef must be a finite number"]),
    # train: seeds, world pools, names, env options, files
    (["train", "seed=-1"], ["seed must be in [0, 2**32); got -1"]),
    (["train", "seed=1e30"], ["seed must be in [0, 2**32); got ~1e30"]),
    (["train", "eval_seed=4294967296"], ["eval_seed must be in [0, 2**32)"]),
    (["train", "train_worlds=0:4294967295"], ["names 4,294,967,295 seeds; at most 16,777,216"]),
    (["train", "test_worlds=0:99999999999"], ["names 99,999,999,999 seeds"]),
    (["train", "train_worlds=1e30"], ["train_worlds '1e30'"]),
    (["train", "name=../../escape"], ["name '../../escape' must be a folder name"]),
    (["train", "name=" + "x" * 300], ["name is 300 bytes long; at most 200"]),
    (["train", "env_params.max_steps=1e30"], ["max_steps", "outside its bounds"]),
    (["train", "env_params.max_steps=nan"], ["max_steps", "outside its bounds"]),
    (["train", "num_agents=1e30"], ["num_agents", "outside its bounds"]),
    (["train", "task=1e30"], ["task", "outside its bounds"]),
    (["train", "level=99999999999999999999"], ["unknown pattern 99999999999999999999"]),
    (["train", "env_options=[1]"], ["env_options: cannot read [1] as dict"]),
    (["train", "lr=" + DEEP], ["cannot read the value (YAML syntax or size)"]),
    (["train", "env_params=" + DEEP], ["cannot read the value (YAML syntax or size)"]),
    (["train", "--max-chunks", "1e30"], ["--max-chunks: invalid int value: '1e30'"]),
    (["train", "--local-devices", "99999999999"], ["--local-devices must be in [1, 1024]"]),
    (["train", "--init-timeout", "99999999999"], ["--init-timeout must be <= 86400"]),
    (["train", "--config", "{tmp}/list.yaml"], ["a config is a YAML mapping"]),
    (["train", "--config", "{tmp}/deep.yaml"], ["deep.yaml is not valid YAML"]),
    (["train", "--config", "{tmp}/binary.yaml"], ["cannot read config file", "binary.yaml"]),
    (["train", "--config", "{tmp}/huge_seeds.yaml"], ["num_seeds = ~1e30 is over its bound"]),
    (["train", "--resume", "{tmp}/no_ckpt", "num_seeds=1e30"], ["num_seeds = ~1e30 is over its bound"]),
    # evaluate
    (["evaluate", "{tmp}/no_ckpt", "--worlds", "0:4294967295"], ["names 4,294,967,295 seeds"]),
    (["evaluate", "{tmp}/no_ckpt", "--worlds", "1e30"], ["--worlds '1e30'"]),
    (["evaluate", "{tmp}/no_ckpt", "--worlds", "nan"], ["--worlds 'nan'"]),
    (["evaluate", "{tmp}/no_ckpt", "--steps", "1e30"], ["--steps: invalid int value"]),
    (["evaluate", "{tmp}/no_ckpt", "--runs", "-1"], ["--runs must be >= 1"]),
    (["evaluate", "{tmp}/no_ckpt", "--agent-steps", "-1"], ["--agent-steps must be >= 1"]),
    (["evaluate", "{tmp}/no_ckpt", "--summary-freq", "0"], ["--summary-freq must be >= 1"]),
    (["evaluate", "{tmp}/no_ckpt", "--protocol", "nope"], ["invalid choice: 'nope'"]),
    (["evaluate", "{tmp}/afile"], ["is not a run folder (no config.yaml: it is a file)"]),
    (["evaluate", "{tmp}/no_ckpt", "--world-files", "{tmp}/nothing*.npz"], ["matches no file"]),
    # sweep
    (["sweep", "--grid", "num_seeds=1e30,2"], ["num_seeds = ~1e30 is over its bound"]),
    (["sweep", "--name", "../escape"], ["--name '../escape' must be a folder name"]),
    (["sweep", "--name", ".."], ["must be a folder name"]),
    (["sweep", "--grid", "lr=1e400,1e-3"], ["lr must be a finite number; got inf"]),
    (["sweep", "--grid", "=1,2"], ["must look like key=v1,v2"]),
    (["sweep", "--grid", "hidden_sizes=[1e9]"], ["layer size 1,000,000,000 is outside"]),
    (["sweep", "--grid", "seed=-1,0"], ["seed must be in [0, 2**32)"]),
    (["sweep", "--init-timeout", "nan"], ["--init-timeout: invalid int value"]),
    (["sweep", "--local-devices", "99999999999"], ["--local-devices must be in [1, 1024]"]),
    # transfer
    (["transfer"], ["give run or sweep folders, or --pretrained ENV"]),
    (["transfer", "--pretrained", "wfc", "--algo", "sarsa", "--eval-grid", "level=1"], ["--algo 'sarsa'"]),
    (["transfer", "--pretrained", "nope", "--eval-grid", "level=1"], ["no pretrained policy for 'nope'"]),
    (["transfer", "{tmp}/no_ckpt", "--algo", "ippo", "--eval-grid", "level=1"], ["--algo picks pretrained"]),
    (["transfer", "{tmp}/missing", "--eval-grid", "num_agents=2,4"], ["is not a run folder"]),
    (["transfer", "{tmp}/no_ckpt", "--eval-grid", "x"], ["--eval-grid 'x' must look like key=v1,v2"]),
    (["transfer", "{tmp}/no_ckpt", "--eval-grid", "num_agents=2", "--steps", "-1"], ["--steps must be >= 1"]),
    (["transfer", "{tmp}/afile", "--eval-grid", "num_agents=2"], ["holds no run folder"]),
    # bench (max_steps=1e30 was once an OverflowError traceback)
    (["bench", "max_steps=1e30"], ["max_steps", "outside its bounds"]),
    (["bench", "max_steps=nan"], ["max_steps", "outside its bounds"]),
    (["bench", "num_agents=1e30"], ["num_agents", "outside its bounds"]),
    (["bench", "--steps", "1e30"], ["--steps: invalid int value"]),
    (["bench", "--steps", "99999999999"], ["--steps must be <="]),
    (["bench", "--repeats", "1000000000"], ["--repeats must be <="]),
    (["bench", "--batch-sizes", "99999999999999"], ["--batch-sizes"]),
    (["bench", "--pregenerate", "99999999999"], ["--pregenerate must be <="]),
    (["bench", "--env", ""], ["unknown environment id ''"]),
    # render
    (["render", "--steps", "99999999999"], ["--steps must be <="]),
    (["render", "--frames", "99999999"], ["--frames must be <="]),
    (["render", "--fps", "1000"], ["--fps must be <="]),
    (["render", "--fps", "nan"], ["--fps: invalid int value"]),
    (["render", "--world", "4294967296"], ["--world must be in [0, 2**32)"]),
    (["render", "--seed", str(2**40)], ["--seed must be in [0, 2**32)"]),
    (["render", "--task", "99999999999999999999"], ["unknown task 99999999999999999999"]),
    (["render", "--num-agents", "99999999999999999999"], ["num_agents", "outside its bounds"]),
    # serve (--idle-timeout nan once meant sessions never expire)
    (["serve", "--idle-timeout", "nan"], ["--idle-timeout", "must be a finite number"]),
    (["serve", "--idle-timeout", "inf"], ["--idle-timeout", "must be a finite number"]),
    (["serve", "--batch-window-ms", "nan"], ["--batch-window-ms", "must be a finite number"]),
    (["serve", "--batch-window-ms", "1e30"], ["--batch-window-ms", "must be a finite number"]),
    (["serve", "--port", "99999"], ["--port must be in [0, 65536)"]),
    (["serve", "--max-sessions", "0"], ["--max-sessions must be >= 1"]),
    (["serve", "--max-sessions", "99999999999999"], ["--max-sessions must be at most 4,096"]),
    (["serve", "--max-grade-steps", "10000000000"], ["--max-grade-steps must be at most 1,000,000"]),
    (["serve", "--env", "Nope-v0"], ["unknown environment ids ['Nope-v0']"]),
    (["serve", "--read-timeout", "nan"], ["--read-timeout", "must be a finite number"]),
    # world (export --world -1 was once an OverflowError traceback)
    (["world"], ["required: action"]),
    (
        ["world", "export", "--env", WRM, "--world", "-1", "--out", "{tmp}/w"],
        ["--world must be in [0, 2**32)"],
    ),
    (["world", "export", "--env", WRM, "--world", str(2**32), "--out", "{tmp}/w"], ["--world must be in"]),
    (
        ["world", "export", "--env", WRM, "--world", "1e30", "--out", "{tmp}/w"],
        ["--world: invalid int value"],
    ),
    (["world", "export", "--env", WRM, "--world", "1", "--out", "{tmp}/afile/w"], ["afile is a file"]),
    (["world", "export", "--env", WRM, "--world", "1", "--out", "{tmp}/w", "--level", "9" * 20], ["--level"]),
    (["world", "export", "--env", WRM, "--world", "1", "--out", "{tmp}/w", "--stress", "nope"], ["'nope'"]),
    (["world", "show", "--env", WRM, "{tmp}/garbage.npy"], ["garbage.npy: unreadable as .npy"]),
    (["world", "show", "--env", WRM, "{tmp}/garbage.npz"], ["garbage.npz: unreadable as .npz"]),
    (["world", "show", "--env", WRM, "{tmp}/emptydir"], ["no field files"]),
    (["world", "fields", "--env", "Nope-v0"], ["unknown environment id 'Nope-v0'"]),
]


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory) -> Path:
    """A folder of bad inputs: a plain file, configs that are a list / nested past the recursion limit /
    not UTF-8 / asking for 1e30 seeds, damaged world files, an empty folder and a run folder without a
    checkpoint."""
    from baselines.config import load_config

    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "afile").write_text("x")
    (tmp / "list.yaml").write_text("- 1\n- 2\n")
    (tmp / "deep.yaml").write_text("lr: " + DEEP + "\n")
    (tmp / "binary.yaml").write_bytes(b"\xff\xfe\x00\x81" * 100)
    (tmp / "huge_seeds.yaml").write_text("num_seeds: 1e30\n")
    (tmp / "garbage.npy").write_bytes(b"\x93NUMPY garbage")
    (tmp / "garbage.npz").write_bytes(b"PK\x03\x04 garbage")
    (tmp / "emptydir").mkdir()
    (tmp / "no_ckpt").mkdir()
    (tmp / "no_ckpt" / "config.yaml").write_text(load_config().to_yaml())
    return tmp


@pytest.fixture
def nothing_long_starts(monkeypatch):
    """Training, evaluation, benchmarking, GIF rendering and the server fail the test if reached."""
    import uvicorn

    import baselines.run.evaluation
    import baselines.run.runner
    import hivex_jax.bench
    import hivex_jax.eval.gif

    def must_not_run(*args, **kwargs):
        raise AssertionError("a bad invocation must be refused before any long work starts")

    monkeypatch.setattr(baselines.run.runner, "run_training", must_not_run)
    monkeypatch.setattr(baselines.run.evaluation, "evaluate_run", must_not_run)
    monkeypatch.setattr(hivex_jax.bench, "measure", must_not_run)
    monkeypatch.setattr(hivex_jax.eval.gif, "episode_frames", must_not_run)
    monkeypatch.setattr(uvicorn, "run", must_not_run)


def test_suite_covers_every_sub_command_with_80_cases():
    from hivex_jax.cli import COMMANDS

    assert len(CASES) >= 80
    assert set(COMMANDS) <= {argv[0] for argv, _ in CASES}


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_hostile_invocation_is_one_line_with_status_2(
    argv, expected, hostile_files, nothing_long_starts, capsys, monkeypatch
):
    monkeypatch.chdir(hostile_files)  # nothing a case might write lands in the repository
    argv = [a.replace("{tmp}", str(hostile_files)) for a in argv]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own exits, if any escape the sub-command
        rc = exc.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err[-2000:]
    assert "Traceback" not in err
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith("hivex"), lines[0][:300]
    for text in expected:
        assert text in lines[0], (text, lines[0][:500])


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "num_seeds=1e30"],
        ["bench", "max_steps=1e30"],
        ["serve", "--idle-timeout", "nan"],
    ],
    ids=" ".join,
)
def test_hostile_invocation_in_a_real_process(argv, tmp_path):
    # the console entry point end to end: exit status, stderr, and nothing on stdout
    out = subprocess.run(
        [sys.executable, "-m", "hivex_jax", *argv],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]
    assert out.stdout == ""
