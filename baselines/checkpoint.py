"""Checkpoints with orbax-checkpoint: the full population `RunnerState` (parameters, optimizer state with
its schedule count, environment states, observations, RNG keys) plus a JSON record of the config,
versions and the host loop's position. Restoring and continuing gives the same numbers as a run that
never stopped (same backend and device count).

Writes are atomic: orbax writes `checkpoints/<step>.orbax-checkpoint-tmp/` and commits it with one
rename to `checkpoints/<step>/`; listing and restoring see committed steps only, so a process killed
mid-write leaves the previous checkpoint as the latest, and the next save removes the leftover.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

import hivex_jax
from hivex_jax.core.errors import UserError

CHECKPOINT_DIR = "checkpoints"


def provenance(config_dict: dict[str, Any]) -> dict[str, Any]:
    """Config plus the versions a restore is checked against."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    import jaxlib

    return {
        "config": config_dict,
        "env_id": config_dict.get("env_id"),
        "hivex_jax_version": hivex_jax.__version__,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "backend": jax.default_backend(),
        "device_count": jax.device_count(),
        "process_count": jax.process_count(),  # a resume must use as many (runner.check_resume_processes)
        "python": platform.python_version(),
        "git_sha": sha,
    }


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
    return Path(run_dir) / CHECKPOINT_DIR / str(step)


def latest_step(run_dir: str | Path) -> int | None:
    """The newest checkpoint's step, or None."""
    if not (Path(run_dir) / CHECKPOINT_DIR).exists():
        return None
    manager = _manager(run_dir)
    step = manager.latest_step()
    manager.close()
    return step


def read_meta(run_dir: str | Path, step: int | None = None) -> dict[str, Any]:
    """The JSON record of checkpoint `step` (default: latest)."""
    step = latest_step(run_dir) if step is None else step
    if step is None:
        raise FileNotFoundError(f"no checkpoint under {Path(run_dir) / CHECKPOINT_DIR}")
    path = Path(run_dir).resolve() / CHECKPOINT_DIR / str(step) / "meta" / "metadata"
    return json.loads(path.read_text())


def restore(run_dir: str | Path, abstract_state: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
    """`(state, meta)` of checkpoint `step` (default: latest), shaped/sharded like `abstract_state`
    (a pytree of `jax.ShapeDtypeStruct`, e.g. from `jax.eval_shape`)."""
    manager = _manager(run_dir)
    step = manager.latest_step() if step is None else step
    if step is None:
        raise FileNotFoundError(f"no checkpoint under {Path(run_dir) / CHECKPOINT_DIR}")
    try:
        restored = manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(_nonempty_leaves(abstract_state)),
                meta=ocp.args.JsonRestore(),
            ),
        )
    except ValueError as error:
        if "tree structures do not match" not in str(error):
            raise
        # A state with other arrays than this version builds: e.g. an env whose state gained or lost a
        # field since the run was written. One line instead of orbax's tree dump.
        expected = len(_nonempty_leaves(abstract_state))
        raise UserError(
            f"{Path(run_dir) / CHECKPOINT_DIR / str(step)}: the saved training state does not have the "
            f"{expected} arrays this version of hivex_jax builds for the run's config (it was written by "
            "another version of the env or trainer); evaluate it with that version, or train it again"
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
