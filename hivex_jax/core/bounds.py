"""Documented bounds of `EnvParams` fields: eager validation, clamping under `jit`, and a debug switch.

Each environment's `params.py` declares `PARAM_BOUNDS: dict[str, tuple[lo, hi]]` right after its params
class: one entry per field, inclusive, applied elementwise to array fields (e.g. `task_weights`). A bound
is a number or the name of a static attribute of the env (e.g. `"max_forest_patches"`), so bounds that
follow static options stay true for every option. `STATIC_BOUNDS` beside it bounds the numeric static
options (constructor / `make` kwargs): `check_static_options` refuses a value outside them before the env
allocates or traces anything.

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
import jax.core  # jax.core.Tracer: `import jax` alone does not declare the submodule to type checkers
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


def _scalar_number(x: Any) -> float | int:
    """One element as a Python number; an integer beyond float64 stays an exact `int`."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{x!r} is not a number") from exc


def number_array(value: Any) -> np.ndarray:
    """`value` (scalar, nested list, NumPy or concrete JAX array) as a NumPy array comparisons work on:
    its own numeric dtype, or float64/object elements for Python ints too large for int64 (never an
    OverflowError). A non-number is a ValueError."""
    try:
        v = np.asarray(value)
    except (OverflowError, TypeError, ValueError):
        v = np.asarray(value, dtype=object)
    if v.dtype.kind in "biuf":
        return v
    flat = [_scalar_number(x) for x in v.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(v.shape)


def show_number(x: Any) -> str:
    """A number as text for an error message; an integer with more than 20 digits by its size."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and abs(int(x)) >= 10**30:
        digits = int(abs(int(x)).bit_length() * 0.30103) + 1
        return f"{'a negative' if x < 0 else 'an'} integer of about {digits} digits"
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    return str(x)


def bound_violation(name: str, value: Any, lo: float, hi: float, where: str) -> str | None:
    """The error message if concrete `value` (any shape) is NaN or outside [lo, hi], else None."""
    v = number_array(value)
    if v.dtype == object:
        bad = np.array([(x != x) or x < lo or x > hi for x in v.reshape(-1)], bool).reshape(v.shape)
    elif np.issubdtype(v.dtype, np.floating):
        bad = np.isnan(v) | (v < lo) | (v > hi)
    else:
        bad = (v < lo) | (v > hi)
    if not np.any(bad):
        return None
    if v.ndim == 0:
        shown = show_number(v.item())
    else:
        values = v[bad].tolist()
        more = f", ... ({len(values)} values)" if len(values) > 5 else ""
        shown = "[" + ", ".join(show_number(x) for x in values[:5]) + more + "]"
    return f"{where}: {name} = {shown} is outside its bounds [{lo:g}, {hi:g}]"


def fits_dtype(value: Any, dtype: Any) -> bool:
    """Whether every element of `value` converts to `dtype` without wrapping around or overflowing to
    inf (NaN fits a float dtype: the bounds check reports it)."""
    v = number_array(value)
    dtype = np.dtype(dtype)
    if v.dtype != object and np.can_cast(v.dtype, dtype, "safe"):  # e.g. int32 params into int32
        return True
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return all(x == x and info.min <= x <= info.max for x in v.reshape(-1).tolist())
    if dtype.kind == "f":
        big = float(np.finfo(dtype).max)
        return all(x != x or abs(x) == float("inf") or abs(x) <= big for x in v.reshape(-1).tolist())
    return True


def declared_static_bounds(params_type: type) -> dict[str, tuple[float, float]]:
    """The `STATIC_BOUNDS` table declared next to `params_type` (in its module); {} if it has none."""
    module = sys.modules.get(params_type.__module__)
    return dict(getattr(module, "STATIC_BOUNDS", {}))


def declared_fixed_options(params_type: type) -> dict[str, str]:
    """`FIXED_OPTIONS` next to `params_type`: options other envs have that this one fixes, and why."""
    module = sys.modules.get(params_type.__module__)
    return dict(getattr(module, "FIXED_OPTIONS", {}))


def check_static_options(where: str, table: Mapping[str, tuple[float, float]], **options: Any) -> tuple:
    """`options`' values in the order given, each with an entry in `table` checked against its inclusive
    bounds (an option whose bounds are ints must be a whole number; it comes back as an `int`).

    Raises ValueError naming the option, the value and the bounds: called by `make` and by the env
    constructors before anything is allocated or traced (docs/api.md, "Static options")."""
    checked = []
    for name, value in options.items():
        if name not in table:
            checked.append(value)
            continue
        lo, hi = table[name]
        whole = isinstance(lo, int) and isinstance(hi, int)
        kind = "a whole number" if whole else "a number"
        if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)) or np.ndim(value) != 0:
            raise ValueError(f"{where}: {name} must be {kind} in [{lo:g}, {hi:g}]; got {value!r}")
        try:
            number = _scalar_number(np.asarray(value).item() if hasattr(value, "dtype") else value)
        except ValueError:
            raise ValueError(f"{where}: {name} must be {kind} in [{lo:g}, {hi:g}]; got {value!r}") from None
        if number != number or not lo <= number <= hi:
            raise ValueError(
                f"{where}: {name} = {show_number(number)} is outside its bounds [{lo:g}, {hi:g}] "
                "(static option)"
            )
        if whole:
            if number != int(number):
                raise ValueError(f"{where}: {name} must be a whole number in [{lo}, {hi}]; got {value!r}")
            number = int(number)
        checked.append(number)
    return tuple(checked)


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
