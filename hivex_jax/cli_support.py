"""What the commands share (`hivex ...`, the trainer's commands in `baselines`, the scripts): starting
jax, argparse whose errors are one line, option checks, reporting a `UserError` as one line on
stderr with exit status 2 (no traceback; `HIVEX_TRACEBACK=1` shows it), and finding the trainer's
commands (`command_plugin`). The error types themselves are
the library's (`hivex_jax.core.errors`); this is the command-line layer, above the whole library.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from hivex_jax.core.errors import UserError, one_line, user_input
from hivex_jax.registration import make

#: the entry-point group of the sub-commands (and parts of them) that the trainer provides
COMMAND_GROUP = "hivex_jax.commands"


def prepare_jax() -> None:
    """Set `PJRT_NPROC=1` unless the environment sets it: the one place the code sets it. Call it before
    the first jax computation (importing jax is fine: the variable is read when a backend starts).
    jaxlib 0.10.x deadlocks on 2-core CPUs when two batched LAPACK calls run at once; the `hivex` command
    (and `python -m hivex_jax`), the trainer's commands and the scripts call it, tests/conftest.py sets
    it for the tests and their child processes."""
    os.environ.setdefault("PJRT_NPROC", "1")


def command_plugin(name: str) -> Callable[..., Any]:
    """The callable registered as `name` in the `hivex_jax.commands` entry-point group, or a `UserError`:
    how `hivex train` (and `hivex bench --train`) reach the trainer, which this library never imports."""
    for ep in importlib.metadata.entry_points(group=COMMAND_GROUP, name=name):
        return ep.load()
    raise UserError(
        f"needs the trainer, which is not installed (no {name!r} in entry-point group {COMMAND_GROUP}; "
        "pip install -e . from the repository installs it)"
    )


def make_checked(env_id: str, **overrides: Any) -> tuple[Any, Any]:
    """`hivex_jax.make(env_id, **overrides)` with its validation errors as `UserError`."""
    with user_input():
        return make(env_id, **overrides)


_PROBE_ATTEMPTS = 5  # check_writable_dir's tries when another process removes the folder meanwhile


def check_writable_dir(path: str | Path, what: str) -> None:
    """Raise `UserError` unless folder `path` exists writable or can be created. Tried for real (the
    missing folders made and a probe folder inside, then removed): permission bits miss read-only file
    systems, /proc and names the file system refuses, and root passes every `os.access`."""
    path = Path(path).absolute()
    existed = None  # whether `path` existed at the first look: says "not writable" or "cannot be created"
    made: list[Path] = []
    try:
        # the processes of one multi-process run check the same folder at once: one may make a folder the
        # other is about to make, or remove the one it made just before the other's probe; so a folder
        # that exists is fine, and a folder gone from under the probe is looked at again
        for attempt in range(_PROBE_ATTEMPTS):
            missing = _missing_folders(path, what)
            existed = not missing if existed is None else existed
            try:
                for folder in reversed(missing):
                    try:
                        folder.mkdir()
                        made.append(folder)
                    except FileExistsError:
                        if not folder.is_dir():
                            raise
                os.rmdir(tempfile.mkdtemp(prefix=".hivex_write_probe_", dir=path))
                return
            except FileNotFoundError:
                if attempt == _PROBE_ATTEMPTS - 1:
                    raise
    except OSError as exc:
        verb = "is not writable" if existed else "cannot be created"
        raise UserError(f"{what} {path} {verb}: {exc.strerror or one_line(exc)}") from exc
    finally:
        for folder in reversed(made):
            with contextlib.suppress(OSError):  # another process may have written into it meanwhile
                folder.rmdir()


def _missing_folders(path: Path, what: str) -> list[Path]:
    """`path` and its ancestors that do not exist yet, deepest first; `UserError` if a file is in the way."""
    existing = path
    try:
        while not existing.exists():  # the nearest existing ancestor decides whether mkdir can succeed
            existing = existing.parent
    except OSError as exc:  # a name longer than the file system takes
        raise UserError(f"{what} {path} cannot be created: {exc.strerror or one_line(exc)}") from exc
    if not existing.is_dir():
        raise UserError(f"{what} {path} cannot be created: {existing} is a file, not a folder")
    return [p for p in (path, *path.parents) if p not in (existing, *existing.parents)]


def check_positive(**values: int | None) -> None:
    """Raise `UserError` naming the first option (given, i.e. not None) that is < 1."""
    for name, value in values.items():
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be >= 1; got {value}")


def check_at_most(**limits: tuple[int | None, int]) -> None:
    """Raise `UserError` naming the first option whose value (given, i.e. not None) exceeds its limit:
    `check_at_most(steps=(args.steps, 100_000))`. Keeps absurd sizes (10**30) from reaching jax."""
    for name, (value, limit) in limits.items():
        if value is not None and value > limit:
            shown = (
                value
                if value < 10**30
                else f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
            )
            raise UserError(f"--{name.replace('_', '-')} must be <= {limit:,}; got {shown}")


def check_world_seed(value: int, what: str = "--world") -> None:
    """Raise `UserError` unless `value` is a world seed, in [0, 2**32)."""
    if not 0 <= value < 2**32:
        shown = (
            value
            if abs(value) < 10**30
            else f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
        )
        raise UserError(f"{what} must be in [0, 2**32); got {shown}")


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors (unknown option, bad value) are a one-line `UserError`, not usage text."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see `{self.prog} --help`)")


def reports_user_errors(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a sub-command's `main(argv) -> int`: a `UserError` prints `prog: message` and returns 2."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def wrapped(*args: Any, **kwargs: Any) -> int:
            try:
                return main(*args, **kwargs)
            except UserError as exc:
                if os.environ.get("HIVEX_TRACEBACK"):
                    raise
                print(f"{prog}: {one_line(exc)}", file=sys.stderr)
                return 2

        return wrapped

    return decorate
