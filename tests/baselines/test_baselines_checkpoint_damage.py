"""A damaged checkpoint is never restored: every file of a step is truncated, emptied or bit-flipped in
turn, and the restore falls back to the older step (its exact values) with one line naming the damaged
step and file; with nothing intact left, one line and (on the command line) exit status 2. End to end:
`hivex train --resume` of a run whose newest checkpoint is damaged continues from the older one and ends
as a run that never stopped."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.run import checkpoint
from baselines.run.checkpoint_checksums import CHECKSUMS_FILE
from baselines.run.evaluation import load_run

OLD, NEW = 10, 20
KINDS = ("truncate", "empty", "flip")


def _state(offset: float) -> dict:
    """A small pytree with the leaf kinds a run state has: float and int arrays, a scalar, an empty one."""
    return {
        "params": jnp.arange(1000.0) + offset,
        "opt": {"mu": jnp.full((30, 40), 1.0 + offset), "count": jnp.int32(3 + offset)},
        "rng": jnp.arange(4, dtype=jnp.uint32) + int(offset),
        "empty": jnp.zeros((0,)),
    }


def _damage(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    else:  # up to 1,000 flipped bytes, spread over the file
        flipped = np.frombuffer(data, np.uint8).copy()
        flipped[np.linspace(0, len(data) - 1, min(1000, len(data))).astype(int)] ^= 0xFF
        path.write_bytes(flipped.tobytes())


def _assert_equal(restored, saved) -> None:
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(saved), strict=True):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))


@pytest.fixture(scope="module")
def two_steps(tmp_path_factory) -> Path:
    """A run folder with checkpoints OLD and NEW of `_state(0)` and `_state(1)`."""
    run = tmp_path_factory.mktemp("two_steps")
    checkpoint.save(run, OLD, _state(0.0), {"step": OLD})
    checkpoint.save(run, NEW, _state(1.0), {"step": NEW})
    return run


def _files(run: Path, step: int) -> list[str]:
    step_dir = run / checkpoint.CHECKPOINT_DIR / str(step)
    return sorted(p.relative_to(step_dir).as_posix() for p in step_dir.rglob("*") if p.is_file())


def test_a_save_records_every_file_of_the_step_and_a_restore_checks_it(two_steps, tmp_path):
    files = _files(two_steps, NEW)
    # what orbax writes (array data, its index and metadata) plus the JSON record and the checksums
    for name in ("_CHECKPOINT_METADATA", "meta/metadata", "state/_METADATA", "state/manifest.ocdbt"):
        assert name in files
    assert any(name.startswith("state/ocdbt.process_0/d/") for name in files)  # the arrays' data
    record = json.loads((two_steps / "checkpoints" / str(NEW) / CHECKSUMS_FILE).read_text())
    assert sorted(record["files"]) == [f for f in files if f != CHECKSUMS_FILE]
    lines: list[str] = []
    state, meta = checkpoint.restore(two_steps, jax.eval_shape(lambda: _state(1.0)), log=lines.append)
    _assert_equal(state, _state(1.0))
    assert meta == {"step": NEW} and lines == []
    assert checkpoint.damage(two_steps, NEW) is None  # reading did not change what was recorded


@pytest.mark.parametrize("kind", KINDS)
def test_each_damaged_file_of_the_newest_step_falls_back_to_the_older_one(two_steps, tmp_path, kind):
    abstract = jax.eval_shape(lambda: _state(0.0))
    files = _files(two_steps, NEW)
    for name in files:
        run = tmp_path / f"{kind}-{name.replace('/', '_')}"
        shutil.copytree(two_steps, run)
        _damage(run / "checkpoints" / str(NEW) / name, kind)
        lines: list[str] = []
        state, meta = checkpoint.restore(run, abstract, log=lines.append)
        assert meta == {"step": OLD}, (name, kind)
        _assert_equal(state, _state(0.0))
        assert len(lines) == 1 and "\n" not in lines[0], (name, lines)
        state = "unverified" if name == CHECKSUMS_FILE else "damaged"  # an unreadable record verifies nothing
        assert f"checkpoint step {NEW} in {run / 'checkpoints'} is {state}" in lines[0]
        assert name in lines[0] and f"using step {OLD}" in lines[0], lines[0]
        with pytest.raises(checkpoint.DamagedCheckpointError, match=f"step {NEW} in"):
            checkpoint.restore(run, abstract, step=NEW)  # asked for by number: refused, not restored
        assert checkpoint.read_meta(run) == {"step": OLD}


def test_a_trusted_step_without_checksums_still_has_orbaxs_checks(two_steps, tmp_path):
    """A checkpoint written before the checksums, restored with --trust-unverified: a truncated data file
    is found by orbax, and reported in the same one line."""
    run = tmp_path / "old"
    shutil.copytree(two_steps, run)
    (run / "checkpoints" / str(NEW) / CHECKSUMS_FILE).unlink()
    data = run / "checkpoints" / str(NEW) / "state" / "d"
    _damage(next(data.iterdir()), "truncate")
    lines: list[str] = []
    abstract = jax.eval_shape(lambda: _state(0.0))
    state, meta = checkpoint.restore(run, abstract, log=lines.append, trust_unverified=True)
    assert meta == {"step": OLD} and len(lines) == 1 and "orbax cannot read it" in lines[0]
    _assert_equal(state, _state(0.0))


def _unverified_copy(two_steps: Path, run: Path, record: str | None = None, flip: bool = True) -> Path:
    """A copy of `two_steps` whose newest step has bytes flipped in its largest data file (with `flip`)
    and its checksum record deleted (`record` None) or replaced by the text `record`."""
    shutil.copytree(two_steps, run)
    step_dir = run / "checkpoints" / str(NEW)
    if flip:
        _damage(_largest_data_file(step_dir), "flip")
    if record is None:
        (step_dir / CHECKSUMS_FILE).unlink()
    else:
        (step_dir / CHECKSUMS_FILE).write_text(record)
    return run


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (None, f"no {CHECKSUMS_FILE}"),
        ("{not json", f"unreadable {CHECKSUMS_FILE}"),
        ('{"files": []}', "unreadable"),
    ],
    ids=["deleted", "not-json", "not-a-record"],
)
def test_a_step_whose_record_is_gone_is_unverified_and_not_restored(two_steps, tmp_path, record, why):
    """The review's case: bytes flipped and the record deleted (or garbled). Not restored: the older step
    (its exact values) with one line that names the step, why and the option that would restore it."""
    run = _unverified_copy(two_steps, tmp_path / "run", record)
    abstract = jax.eval_shape(lambda: _state(0.0))
    lines: list[str] = []
    state, meta = checkpoint.restore(run, abstract, log=lines.append)
    assert meta == {"step": OLD}
    _assert_equal(state, _state(0.0))
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert f"checkpoint step {NEW} in {run / 'checkpoints'} is unverified ({why}" in lines[0], lines[0]
    assert f"using step {OLD}" in lines[0] and "--trust-unverified restores" in lines[0], lines[0]
    assert checkpoint.read_meta(run) == {"step": OLD}
    with pytest.raises(checkpoint.DamagedCheckpointError, match=f"step {NEW} in .* is unverified"):
        checkpoint.restore(run, abstract, step=NEW)


def test_a_trusted_unverified_step_is_restored_with_a_warning(two_steps, tmp_path):
    """With the option (an argument, or the commands' `trusting_unverified` block) the unverified step is
    restored, as it is, and one warning line says it was not verified."""
    run = _unverified_copy(two_steps, tmp_path / "run", flip=False)
    abstract = jax.eval_shape(lambda: _state(0.0))
    by_argument: list[str] = []
    state, meta = checkpoint.restore(run, abstract, log=by_argument.append, trust_unverified=True)
    assert meta == {"step": NEW} and checkpoint.read_meta(run, trust_unverified=True) == {"step": NEW}
    _assert_equal(state, _state(1.0))
    by_block: list[str] = []
    with checkpoint.trusting_unverified():
        state, meta = checkpoint.restore(run, abstract, log=by_block.append)
        assert meta == {"step": NEW} and checkpoint.read_meta(run) == {"step": NEW}
    _assert_equal(state, _state(1.0))
    for lines in (by_argument, by_block):
        assert len(lines) == 1 and lines[0].startswith(f"warning: checkpoint step {NEW} in"), lines
        assert f"restored unverified (no {CHECKSUMS_FILE}; --trust-unverified)" in lines[0], lines[0]
    assert checkpoint.read_meta(run) == {"step": OLD}  # after the block: not trusted again


def test_a_record_emptied_of_its_files_verifies_nothing(two_steps, tmp_path):
    """A record that lists no file (or fewer than the step holds) fails: every file must be recorded."""
    run = _unverified_copy(two_steps, tmp_path / "run", '{"algorithm": "sha256", "files": {}}')
    lines: list[str] = []
    _, meta = checkpoint.restore(run, jax.eval_shape(lambda: _state(0.0)), log=lines.append)
    assert meta == {"step": OLD} and len(lines) == 1, lines
    assert f"step {NEW} in {run / 'checkpoints'} is damaged (unrecorded file " in lines[0], lines[0]


def test_no_verified_checkpoint_is_one_line_with_the_option(two_steps, tmp_path):
    """Every step without its record (a run written before records existed): one line naming each step
    and the option; with the option, the newest one."""
    run = tmp_path / "old_run"
    shutil.copytree(two_steps, run)
    for step in (OLD, NEW):
        (run / "checkpoints" / str(step) / CHECKSUMS_FILE).unlink()
    abstract = jax.eval_shape(lambda: _state(0.0))
    with pytest.raises(checkpoint.DamagedCheckpointError) as info:
        checkpoint.restore(run, abstract)
    message = str(info.value)
    assert "\n" not in message and f"checkpoint steps {NEW}, {OLD} in" in message, message
    assert (
        "are unverified" in message and "no intact checkpoint" in message and "--trust-unverified" in message
    )
    _, meta = checkpoint.restore(run, abstract, trust_unverified=True, log=lambda line: None)
    assert meta == {"step": NEW}


def test_no_intact_checkpoint_is_one_line_naming_every_step(two_steps, tmp_path):
    run = tmp_path / "both"
    shutil.copytree(two_steps, run)
    for step in (OLD, NEW):
        _damage(run / "checkpoints" / str(step) / "meta" / "metadata", "flip")
    with pytest.raises(checkpoint.DamagedCheckpointError) as info:
        checkpoint.restore(run, jax.eval_shape(lambda: _state(0.0)))
    message = str(info.value)
    assert "\n" not in message and f"steps {NEW}, {OLD} in" in message and "no intact checkpoint" in message
    with pytest.raises(checkpoint.DamagedCheckpointError):
        checkpoint.read_meta(run)


# ---------------------------------------------------------------------------------------- end to end
def _rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(f)]


def _largest_data_file(step_dir: Path) -> Path:
    return max((p for p in (step_dir / "state").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


# slow: three trainings (~20 s); the default run keeps the fallback to the older step for every damaged
# file and the one-line refusals above, and test_baselines_train's exact resume
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_resume_from_a_damaged_newest_checkpoint_continues_from_the_older_one(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))  # 3 chunks, a checkpoint each
    common = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress"]
    assert train_main([*common, "--name", "straight"]) == 0
    run = tmp_path / "damaged"
    assert train_main([*common, "--name", "damaged", "--max-chunks", "2"]) == 0
    assert checkpoint.committed_steps(run) == [4, 2]
    _damage(_largest_data_file(run / "checkpoints" / "4"), "truncate")  # the crash
    capsys.readouterr()

    # `hivex evaluate` (its restore): the older checkpoint, and one line on stderr
    _, population, state = load_run(run)
    reference, _ = checkpoint.restore(run, population.abstract_state(), step=2)
    _assert_equal(state, reference)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkpoint step 4 in" in err[0] and "using step 2" in err[0], err

    assert train_main(["--resume", str(run), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint step 4 in" in out and "damaged" in out and "resuming" in out and "at update 2" in out
    assert (run / "damaged_checkpoints" / "4").is_dir()  # kept, out of the way of the new step 4
    assert checkpoint.committed_steps(run) == [6, 4]
    assert _rows(run) == _rows(tmp_path / "straight") and len(_rows(run)) == 6
    policies = [json.loads((d / "eval.json").read_text())["policies"] for d in (run, tmp_path / "straight")]
    assert policies[0] == policies[1]

    # nothing intact left: one line, exit status 2, for resume and evaluate alike
    for step in (4, 6):
        _damage(run / "checkpoints" / str(step) / "state" / "_METADATA", "flip")
    capsys.readouterr()
    assert train_main(["--resume", str(run), "--no-progress"]) == 2
    assert evaluate_main([str(run), "--no-baselines"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert all("steps 6, 4 in" in line and "no intact checkpoint" in line for line in err), err


# slow: one training of two chunks and one resumed chunk (~15 s); the default run keeps the unverified
# step's fallback, refusal and trusted restore above on real orbax checkpoints, and the commands' one
# line and --trust-unverified in test_hostile_configs_checkpoints
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_trained_runs_newest_checkpoint_flipped_and_unrecorded_is_not_restored(tmp_path, capsys):
    """The review's case end to end: a run's newest checkpoint with bytes flipped in its largest data
    file and its record deleted. `load_run` (hivex evaluate's restore) takes the older step, saying so;
    trusted, the flipped step and a warning; `--resume` continues from the older step."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))
    common = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress"]
    run = tmp_path / "flipped"
    assert train_main([*common, "--name", "flipped", "--max-chunks", "2"]) == 0
    assert checkpoint.committed_steps(run) == [4, 2]
    _, population, newest = load_run(run)
    data = _largest_data_file(run / "checkpoints" / "4")
    flipped = np.frombuffer(data.read_bytes(), np.uint8).copy()
    flipped[len(flipped) // 2 : len(flipped) // 2 + 8] ^= 0xFF  # a few bytes: orbax reads it without noticing
    data.write_bytes(flipped.tobytes())
    (run / "checkpoints" / "4" / CHECKSUMS_FILE).unlink()
    capsys.readouterr()

    _, _, state = load_run(run)
    older, _ = checkpoint.restore(run, population.abstract_state(), step=2)
    _assert_equal(state, older)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "step 4 in" in err[0] and "is unverified" in err[0] and "using step 2" in err[0]

    with checkpoint.trusting_unverified():
        _, _, trusted = load_run(run)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: checkpoint step 4 in") and "unverified" in err[0]
    assert trusted.update.tolist() == newest.update.tolist()  # the flipped step, as the user asked

    assert train_main(["--resume", str(run), "--no-progress", "--max-chunks", "1"]) == 0
    out = capsys.readouterr().out
    assert (
        "checkpoint step 4 in" in out
        and "is unverified" in out
        and "resuming" in out
        and "at update 2" in out
    )
    assert (run / "damaged_checkpoints" / "4").is_dir()
