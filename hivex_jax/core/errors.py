"""User errors of the `hivex` command line: one line on stderr, exit status 2, no traceback.

Validation code raises `UserError` (or a subclass such as `baselines.config.ConfigError`) for a mistake
in what the user asked for. Library calls whose validation raises plain KeyError/TypeError/ValueError
(`hivex_jax.make`, `seed_range`) are wrapped with `user_input(...)` only where user input enters, so a
bug elsewhere still shows its traceback. `HIVEX_TRACEBACK=1` shows the traceback of a user error too.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn


class UserError(ValueError):
    """A mistake in the user's input (id, option, value, file): reported as one line, exit status 2."""


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (a KeyError's message without its repr quotes)."""
    text = exc.args[0] if isinstance(exc, KeyError) and len(exc.args) == 1 else str(exc)
    return " ".join(str(text).split()) or type(exc).__name__


@contextmanager
def user_input(what: str = "") -> Iterator[None]:
    """Turn the KeyError/TypeError/ValueError of validating user input into a `UserError`."""
    try:
        yield
    except UserError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{what}: {one_line(exc)}" if what else one_line(exc)) from exc


def make_checked(env_id: str, **overrides: Any) -> tuple[Any, Any]:
    """`hivex_jax.make(env_id, **overrides)` with its validation errors as `UserError`."""
    from hivex_jax.core.registry import make

    with user_input():
        return make(env_id, **overrides)


def check_writable_dir(path: str | Path, what: str) -> None:
    """Raise `UserError` unless folder `path` exists writable or can be created (creates nothing)."""
    path = Path(path).absolute()
    existing = path
    while not existing.exists():  # the nearest existing ancestor decides whether mkdir can succeed
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{what} {path} cannot be created: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{what} {path} is not writable (no write permission on {existing})")


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


def world_seeds(spec: str, what: str) -> Any:
    """The world seeds of `spec` ("6000:6100" or "1,5,9") as an int64 array, or a `UserError` naming
    `what` if the text is malformed, names no seed or a seed outside [0, 2**32)."""
    from hivex_jax.core.seeding import seed_range

    with user_input(f"{what} {spec!r} (expected a range like 6000:6100 or a list like 1,5,9)"):
        seeds = seed_range(spec)
    if seeds.size == 0:
        raise UserError(f"{what} {spec!r} names no world seed (expected e.g. 6000:6100 or 1,5,9)")
    if seeds.min() < 0 or seeds.max() >= 2**32:
        raise UserError(f"{what} {spec!r}: world seeds must be in [0, 2**32)")
    return seeds
