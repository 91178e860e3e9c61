"""How a trainer config key is declared: a dataclass field whose metadata records its file section and its
kind (static: changes the compiled program; data: computed with, so members of one program may differ
in it; run: steers the host loop only), and for data keys the part that is static (`switch`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

#: the kinds a key is declared as (module docstring)
KINDS = ("static", "data", "run")


def _declared(section: str | None, kind: str, default: Any, switch: Callable[[Any], Any] | None) -> Any:
    """A dataclass field whose metadata records its section, kind and (data keys) static switch."""
    metadata = {"section": section, "kind": kind, "switch": switch}
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


def static_key(section: str | None, default: Any) -> Any:
    """A key that changes the compiled program."""
    return _declared(section, "static", default, None)


def data_key(section: str, default: Any, switch: Callable[[Any], Any] | None = None) -> Any:
    """A key the program only computes with; `switch(value)` is the part that is static, if any."""
    return _declared(section, "data", default, switch)


def run_key(section: str, default: Any) -> Any:
    """A key no compiled program is built from."""
    return _declared(section, "run", default, None)


def is_on(value: Any) -> bool:
    """The switch of a key whose 0 / {} / negative value is the program without its option."""
    return bool(value) and not (isinstance(value, (int, float)) and value <= 0)


def is_given(value: Any) -> bool:
    """The switch of a key whose None means "use another key's value" (a simpler program)."""
    return value is not None
