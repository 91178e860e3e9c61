"""Seed-sweep statistics: mean with a Student-t 95% confidence interval, IQM, and summaries."""

from __future__ import annotations

from typing import Any

import numpy as np

#: what a table or plot says instead of a CI over seeds where there is one seed (a CI of 0 would be fake)
ONE_SEED = "one seed: no interval"

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30 (beyond: the normal 1.96 is within 2%).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """t_{0.975} with `df` degrees of freedom (NaN for df < 1)."""
    if df < 1:
        return float("nan")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def mean_ci95(values: Any, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean over `axis` and the half-width of its 95% CI (Student t, ignoring NaNs; 0 for one value)."""
    x = np.asarray(values, np.float64)
    n = np.sum(~np.isnan(x), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(x, axis=axis) if x.size else np.nan
        std = np.nanstd(x, axis=axis, ddof=1) if x.shape[axis] > 1 else np.zeros_like(mean)
    quantile = np.vectorize(lambda k: t_quantile_975(int(k) - 1) if k > 1 else 0.0)(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(n > 1, quantile * std / np.sqrt(np.maximum(n, 1)), 0.0)
    return np.asarray(mean), np.asarray(half)


def iqm(values: Any) -> float:
    """Interquartile mean of all values (mean of the middle 50%), robust to outlier seeds."""
    x = np.sort(np.asarray(values, np.float64).ravel())
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    lo, hi = int(np.floor(0.25 * x.size)), int(np.ceil(0.75 * x.size))
    return float(x[lo:hi].mean()) if hi > lo else float(x.mean())


def summarize(per_seed_world: Any) -> dict[str, float]:
    """Summary of returns shaped `[seeds, worlds]`: mean, 95% CI over seeds (of per-seed world means),
    IQM over all (seed, world) runs, min and max of the seed means."""
    x = np.asarray(per_seed_world, np.float64)
    if x.ndim == 1:
        x = x[None]
    seed_means = x.mean(axis=1)
    mean, half = mean_ci95(seed_means)
    return {
        "mean": float(mean),
        "ci95": float(half),
        "iqm": iqm(x),
        "seed_min": float(seed_means.min()),
        "seed_max": float(seed_means.max()),
        "num_seeds": int(x.shape[0]),
        "num_worlds": int(x.shape[1]),
    }


def mean_ci_text(mean: float, half: float, num_seeds: int, digits: int = 1, one_seed: str = ONE_SEED) -> str:
    """A table's "mean ± CI" over seeds to `digits` decimals; for one seed the mean and `one_seed` in
    parentheses ("12.3 (one seed: no interval)"), never a CI of 0."""
    if num_seeds > 1:
        return f"{mean:.{digits}f} ± {half:.{digits}f}"
    return f"{mean:.{digits}f} ({one_seed})"
