"""A training process killed with SIGKILL while a checkpoint is written (data on disk, not committed)
resumes from its last complete checkpoint and ends with the metrics and evaluation of a run that never
stopped. Bit-identical, not to a tolerance: the resumed process runs the same compiled program on the
same CPU from the exact restored state, and `metrics.csv` is truncated to that state's update."""

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.train import train_main
from baselines.run import checkpoint

HERE = Path(__file__).resolve().parent

#: `hivex train` in a subprocess that knows the tiny test env
SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import trainer_fake_env
trainer_fake_env.register()
from baselines.cli.train import train_main
raise SystemExit(train_main(sys.argv[2:]))
"""


def _train_process(args: list[str], commit_delay_s: float | None = None) -> subprocess.Popen:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["HIVEX_JAX_CACHE_DIR"] = jax.config.jax_compilation_cache_dir or ""  # this session's programs
    if commit_delay_s is not None:
        env[checkpoint.COMMIT_DELAY_ENV] = str(commit_delay_s)
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(HERE), *args, "--no-progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE.parent.parent,
    )


def _rows(run_dir):
    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(f)]


def _assert_same_run(a: Path, b: Path) -> None:
    assert _rows(a) == _rows(b)
    assert len(_rows(a)) == 6
    policies = [json.loads((d / "eval.json").read_text())["policies"] for d in (a, b)]
    assert policies[0] == policies[1]


@pytest.fixture
def tiny(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))  # 3 chunks, a checkpoint each
    common = ["--config", str(config), "--out-dir", str(tmp_path)]
    assert train_main([*common, "--no-progress", "--name", "straight"]) == 0
    return tmp_path, common


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killed_while_committing_a_checkpoint_resumes_from_the_last_complete_one(tiny):
    tmp_path, common = tiny
    run = tmp_path / "killed"
    assert train_main([*common, "--no-progress", "--name", "killed", "--max-chunks", "1"]) == 0
    assert checkpoint.latest_step(run) == 2
    # continue in a process that stops between writing checkpoint 4 and committing it; kill it there
    process = _train_process(["--resume", str(run)], commit_delay_s=600)
    try:
        line = process.stderr.readline()
        while line and "not committed" not in line:
            line = process.stderr.readline()
        assert "4.orbax-checkpoint-tmp" in line, line
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    # orbax wrote the arrays into temporary folders (one per item, inside the step's) and committed none
    uncommitted = run / "checkpoints" / "4.orbax-checkpoint-tmp"
    assert list(uncommitted.rglob("manifest.ocdbt")) and not (run / "checkpoints" / "4").exists()
    assert checkpoint.latest_step(run) == 2
    assert len(_rows(run)) == 4  # the CSV is ahead of the checkpoint: the resume truncates it
    assert train_main(["--resume", str(run), "--no-progress"]) == 0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["4", "6"]  # leftover removed
    _assert_same_run(tmp_path / "straight", run)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("trial", range(3))
def test_killed_at_a_random_moment_resumes_to_the_same_run(tiny, trial):
    """Kills at random times after start (before, during or after checkpoint writes, CSV appends or the
    final evaluation), then resumes (from scratch if no checkpoint was complete yet)."""
    tmp_path, common = tiny
    name = f"random{trial}"
    process = _train_process([*common, "--name", name], commit_delay_s=0.5)
    time.sleep(random.Random(trial).uniform(3.0, 20.0))
    process.send_signal(signal.SIGKILL)
    process.wait()
    if checkpoint.latest_step(tmp_path / name) is None:  # killed before its first commit: start over
        assert train_main([*common, "--no-progress", "--name", name]) == 0
    else:
        assert train_main(["--resume", str(tmp_path / name), "--no-progress"]) == 0
    _assert_same_run(tmp_path / "straight", tmp_path / name)
