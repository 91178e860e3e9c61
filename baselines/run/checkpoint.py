"""Checkpoints with orbax-checkpoint: the full population `RunnerState` (parameters, optimizer state with
its schedule count, environment states, observations, RNG keys) plus a JSON record of the config,
versions and the host loop's position. Restoring and continuing gives the same numbers as a run that
never stopped (same backend and device count).

Writes are atomic: orbax writes `checkpoints/<step>.orbax-checkpoint-tmp/` and commits it with one
rename to `checkpoints/<step>/`; listing and restoring see committed steps only, so a process killed
mid-write leaves the previous checkpoint as the latest, and the next save removes the leftover.

Restores are verified: after a save, `checkpoints/<step>/hivex_checksums.json` records the size and
sha256 of every file of the step (written to a temporary name and renamed into place). A restore
checks them before orbax reads anything (orbax's own checks follow); a step that fails either is
damaged, and a restore of the latest checkpoint falls back to the newest intact one, saying so in one
line. A step whose record is missing or unreadable (deleted, written before records existed, or killed
between commit and record) is unverified and treated as damaged, unless the caller trusts unverified
steps (`trust_unverified`, the commands' `--trust-unverified`): then it is restored with orbax's checks
only, and a warning line says so.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from baselines.run.checkpoint_checksums import (
    TRUST_OPTION,
    UNVERIFIED,
    damaged_line,
    first_line,
    record_problem,
    step_damage,
    trust_hint,
    trusted,
    write_checksums,
)
from baselines.run.checkpoint_checksums import (
    trusting_unverified as trusting_unverified,  # the commands' switch
)
from hivex_jax.core.errors import UserError

CHECKPOINT_DIR = "checkpoints"
#: where a resuming run moves its damaged steps (beside `checkpoints/`, out of orbax's sight)
DAMAGED_DIR = "damaged_checkpoints"


class DamagedCheckpointError(UserError):
    """No checkpoint of the run is intact (each failed its checksums or orbax's checks, or is unverified)."""


def _nonempty_leaves(tree: Any) -> dict[str, Any]:
    """`{flat index: leaf}` without zero-size leaves (orbax refuses to save those; they are rebuilt as
    zeros on restore from the target's shapes)."""
    return {str(i): x for i, x in enumerate(jax.tree.leaves(tree)) if math.prod(x.shape) > 0}


#: test-only: seconds to wait between writing a checkpoint and committing it (a window to kill in)
COMMIT_DELAY_ENV = "HIVEX_JAX_TEST_CHECKPOINT_COMMIT_DELAY_S"


class _DelayedCommit(ocp.path.atomicity.AtomicRenameTemporaryPath):
    """orbax's atomic rename, after announcing on stderr that the data is written and waiting
    `COMMIT_DELAY_ENV` seconds (only used when that variable is set, by the kill tests)."""

    async def finalize(self, *args: Any, **kwargs: Any) -> None:
        print(f"checkpoint written, not committed: {self.get()}", file=sys.stderr, flush=True)
        await asyncio.sleep(float(os.environ[COMMIT_DELAY_ENV]))
        await super().finalize(*args, **kwargs)


def _manager(run_dir: str | Path, max_to_keep: int = 2, writer: bool = False) -> ocp.CheckpointManager:
    """The run's checkpoint manager; `writer=True` (the training process only) also removes folders
    of writes a kill left uncommitted. Readers leave them: one may be a live run's write in progress."""
    delayed = writer and os.environ.get(COMMIT_DELAY_ENV)
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep,
        enable_async_checkpointing=False,
        cleanup_tmp_directories=writer,
        temporary_path_class=_DelayedCommit if delayed else None,
    )
    return ocp.CheckpointManager(Path(run_dir).resolve() / CHECKPOINT_DIR, options=options)


def save(run_dir: str | Path, step: int, state: Any, meta: dict[str, Any]) -> Path:
    """Save `state` (any pytree of arrays) and `meta` (JSON-able) as checkpoint `step` (updates done),
    atomically (see the module doc)."""
    manager = _manager(run_dir, writer=True)
    manager.save(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardSave(_nonempty_leaves(state)), meta=ocp.args.JsonSave(meta)
        ),
        force=True,
    )
    manager.wait_until_finished()
    manager.close()
    if jax.process_index() == 0:  # every process's files are in the shared folder once committed
        write_checksums(Path(run_dir).resolve() / CHECKPOINT_DIR / str(step))
    return Path(run_dir) / CHECKPOINT_DIR / str(step)


