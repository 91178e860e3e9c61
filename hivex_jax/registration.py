"""`hivex_jax.make(id, **overrides)`: the composition root of the library (as gymnax/registration.py).

`make` looks the id up in the registry (`hivex_jax.core.registry`), builds the env with its static
options, sets its dynamic ones in the params (both checked against their documented bounds), then adds
the wrappers the options ask for: worlds from files or stress worlds (`hivex_jax.worlds`) and the
message channel (`hivex_jax.wrappers.messages`). It sits above everything it composes, so no layer below
imports it (tests/core/test_layers.py).
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

import jax.numpy as jnp

from hivex_jax.core import bounds
from hivex_jax.core.registry import namespace_factory, spec
from hivex_jax.worlds.wrapper import wrap_worlds
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS, wrap_messages

__all__ = ["make"]


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
    message_options = {k: overrides.pop(k, None) for k in MESSAGE_OPTIONS}
    factory = s.factory()
    ctor_names: set[str] = set(getattr(factory, "static_options", ()))
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
        params = _with_dynamic_options(id, env, params, dynamic, ctor_names)
    if world_files or stress_worlds:
        env = wrap_worlds(env, params, world_files, stress_worlds)
    if any(v is not None for v in message_options.values()):
        env = wrap_messages(env, message_options)
    return env, params


def _with_dynamic_options(
    id: str, env: Any, params: Any, dynamic: dict[str, Any], ctor_names: set[str]
) -> Any:
    """`params` with the `EnvParams` fields in `dynamic` set (cast to each field's dtype, `level` naming
    the env's level field), or a TypeError/ValueError naming what is unknown or out of bounds."""
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
            lo, hi = table[k]
            raise ValueError(bounds.bound_violation(k, v, lo, hi, id))
        cast[k] = jnp.asarray(v, dtype=dtype)
    if "task" in cast:
        env.variant_params(params, task=int(cast["task"]))  # validates the id
    if env.level_field in cast:
        env.variant_params(params, level=int(cast[env.level_field]))
    params = params.replace(**cast)
    env.validate_params(params)  # every field inside its documented bounds (hivex_jax.core.bounds)
    return params
