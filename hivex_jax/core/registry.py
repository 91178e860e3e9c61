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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.core  # jax.core.Tracer: `import jax` alone does not declare the submodule to type checkers
import jax.numpy as jnp
import numpy as np

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


def stack_params(params_list: Sequence[Any]) -> Any:
    """Stack N `EnvParams` into one batched `EnvParams` (every leaf gains a leading axis of N) for `vmap`.

    One `np.stack` per field: the structure (type, fields, shapes) is checked once per field, and each
    distinct leaf object is read to the host once, so thousands of params stack in a fraction of a second.
    A field's dtype is what `jnp.stack` would give (the params' own dtype when they agree). Params of
    another type, structure or field shape are a one-line ValueError naming the first that differs. A
    value that does not fit the first params' dtype (2**40 or 1e308 in an int32 field) is a ValueError
    naming it (and its bounds where the env declares numbers), not an OverflowError. Traced leaves (inside
    `jit`) are stacked with `jnp.stack`, unchecked."""
    params_list = list(params_list)
    if not params_list:
        raise ValueError("stack_params: got no params; pass a non-empty list of EnvParams")
    first = params_list[0]
    paths, treedef = jax.tree_util.tree_flatten_with_path(first)
    names = [_leaf_name(path) for path, _ in paths]
    rows = []
    for i, p in enumerate(params_list):
        if type(p) is not type(first):
            raise ValueError(
                f"stack_params: params {i} is {type(p).__name__}, params 0 is {type(first).__name__}: "
                "stack params of one environment"
            )
        leaves, structure = jax.tree.flatten(p)
        if structure != treedef:
            raise ValueError(
                f"stack_params: params {i} has another structure than params 0 (fields or static options "
                "differ): stack params of one environment built with the same options"
            )
        rows.append(leaves)
    table = bounds.declared_bounds(type(first)) if dataclasses.is_dataclass(first) else {}
    by_field = zip(*rows, strict=True)  # rows of leaves -> one column of N values per leaf
    columns = [_stack_column(name, list(column), table) for name, column in zip(names, by_field, strict=True)]
    return jax.tree.unflatten(treedef, columns)


def _leaf_name(path: tuple) -> str:
    """A leaf's field name (`task_weights`), or its key path where it is not a plain attribute."""
    if len(path) == 1 and isinstance(path[0], jax.tree_util.GetAttrKey):
        return path[0].name
    return jax.tree_util.keystr(path).lstrip(".") or "params"


def _stack_column(name: str, values: list[Any], table: Mapping[str, tuple[Any, Any]]) -> jax.Array:
    """One field of every params stacked on a new leading axis (checks as `stack_params` says)."""
    distinct = {id(v): v for v in values}  # params made with `.replace` share most leaf objects
    if any(isinstance(v, jax.core.Tracer) for v in distinct.values()):
        return jnp.stack([jnp.asarray(v) for v in values])
    host = {i: _host_value(v) for i, v in distinct.items()}  # each distinct object read to the host once
    shape = host[id(values[0])].shape
    if any(a.shape != shape for a in host.values()):
        i, a = next((i, host[id(v)]) for i, v in enumerate(values) if host[id(v)].shape != shape)
        raise ValueError(f"stack_params: {name} has shape {a.shape} in params {i}, {shape} in params 0")
    dtype = getattr(values[0], "dtype", None)
    if dtype is not None:
        _check_fits(name, values, host, np.dtype(dtype), table)
    # the dtype jnp.stack gives: one representative per (Python type, dtype) keeps weak types weak
    kinds = {(type(v), getattr(v, "dtype", None)): v for v in distinct.values()}
    try:
        return jnp.asarray(np.stack([host[id(v)] for v in values]), dtype=jnp.result_type(*kinds.values()))
    except (OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"stack_params: {name}: {exc}") from None


def _host_value(value: Any) -> np.ndarray:
    """`value` as a NumPy array (an integer too large for int64 as an object array)."""
    try:
        return np.asarray(value)
    except (OverflowError, TypeError, ValueError):
        return bounds.number_array(value)


def _check_fits(
    name: str, values: list[Any], host: dict[int, np.ndarray], dtype: np.dtype, table: Mapping[str, tuple]
) -> None:
    """Raise the bounds (or "does not fit") ValueError for the first params whose value is beyond `dtype`."""
    dtypes = {a.dtype for a in host.values()}
    unsafe = {d for d in dtypes if d.kind == "O" or not np.can_cast(d, dtype, "safe")}
    if not unsafe:  # every value's dtype converts safely (int32 params into int32): nothing to check
        return
    bad = {i for i, a in host.items() if a.dtype in unsafe and not bounds.fits_dtype(a, dtype)}
    value = next((v for v in values[1:] if id(v) in bad), None)
    if value is None:
        return
    lo, hi = table.get(name, (None, None))
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        message = bounds.bound_violation(name, value, lo, hi, "stack_params")
        if message is not None:
            raise ValueError(message)
    shown = bounds.show_number(bounds.number_array(value).reshape(-1)[0])
    raise ValueError(f"stack_params: {name} = {shown} does not fit {dtype}")