def damage(run_dir: str | Path, step: int) -> str | None:
    """Why checkpoint `step` fails its checksum record (a few words naming the file), or None if it
    passes or has no record."""
    return step_damage(Path(run_dir).resolve() / CHECKPOINT_DIR / str(step))


def latest_step(run_dir: str | Path) -> int | None:
    """The newest committed checkpoint's step (intact or not), or None."""
    steps = committed_steps(run_dir)
    return steps[0] if steps else None


def committed_steps(run_dir: str | Path) -> list[int]:
    """The steps of the committed checkpoints, newest first."""
    if not (Path(run_dir) / CHECKPOINT_DIR).exists():
        return []
    with _orbax_quiet():
        manager = _manager(run_dir)
        steps = sorted(manager.all_steps(), reverse=True)
        manager.close()
    return steps


@contextmanager
def _orbax_quiet() -> Iterator[None]:
    """Silence orbax's log lines and its stray asyncio tracebacks while reading a checkpoint that may
    be damaged: the damage is reported in one line by the caller instead."""
    loggers = [logging.getLogger(name) for name in ("absl", "asyncio")]
    levels, hooks = [logger.level for logger in loggers], (sys.unraisablehook, sys.excepthook)
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    sys.unraisablehook, sys.excepthook = (lambda *_: None), (lambda *_: None)
    try:
        yield
    except BaseException:
        gc.collect()  # abandoned reads of a failed restore report now, while silenced
        raise
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        sys.unraisablehook, sys.excepthook = hooks


def _read_meta_file(run_dir: str | Path, step: int) -> dict[str, Any]:
    path = Path(run_dir).resolve() / CHECKPOINT_DIR / str(step) / "meta" / "metadata"
    meta = json.loads(path.read_text())
    if not isinstance(meta, dict):
        raise ValueError(f"{path} holds a {type(meta).__name__}, not a JSON object")
    return meta


def _no_intact(run_dir: str | Path, damaged: list[tuple[int, str]]) -> DamagedCheckpointError:
    return DamagedCheckpointError(
        f"{damaged_line(Path(run_dir) / CHECKPOINT_DIR, damaged)}; no intact checkpoint is left: train "
        f"the run again (under another name, or after removing the run folder){trust_hint(damaged)}"
    )


def _candidates(run_dir: str | Path, step: int | None) -> list[int]:
    """`[step]`, or every committed step newest first; `FileNotFoundError` if there is none."""
    steps = committed_steps(run_dir)
    if step is None and steps:
        return steps
    if step is not None and step in steps:
        return [step]
    which = "no checkpoint" if step is None else f"no checkpoint {step}"
    raise FileNotFoundError(f"{which} under {Path(run_dir) / CHECKPOINT_DIR}")


def read_meta(
    run_dir: str | Path, step: int | None = None, trust_unverified: bool | None = None
) -> dict[str, Any]:
    """The JSON record of checkpoint `step` (default: the newest whose checksums and record are
    intact; `DamagedCheckpointError` if none is). `trust_unverified` (default: `trusting_unverified`'s
    setting) counts a step without a readable checksum record as intact."""
    trust = trusted(trust_unverified)
    damaged: list[tuple[int, str]] = []
    for candidate in _candidates(run_dir, step):
        meta, why, _ = _intact_meta(run_dir, candidate, trust)
        if why is None:
            return meta
        damaged.append((candidate, why))
    raise _no_intact(run_dir, damaged)


def _intact_meta(
    run_dir: str | Path, step: int, trust_unverified: bool
) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """`(record, None, unverified)` of a step that passes its checksums (or, trusted, has no readable
    checksum record: `unverified` says which) and whose record reads, else `(None, why, None)`."""
    unverified = record_problem(Path(run_dir).resolve() / CHECKPOINT_DIR / str(step))
    if unverified is not None and not trust_unverified:
        return None, f"{UNVERIFIED}: {unverified}", None
    why = damage(run_dir, step)
    if why is not None:
        return None, why, None
    try:
        return _read_meta_file(run_dir, step), None, unverified
    except (OSError, ValueError) as error:  # ValueError covers bad JSON and bad UTF-8
        return None, f"unreadable meta/metadata: {first_line(error)}", None


