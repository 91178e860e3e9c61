"""Documented bounds of `EnvParams` fields: eager validation, clamping under `jit`, and a debug switch.

Each environment's `params.py` declares `PARAM_BOUNDS: dict[str, tuple[lo, hi]]` right after its params
class: one entry per field, inclusive, applied elementwise to array fields (e.g. `task_weights`). A bound
is a number or the name of a static attribute of the env (e.g. `"max_forest_patches"`), so bounds that
follow static options stay true for every option.

* Eager (`hivex_jax.make(...)`, `env.validate_params(params)`): a value outside its bounds, or a NaN,
  raises `ValueError` naming the field, the value and the bounds.
* Under `jit` / `vmap` values cannot raise: `env.reset` and `env.step` clamp every field into its
  bounds first (NaN becomes the lower bound). Values inside the bounds pass unchanged, bit for bit.
* `with hivex_jax.debug_checks():` (or the environment variable `HIVEX_DEBUG_CHECKS=1`), read when a
  function is traced, adds `jax.experimental.checkify` checks for the same bounds (and for non-finite
  or out-of-range actions) to `reset` / `step`; run the jitted function under `checkify.checkify` to
  get them as errors. Functions traced with the switch off carry no checks (and cost nothing).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

Bound = float | int | str
ParamBounds = Mapping[str, tuple[Bound, Bound]]

DEBUG_ENV_VAR = "HIVEX_DEBUG_CHECKS"
_debug_depth = 0  # > 0 inside `debug_checks()`


@contextlib.contextmanager
def debug_checks(enabled: bool = True) -> Iterator[None]:
    """Within this block, `reset` / `step` traced from now on carry checkify checks (see module doc)."""
    global _debug_depth
    step = 1 if enabled else 0
    _debug_depth += step
    try:
        yield
    finally:
        _debug_depth -= step


def debug_checks_enabled() -> bool:
    """Whether checks are added to functions traced now (`debug_checks()` or `HIVEX_DEBUG_CHECKS=1`)."""
    return _debug_depth > 0 or os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0")


def declared_bounds(params_type: type) -> ParamBounds:
    """The `PARAM_BOUNDS` table declared next to `params_type` (in its module); {} if it has none."""
    module = sys.modules.get(params_type.__module__)
    return dict(getattr(module, "PARAM_BOUNDS", {}))


def resolve_bounds(table: ParamBounds, env: Any) -> dict[str, tuple[float, float]]:
    """`table` with static-attribute names replaced by the env's values: `{field: (lo, hi)}` numbers."""

    def value(b: Bound) -> float:
        return float(getattr(env, b)) if isinstance(b, str) else b

    return {name: (value(lo), value(hi)) for name, (lo, hi) in table.items()}


def _cast_bound(b: float, dtype: Any) -> jax.Array:
    """The bound in the field's dtype (integer bounds of float fields stay exact; inf stays inf)."""
    return jnp.asarray(b, dtype)


def clamp_params(params: Any, bounds: Mapping[str, tuple[float, float]]) -> Any:
    """`params` with every bounded field clipped into [lo, hi] elementwise (NaN -> lo); traceable."""
    changes = {}
    for name, (lo, hi) in bounds.items():
        value = getattr(params, name)
        if not isinstance(value, jax.core.Tracer) and bound_violation(name, value, lo, hi, "") is None:
            # A concrete value inside its bounds stays the very same constant: a clip in the graph
            # would let XLA fold the constants differently (last-bit changes in WFC rollouts).
            continue
        x = jnp.asarray(value)
        lo_a, hi_a = _cast_bound(lo, x.dtype), _cast_bound(hi, x.dtype)
        clipped = jnp.clip(x, lo_a, hi_a)
        if jnp.issubdtype(x.dtype, jnp.floating):
            clipped = jnp.where(jnp.isnan(x), lo_a, clipped)
        changes[name] = clipped
    return params.replace(**changes) if changes else params


def bound_violation(name: str, value: Any, lo: float, hi: float, where: str) -> str | None:
    """The error message if concrete `value` (any shape) is NaN or outside [lo, hi], else None."""
    v = np.asarray(value)
    bad = np.isnan(v) | (v < lo) | (v > hi) if np.issubdtype(v.dtype, np.floating) else (v < lo) | (v > hi)
    if not np.any(bad):
        return None
    shown = v if v.ndim == 0 else v[bad]
    return f"{where}: {name} = {shown.tolist()} is outside its bounds [{lo:g}, {hi:g}]"


def validate_params(params: Any, bounds: Mapping[str, tuple[float, float]], where: str) -> Any:
    """Raise ValueError naming the first field outside its bounds (concrete params only); returns params."""
    for name, (lo, hi) in bounds.items():
        value = getattr(params, name)
        if isinstance(value, jax.core.Tracer):
            raise TypeError(
                f"{where}: validate_params needs concrete params; under jit use the debug checks "
                "(hivex_jax.debug_checks) - reset/step clamp traced params into their bounds"
            )
        message = bound_violation(name, value, lo, hi, where)
        if message is not None:
            raise ValueError(message)
    return params


def check_params(params: Any, bounds: Mapping[str, tuple[float, float]], where: str) -> None:
    """checkify checks that every field is inside its bounds (traceable; see `debug_checks`)."""
    for name, (lo, hi) in bounds.items():
        x = jnp.asarray(getattr(params, name))
        ok = jnp.all((x >= lo) & (x <= hi))  # False for NaN
        checkify.check(ok, f"{where}: {name} = {{value}} is outside its bounds [{lo:g}, {hi:g}]", value=x)


def unbounded_fields(params: Any, bounds: Mapping[str, Any]) -> list[str]:
    """Names of `params` fields with no entry in `bounds` (the completeness check of the tests)."""
    return [f.name for f in dataclasses.fields(params) if f.name not in bounds]
