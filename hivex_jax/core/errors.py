"""User errors: the error type the library raises for a mistake in what the user asked for.

Validation code raises `UserError` (or a subclass such as `baselines.config.ConfigError`) for a mistake
in what the user asked for. Library calls whose validation raises plain KeyError/TypeError/ValueError
(`hivex_jax.make`, `seed_range`) are wrapped with `user_input(...)` only where user input enters, so a
bug elsewhere still shows its traceback. The commands report a `UserError` as one line on stderr with
exit status 2 (`hivex_jax.cli_support`, the command-line machinery).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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