def restore(
    run_dir: str | Path,
    abstract_state: Any,
    step: int | None = None,
    check: Callable[[dict[str, Any]], None] | None = None,
    log: Callable[[str], None] | None = None,
    set_aside_damaged: bool = False,
    trust_unverified: bool | None = None,
) -> tuple[Any, dict[str, Any]]:
    """`(state, meta)` of checkpoint `step`, shaped/sharded like `abstract_state` (a pytree of
    `jax.ShapeDtypeStruct`, e.g. from `jax.eval_shape`).

    Default `step`: the newest intact checkpoint; newer damaged ones (failing their checksums or
    orbax's checks) are reported in one line to `log` (default: stderr), and with `set_aside_damaged`
    (the training process resuming) moved to `damaged_checkpoints/` so new saves can take their steps.
    `check(meta)` runs on a checkpoint's record before its arrays are read (its errors propagate).
    A damaged `step` given explicitly, or no intact checkpoint: `DamagedCheckpointError`, one line.
    A step without a readable checksum record counts as damaged unless `trust_unverified` (default:
    `trusting_unverified`'s setting); a trusted one restored is said in a warning line to `log`."""
    trust = trusted(trust_unverified)
    say = log or (lambda line: print(line, file=sys.stderr))
    damaged: list[tuple[int, str]] = []
    for candidate in _candidates(run_dir, step):
        meta, why, unverified = _intact_meta(run_dir, candidate, trust)
        if why is None:
            if check is not None:
                check(meta)
            try:
                state, meta = _restore_step(run_dir, abstract_state, candidate)
            except UserError:
                raise
            except Exception as error:  # orbax/tensorstore found what the checksums could not
                why = f"orbax cannot read it: {first_line(error)}"
        if why is not None:
            damaged.append((candidate, why))
            continue
        if damaged:
            note = damaged_line(Path(run_dir) / CHECKPOINT_DIR, damaged)
            note += f": using step {candidate}, the newest intact one"
            if set_aside_damaged and jax.process_index() == 0:
                note += f" (the damaged one(s) moved to {_set_aside(run_dir, [s for s, _ in damaged])})"
            say(note + trust_hint(damaged))
        if unverified is not None:
            say(
                f"warning: checkpoint step {candidate} in {Path(run_dir) / CHECKPOINT_DIR} restored "
                f"unverified ({unverified}; {TRUST_OPTION}): only orbax's own checks applied"
            )
        return state, meta
    raise _no_intact(run_dir, damaged)


def _set_aside(run_dir: str | Path, steps: list[int]) -> Path:
    """Move damaged steps to `damaged_checkpoints/<step>` (kept for inspection, out of orbax's listing)."""
    target = Path(run_dir) / DAMAGED_DIR
    target.mkdir(parents=True, exist_ok=True)
    for step in steps:
        destination = target / str(step)
        suffix = 1
        while destination.exists():  # damaged again after an earlier fallback
            destination, suffix = target / f"{step}.{suffix}", suffix + 1
        shutil.move(Path(run_dir) / CHECKPOINT_DIR / str(step), destination)
    return target


def _restore_step(run_dir: str | Path, abstract_state: Any, step: int) -> tuple[Any, dict[str, Any]]:
    """Orbax's restore of one step (its own checks included); a state with other arrays than
    `abstract_state` is a one-line `UserError`."""
    with _orbax_quiet():
        manager = _manager(run_dir)
        try:
            restored = manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(_nonempty_leaves(abstract_state)),
                    meta=ocp.args.JsonRestore(),
                ),
            )
        except ValueError as error:
            if "is not compatible with the stored shape" in str(error):  # e.g. another num_envs
                raise UserError(
                    f"{Path(run_dir) / CHECKPOINT_DIR / str(step)}: the saved training state has other "
                    f"shapes than the run's config builds now ({first_line(error)})"
                ) from None
            if "tree structures do not match" not in str(error):
                raise
            # A state with other arrays than this version builds: e.g. an env whose state gained or lost
            # a field since the run was written. One line instead of orbax's tree dump.
            expected = len(_nonempty_leaves(abstract_state))
            raise UserError(
                f"{Path(run_dir) / CHECKPOINT_DIR / str(step)}: the saved training state does not have "
                f"the {expected} arrays this version of hivex_jax builds for the run's config (it was "
                "written by another version of the env or trainer); evaluate it with that version, or "
                "train it again"
            ) from None
        finally:
            manager.close()
    leaves, treedef = jax.tree.flatten(abstract_state)
    saved = restored["state"]
    state = jax.tree.unflatten(
        treedef,
        [saved[str(i)] if str(i) in saved else jnp.zeros(a.shape, a.dtype) for i, a in enumerate(leaves)],
    )
    meta = dict(restored["meta"])
    for key in ("jax_version", "backend"):
        now = jax.__version__ if key == "jax_version" else jax.default_backend()
        if meta.get(key) not in (None, now):
            print(
                f"warning: checkpoint was written with {key}={meta.get(key)}, now {now}; "
                "the run continues but may not match an uninterrupted one bit for bit"
            )
    return state, meta
