"""Versioned environment registry: `register(id, entry_point, **defaults)`, `spec(id)` and namespaces.

The registry only records what can be built; `hivex_jax.make` (hivex_jax/registration.py, the top of
the library) builds it and adds the wrappers it asks for. Ids `namespace/<name>` (e.g.
`jaxmarl/MPE_simple_spread_v3`) go to a factory registered for the namespace with `register_namespace`,
by the adapter module that provides it. So that `make` finds one whose module nobody has imported yet,
adapters also list their factory in the `hivex_jax.namespaces` entry-point group (pyproject.toml), read
here with `importlib.metadata`: core names no module above it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from hivex_jax.core import bounds
from hivex_jax.core.seeding import world_key  # noqa: F401  (its old home: `core.registry.world_key`)

_ID_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9]*-v\d+$")


@dataclass(frozen=True)
class EnvSpec:
    """A registered environment: id, a factory (or "module:attr" string) and default kwargs."""

    id: str
    entry_point: Callable[..., Any] | str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def factory(self) -> Callable[..., Any]:
        if callable(self.entry_point):
            return self.entry_point
        module, attr = self.entry_point.split(":")
        return getattr(importlib.import_module(module), attr)


_REGISTRY: dict[str, EnvSpec] = {}

#: the entry-point group naming each namespace's factory ("jaxmarl = module:make_fn")
NAMESPACE_GROUP = "hivex_jax.namespaces"
_NAMESPACES: dict[str, Callable[..., tuple[Any, Any]]] = {}
_NAMESPACE_DESCRIPTIONS: dict[str, str] = {}


def register_namespace(
    namespace: str, factory: Callable[..., tuple[Any, Any]], description: str = ""
) -> None:
    """Route ids `namespace/<name>` to `factory(name, **overrides) -> (env, params)`."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", namespace):
        raise ValueError(f"namespace {namespace!r} must be a plain name like 'jaxmarl'")
    known = _NAMESPACES.get(namespace)
    if known is not None and known is not factory:
        raise ValueError(f"namespace {namespace!r} is already registered (to {known!r})")
    _NAMESPACES[namespace] = factory
    if description or namespace not in _NAMESPACE_DESCRIPTIONS:
        _NAMESPACE_DESCRIPTIONS[namespace] = description


def namespace_description(namespace: str) -> str:
    """The one-line description `namespace` was registered with (loads its entry point if needed)."""
    namespace_factory(namespace)
    return _NAMESPACE_DESCRIPTIONS[namespace]


def registered_namespaces() -> tuple[str, ...]:
    """Every namespace `make` accepts (registered in this process or listed as an entry point), sorted."""
    listed = {ep.name for ep in importlib.metadata.entry_points(group=NAMESPACE_GROUP)}
    return tuple(sorted(listed | set(_NAMESPACES)))


def namespace_factory(namespace: str) -> Callable[..., tuple[Any, Any]]:
    """The factory of `namespace`, loading its entry point (importing the adapter) the first time."""
    if namespace not in _NAMESPACES:
        for ep in importlib.metadata.entry_points(group=NAMESPACE_GROUP, name=namespace):
            register_namespace(namespace, ep.load())  # the adapter's import may have registered it already
            break
        else:
            raise KeyError(
                f"unknown environment namespace {namespace!r}; known: {', '.join(registered_namespaces())}"
            )
    return _NAMESPACES[namespace]


def register(id: str, entry_point: Callable[..., Any] | str, description: str = "", **kwargs: Any) -> None:
    """Register an environment under a versioned id like `WindFarmControl-v0`."""
    if not _ID_PATTERN.match(id):
        raise ValueError(f"environment id {id!r} must look like 'Name-v0'")
    if id in _REGISTRY:
        raise ValueError(f"environment id {id!r} is already registered")
    _REGISTRY[id] = EnvSpec(id, entry_point, dict(kwargs), description)


def registered_envs() -> tuple[str, ...]:
    """All registered ids, sorted."""
    return tuple(sorted(_REGISTRY))


def spec(id: str) -> EnvSpec:
    """The `EnvSpec` for `id`; unknown ids get the closest registered names."""
    if id not in _REGISTRY:
        close = difflib.get_close_matches(id, list(_REGISTRY), n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown environment id {id!r}.{hint} Registered: {', '.join(registered_envs())}")
    return _REGISTRY[id]


def stack_params(params_list: list[Any]) -> Any:
    """Stack a list of `EnvParams` into one batched `EnvParams` (leading batch axis) for `vmap`.

    A field whose value does not fit the first params' dtype (2**40 or 1e308 in an int32 field) is a
    ValueError naming it (and its bounds where the env declares numbers), not an OverflowError."""
    first = params_list[0] if params_list else None
    if dataclasses.is_dataclass(first):
        table = bounds.declared_bounds(type(first))
        for f in dataclasses.fields(first):
            dtype = getattr(getattr(first, f.name), "dtype", None)
            if dtype is None:
                continue
            for p in params_list[1:]:
                value = getattr(p, f.name)
                if bounds.fits_dtype(value, dtype):
                    continue
                lo, hi = table.get(f.name, (None, None))
                if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
                    raise ValueError(bounds.bound_violation(f.name, value, lo, hi, "stack_params"))
                shown = bounds.show_number(bounds.number_array(value).reshape(-1)[0])
                raise ValueError(f"stack_params: {f.name} = {shown} does not fit {dtype}")
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *params_list)
