"""Versioned environment registry: `register(id, entry_point, **defaults)` and `make(id, **overrides)`.

Ids `namespace/<name>` (e.g. `jaxmarl/MPE_simple_spread_v3`) go to a factory registered for the
namespace with `register_namespace`, by the adapter module that provides it. So that `make` finds one
whose module nobody has imported yet, adapters also list their factory in the `hivex_jax.namespaces`
entry-point group (pyproject.toml), read here with `importlib.metadata`: core names no module above it.
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
#: `make` options of the message channel (kept here so core imports no wrapper module eagerly)
_MESSAGE_OPTIONS = ("message_dims", "message_vocab", "message_loss", "message_noise", "message_range")


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


def make(id: str, **overrides: Any) -> tuple[Any, Any]:
    """Build `(env, params)`.

    Keyword arguments that the environment's constructor takes (static options such as
    `num_agents`) build the env; those naming `EnvParams` fields (dynamic options such as `task`
    or `pattern`) override the default params. Anything else is an error naming the options, and a
    value outside its field's documented bounds (`env.param_bounds`) is a ValueError naming both.
    `level=N` names the env's level field (`env.level_field`: `pattern` for Wind Farm Control), as the
    CLI and configs do. `namespace/<name>` goes to the namespace's factory: `jaxmarl/<name>` wraps
    `jaxmarl.make(name)` (`hivex_jax.interop.from_jaxmarl`). `world_files="DIR/*.png"` and
    `stress_worlds="all"` (or names) wrap the env so its worlds come from files / are stress worlds
    (`hivex_jax.worlds`, docs/worlds.md).
    `message_dims=k` or `message_vocab=v` (with `message_loss`, `message_noise`, `message_range`) wrap it
    in `hivex_jax.wrappers.MessageChannel` (docs/messages.md); without them no wrapper is added.
    """
    if "/" in id:
        namespace, name = id.split("/", 1)
        return namespace_factory(namespace)(name, **overrides)
    s = spec(id)
    # worlds from files / stress worlds (hivex_jax.worlds): wrappers, not constructor options
    world_files, stress_worlds = overrides.pop("world_files", None), overrides.pop("stress_worlds", None)
    # the message channel (hivex_jax.wrappers.messages): a wrapper outside everything else, off unless asked
    message_options = {k: overrides.pop(k, None) for k in _MESSAGE_OPTIONS}
    factory = s.factory()
    ctor_names = set(getattr(factory, "static_options", ()))
    static = {k: v for k, v in overrides.items() if k in ctor_names}
    dynamic = {k: v for k, v in overrides.items() if k not in ctor_names}
    params_type = getattr(factory, "params_type", None)  # an env class (the bundled envs' constructors
    if params_type is not None:  # check the same table themselves, first thing)
        # sizes inside their documented bounds before the constructor allocates or traces anything
        table = bounds.declared_static_bounds(params_type)
        static = dict(zip(static, bounds.check_static_options(id, table, **static), strict=True))
    env = factory(**{**s.kwargs, **static})
    params = env.default_params()
    if dynamic:
        param_names = {f.name for f in dataclasses.fields(params)}
        if "level" in dynamic and "level" not in param_names:  # the CLI's and configs' name for it
            if env.level_field is None:
                raise TypeError(f"{id}: has no level (HIVEX gave it none); drop level={dynamic['level']!r}")
            if env.level_field in dynamic:
                raise TypeError(f"{id}: give level or {env.level_field}, not both (the same field)")
            dynamic[env.level_field] = dynamic.pop("level")
        unknown = sorted(set(dynamic) - param_names)
        fixed = bounds.declared_fixed_options(env.params_type)
        for name in (u for u in unknown if u in fixed):  # e.g. WRM's 9 towers: say so, list nothing
            raise TypeError(f"{id} {fixed[name]}: {name} is not an option")
        if unknown:
            options = sorted(ctor_names | param_names)
            close = {u: difflib.get_close_matches(u, options, n=2) for u in unknown}
            raise TypeError(
                f"{id}: unknown option(s) {unknown}"
                + "".join(f" ({u!r}: did you mean {c}?)" for u, c in close.items() if c)
                + f". Static options: {sorted(ctor_names)}; EnvParams fields: the "
                f"{len(param_names)} fields of {type(params).__name__} (env.params_type, env.param_bounds)"
            )
        table = env.param_bounds
        cast = {}
        for k, v in dynamic.items():
            old = getattr(params, k)
            if not hasattr(old, "dtype"):
                cast[k] = v
                continue
            dtype = jnp.result_type(old)
            if k in table and not bounds.fits_dtype(v, dtype):
                # 2**40, 1e308 or inf for an int32 field (1e39 for a float32 one) cannot be cast: it is
                # outside the field's bounds, which lie inside its dtype, so say that
                raise ValueError(bounds.bound_violation(k, v, *table[k], id))
            cast[k] = jnp.asarray(v, dtype=dtype)
        if "task" in cast:
            env.variant_params(params, task=int(cast["task"]))  # validates the id
        if env.level_field in cast:
            env.variant_params(params, level=int(cast[env.level_field]))
        params = params.replace(**cast)
        env.validate_params(params)  # every field inside its documented bounds (hivex_jax.core.bounds)
    if world_files or stress_worlds:
        from hivex_jax.worlds.wrapper import wrap_worlds

        env = wrap_worlds(env, params, world_files, stress_worlds)
    if any(v is not None for v in message_options.values()):
        from hivex_jax.wrappers.messages import wrap_messages

        env = wrap_messages(env, message_options)
    return env, params


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
