"""rliable, importable on pandas 3, and a seeded bootstrap: rliable 1.2 pins arch < 8, whose import fails on
pandas >= 3 (`docs/sweeps.md`), and rliable draws its bootstrap indices from numpy's global generator.
Used by `aggregate`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import numpy as np


def _arch_predates_pandas_3() -> bool:
    """True where arch < 8 meets pandas >= 3: rliable 1.2 pins arch < 8, and arch 7's GARCH module (imported
    by `arch.bootstrap`) calls pandas' private `deprecate_kwarg` with its pre-3.0 signature."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("pandas").split(".")[0]) >= 3 and int(version("arch").split(".")[0]) < 8
    except (PackageNotFoundError, ValueError):
        return False


@contextmanager
def _pandas_3_deprecate_kwarg_shim():
    """While arch is imported: accept `deprecate_kwarg(old, new)` (pandas < 3) as pandas 3's
    `deprecate_kwarg(FutureWarning, old, new)`. Only that one decorator of arch's GARCH plots uses it."""
    import pandas.util._decorators as decorators

    original = decorators.deprecate_kwarg

    def compatible(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], str):
            return original(FutureWarning, *args, **kwargs)
        return original(*args, **kwargs)

    decorators.deprecate_kwarg = compatible
    try:
        yield
    finally:
        decorators.deprecate_kwarg = original


def rliable_modules() -> tuple[Any, Any]:
    """rliable's `library` and `metrics` modules, or an ImportError naming the extra that installs them."""
    try:
        if _arch_predates_pandas_3():
            with _pandas_3_deprecate_kwarg_shim():
                from rliable import library, metrics
        else:
            from rliable import library, metrics
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "robust aggregates need rliable: pip install 'hivex-jax[stats]' (or pip install rliable)"
        ) from exc
    return library, metrics


@contextmanager
def seeded_global_numpy(seed: int):
    """rliable draws its bootstrap indices from numpy's global generator: seed it, then restore it."""
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)
