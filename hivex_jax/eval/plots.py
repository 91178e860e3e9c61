"""Plots: learning curves (mean and 95% CI over seeds), per-world held-out returns, sweep summaries,
robust aggregate intervals and performance profiles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval.stats import ONE_SEED, mean_ci95


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (imported lazily: the env API does not need it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 100) -> Path:
    """Write `fig` to `path` (folders created) and close it (every plot of the package goes through
    here: the tests read each figure's titles, legends and axis limits at this point)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


#: legend text of the arrow drawn where an interval runs past the axis
CLIPPED_LABEL = "95% CI clipped at the axis (arrow: it goes on)"


def data_limits(*values: Any, margin: float = 0.05) -> tuple[float, float]:
    """`(low, high)` axis limits around the finite values of all `values` (array-likes) with `margin` of
    their span on each side (a single value gets +-5% of its size, at least +-1): intervals are drawn
    within these, not the reverse, so a Student-t CI over 2 seeds (t = 12.7) cannot flatten the data."""
    x = np.concatenate([np.asarray(v, np.float64).ravel() for v in values] or [np.zeros(0)])
    x = x[np.isfinite(x)]
    if x.size == 0:
        return 0.0, 1.0
    low, high = float(x.min()), float(x.max())
    pad = margin * (high - low) if high > low else max(0.05 * abs(high), 1.0)
    return low - pad, high + pad


def _intervals(
    ax: Any,
    where: np.ndarray,
    mean: np.ndarray,
    half: np.ndarray,
    limits: tuple[float, float],
    color: str,
    label: str,
    vertical: bool = True,
    **style: Any,
) -> bool:
    """Points at `mean` with error bars `mean +- half` clipped at `limits`, an arrow at each clipped end;
    True if any end was clipped. `vertical`: values on the y axis (else on the x axis)."""
    low, high = np.maximum(mean - half, limits[0]), np.minimum(mean + half, limits[1])
    err = np.stack([np.maximum(mean - low, 0.0), np.maximum(high - mean, 0.0)])
    if vertical:
        ax.errorbar(where, mean, yerr=err, color=color, label=label, **style)
    else:
        ax.errorbar(mean, where, xerr=err, color=color, label=label, **style)
    clipped = False
    for end, past, marker in ((0, mean - half < limits[0], "v<"), (1, mean + half > limits[1], "^>")):
        if past.any():
            at = np.full(int(past.sum()), limits[end])
            xy = (where[past], at) if vertical else (at, where[past])
            ax.plot(*xy, marker[0 if vertical else 1], color=color, ms=6, clip_on=False, linestyle="none")
            clipped = True
    return clipped


#: legend text of a CI band cut where it runs past the axis
BAND_CLIPPED_LABEL = "95% CI band cut at the axis (it goes on)"


def _clipped_legend_entry(vertical: bool, band: bool) -> tuple[Any, str]:
    """A legend handle and text for intervals clipped at the axis: an arrow, or a band patch."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if band:
        return Patch(color="0.3", alpha=0.25, hatch="//"), BAND_CLIPPED_LABEL
    return Line2D([], [], marker="^" if vertical else ">", color="0.3", linestyle="none"), CLIPPED_LABEL


def _band(
    ax: Any, x: np.ndarray, values: np.ndarray, label: str, color: str, limits: tuple[float, float]
) -> bool:
    """Mean line and 95% CI band over seeds, the band cut at `limits`; True if it was cut."""
    mean, half = mean_ci95(values, axis=0)
    ok = ~np.isnan(mean)
    ax.plot(x[ok], mean[ok], color=color, label=label, marker="." if ok.sum() < 30 else None)
    low, high = (mean - half)[ok], (mean + half)[ok]
    ax.fill_between(
        x[ok], np.maximum(low, limits[0]), np.minimum(high, limits[1]), color=color, alpha=0.25, linewidth=0
    )
    return bool(np.any(low < limits[0]) or np.any(high > limits[1]))


def _steps_axis(ax: Any) -> None:
    """Label the x axis as env steps per seed, ticks in short engineering form ("40k", "1.2M") so that
    six-digit step counts do not run into each other."""
    from matplotlib.ticker import EngFormatter

    ax.set_xlabel("env steps per seed")
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))


def _limit_axis(
    ax: Any, limits: tuple[float, float], clipped: bool, vertical: bool = True, band: bool = False
) -> tuple[list, list[str]]:
    """Set the value axis to `limits`; the axis' legend handles and texts, with the clipped-interval
    entry when something was clipped."""
    (ax.set_ylim if vertical else ax.set_xlim)(*limits)
    handles, labels = ax.get_legend_handles_labels()
    if clipped:
        handle, text = _clipped_legend_entry(vertical, band)
        handles, labels = [*handles, handle], [*labels, text]
    return handles, labels


def learning_curve(
    path: str | Path,
    train_steps: Any,
    train_values: Any,
    eval_steps: Any = None,
    eval_values: Any = None,
    references: Mapping[str, float] | None = None,
    title: str = "",
    train_label: str = "mean reward per agent step (training rollouts)",
    eval_label: str = "held-out test-world return",
) -> Path:
    """Left: a training metric `[seeds, updates]` against env steps; right (if given): the held-out
    evaluation `[seeds, evals]` (or `{label: [seeds, evals]}`) with horizontal reference lines (e.g.
    scripted, random). Mean and 95% CI over seeds (shaded); the number of seeds is in the legend (one seed:
    the line alone, the legend saying there is no interval)."""
    plt = pyplot()

    train_values = np.atleast_2d(np.asarray(train_values, np.float64))
    seeds = train_values.shape[0]
    if eval_values is not None and not isinstance(eval_values, Mapping):
        eval_values = {"policy": eval_values}
    eval_values = {k: v for k, v in (eval_values or {}).items() if np.size(v) > 0}
    has_eval = bool(eval_values)
    fig, axes = plt.subplots(1, 2 if has_eval else 1, figsize=(11 if has_eval else 6, 4), squeeze=False)
    ax = axes[0, 0]
    limits = data_limits(train_values)  # the seeds' values; a wider CI band is cut at the axis
    clipped = _band(
        ax,
        np.asarray(train_steps, np.float64),
        train_values,
        f"mean, Student-t 95% CI ({seeds} seeds)" if seeds > 1 else ONE_SEED,
        "C0",
        limits,
    )
    _steps_axis(ax)
    ax.set_ylabel(train_label)
    ax.grid(alpha=0.3)
    ax.legend(*_limit_axis(ax, limits, clipped, band=True), loc="best", fontsize=8)
    if has_eval:
        ax = axes[0, 1]
        eval_values = {k: np.atleast_2d(np.asarray(v, np.float64)) for k, v in eval_values.items()}
        references = dict(references or {})
        limits = data_limits(*eval_values.values(), list(references.values()))
        clipped = False
        for i, (name, values) in enumerate(eval_values.items()):
            label = f"{name} ({seeds} seeds)" if seeds > 1 else f"{name} ({ONE_SEED})"
            clipped |= _band(ax, np.asarray(eval_steps, np.float64), values, label, f"C{i + 1}", limits)
        for i, (name, value) in enumerate(references.items()):
            color = f"C{i + 1 + len(eval_values)}"
            ax.axhline(value, color=color, linestyle="--", label=f"{name} ({value:.0f})")
        _steps_axis(ax)
        ax.set_ylabel(eval_label)
        ax.grid(alpha=0.3)
        ax.legend(*_limit_axis(ax, limits, clipped, band=True), loc="best", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def _policy_returns(results: Mapping[str, Any], name: str) -> np.ndarray:
    """Per-world returns of one policy of an `eval.json` dict as `[seeds, worlds]` (baselines: 1 row)."""
    per_world = results["policies"][name]["per_world"]
    if "return_per_seed" in per_world[0]:
        return np.asarray([w["return_per_seed"] for w in per_world], np.float64).T
    return np.asarray([[w["return_mean"] for w in per_world]], np.float64)


def per_world_returns(path: str | Path, results: Mapping[str, Any], title: str = "") -> Path:
    """Held-out results of an `eval.json` dict: left, each world's return per policy (trained policies:
    mean and 95% CI over seeds), worlds ordered by the scripted return when there is one, else by the
    first policy's; right, the spread over worlds of each policy's (seed-mean) return as a box plot."""
    plt = pyplot()

    names = list(results["policies"])
    if not names:
        raise ValueError("results hold no policies")
    worlds = np.asarray(results["worlds"])
    returns = {n: _policy_returns(results, n) for n in names}
    order = np.argsort(returns["scripted" if "scripted" in returns else names[0]].mean(axis=0), kind="stable")
    x = np.arange(len(worlds))
    fig, (ax, box) = plt.subplots(
        1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True
    )
    limits = data_limits(*returns.values())  # every seed's return; a wider CI is clipped and marked
    clipped = False
    trained = [n for n in names if returns[n].shape[0] > 1]
    for i, name in enumerate(names):
        values = returns[name][:, order]
        seeds = values.shape[0]
        if seeds > 1:
            mean, half = mean_ci95(values, axis=0)
            label = f"{name} (mean, Student-t 95% CI over {seeds} seeds)"
            dodge = (trained.index(name) - (len(trained) - 1) / 2) * 0.15  # side by side, not on top
            clipped |= _intervals(ax, x + dodge, mean, half, limits, f"C{i}", label, fmt="o", ms=3, capsize=2)
        else:  # a baseline run once, or a trained policy of one seed (said in the legend)
            one_seed = "return_per_seed" in results["policies"][name]["per_world"][0]
            label = f"{name} ({ONE_SEED})" if one_seed else name
            marker = {"scripted": "s", "random": "x"}.get(name, "o")
            ax.plot(x, values[0], marker, ms=4, color=f"C{i}", label=label)
    step = max(1, len(worlds) // 25)
    ax.set_xticks(x[::step], [str(w) for w in worlds[order][::step]], rotation=90, fontsize=7)
    ax.set_xlabel("test world seed" + (" (ordered by the scripted return)" if "scripted" in returns else ""))
    ax.set_ylabel("episode return (mean over agents)")
    ax.grid(alpha=0.3)
    handles, labels = _limit_axis(ax, limits, clipped)  # below the axes: points cover the whole plot
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3), fontsize=8)
    box.boxplot([returns[n].mean(axis=0) for n in names])
    box.set_xticks(np.arange(1, len(names) + 1), names)  # (boxplot's label keyword changed name in 3.9)
    box.set_ylabel(f"per-world return ({len(worlds)} worlds)")
    box.tick_params(axis="x", labelrotation=45)
    box.grid(alpha=0.3)
    title = "\n".join(t for t in (title, evaluated_setting(results)) if t)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def evaluated_setting(results: Mapping[str, Any]) -> str:
    """`"zero-shot in num_agents=12 (trained with 3)"` for an evaluation with env overrides (an
    `eval.json` dict's `env_overrides`), "" for one in the training setting."""
    overrides = list(results.get("env_overrides") or [])
    if not overrides:
        return ""
    trained = results.get("train_setting") or {}
    shown = []
    for item in overrides:
        key = item.partition("=")[0]
        before = trained.get(key) if key in ("task", "level", "num_agents") else None
        shown.append(item + (f" (trained with {before})" if before is not None else ""))
    return "zero-shot in " + ", ".join(shown)


def sweep_summary(path: str | Path, rows: Sequence[Mapping[str, Any]], title: str = "") -> Path:
    """One row per sweep combination: each policy's held-out return, mean and 95% CI over seeds
    (rows as `hivex sweep` writes them to sweep.json: `combination` plus a summary per policy)."""
    plt = pyplot()

    if not rows:
        raise ValueError("a sweep summary needs at least one combination")
    names = [n for n in ("greedy", "stochastic", "scripted", "random") if n in rows[0]]
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(rows)), constrained_layout=True)
    # the seeds' range (each row's seed_min..seed_max, else its mean): a wider CI is clipped and marked
    limits = data_limits(
        *[[r[n].get(k, r[n]["mean"]) for k in ("seed_min", "seed_max")] for r in rows for n in names]
    )
    clipped = False
    for i, name in enumerate(names):
        offset = (i - (len(names) - 1) / 2) * 0.15
        means = np.array([r[name]["mean"] for r in rows], np.float64)
        halves = np.array([r[name]["ci95"] if r[name].get("num_seeds", 1) > 1 else 0.0 for r in rows])
        # a trained policy of one seed has a point and no interval, said in the legend
        one_seed = name in ("greedy", "stochastic") and any(r[name].get("num_seeds", 1) == 1 for r in rows)
        label = f"{name} ({ONE_SEED})" if one_seed else name
        clipped |= _intervals(
            ax, y + offset, means, halves, limits, f"C{i}", label, vertical=False, fmt="o", ms=4, capsize=2
        )
    ax.set_yticks(y, [r["combination"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("held-out return (mean, Student-t 95% CI over seeds)")
    ax.grid(alpha=0.3, axis="x")
    handles, labels = _limit_axis(ax, limits, clipped, vertical=False)  # below: points cover the plot
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    if title:
        ax.set_title(title)
    return save_figure(fig, path)


def plot_aggregates(path: str | Path, aggregates: Mapping[str, Mapping[str, Any]], title: str = "") -> Path:
    """Aggregate-interval plot: one panel per metric (IQM, mean, median, optimality gap), one row per
    entry, the point estimate and its interval (`{entry: {metric: {"point", "ci95"}}}`, as
    `hivex_jax.eval.aggregate` returns them). An entry of one seed (`ci95` None, or `num_runs` 1) has no
    interval: a diamond at its point, and the legend says so (a zero-width bar looked like no result)."""
    plt = pyplot()

    if not aggregates:
        raise ValueError("an aggregate plot needs at least one entry")
    names = list(aggregates)
    metrics = [m for m in ("iqm", "mean", "median", "optimality_gap") if m in aggregates[names[0]]]
    y = np.arange(len(names))
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(3.2 * len(metrics) + 1.5, 1.2 + 0.4 * len(names)), squeeze=False,
        sharey=True, constrained_layout=True,
    )  # fmt: skip
    single = {n for n in names if _one_run(aggregates[n])}
    for ax, metric in zip(axes[0], metrics, strict=True):
        points = np.array([aggregates[n][metric]["point"] for n in names])
        bounds = [aggregates[n][metric]["ci95"] for n in names if n not in single]
        for i, name in enumerate(names):
            if name in single:  # no interval: a marker that shows at any axis scale
                ax.plot(points[i], y[i], "D", ms=8, color=f"C{i}", markeredgecolor="k", linestyle="none")
                continue
            low, high = aggregates[name][metric]["ci95"]  # a bar: the interval, a tick at the point
            ax.barh(y[i], high - low, left=low, height=0.6, color=f"C{i}", alpha=0.5)
            ax.plot([points[i]] * 2, [y[i] - 0.3, y[i] + 0.3], color="k", linewidth=1.5)
        ax.set_xlim(*data_limits(points, bounds))  # never a zero-width axis around one point
        ax.set_title({"iqm": "IQM", "optimality_gap": "optimality gap"}.get(metric, metric))
        ax.grid(alpha=0.3, axis="x")
    axes[0, 0].set_yticks(y, names)
    axes[0, 0].set_ylim(len(names) - 0.5, -0.5)  # first entry on top; room for a marker at either end
    what = "bar: rliable stratified bootstrap 95% CI; tick: point estimate"
    if single:
        from matplotlib.lines import Line2D

        diamond = Line2D([], [], marker="D", ms=8, color="0.5", markeredgecolor="k", linestyle="none")
        fig.legend([diamond], [f"point estimate, {ONE_SEED}"], loc="outside upper right", fontsize=8)
        what = f"{what}; diamond: {ONE_SEED}" if len(single) < len(names) else f"diamond: {ONE_SEED}"
    fig.supxlabel(f"score ({what})", fontsize=9)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def _one_run(entry: Mapping[str, Any]) -> bool:
    """Whether an aggregates entry comes from one seed: no interval (`ci95` None; `num_runs` 1 in files
    written when one run's degenerate interval was kept)."""
    stats = [v for v in entry.values() if isinstance(v, Mapping)]
    return entry.get("num_runs") == 1 or any(v.get("ci95", ()) is None for v in stats)


def plot_performance_profiles(path: str | Path, profiles: Mapping[str, Any], title: str = "") -> Path:
    """Performance profiles: the fraction of (seed, world) scores above each threshold, per entry, with
    its 95% CI band (`{"tau": [...], entry: {"fraction_above", "ci95_low", "ci95_high"}}`; an entry of
    one seed, bounds None, has its line alone and says so in the legend)."""
    plt = pyplot()

    taus = np.asarray(profiles["tau"], np.float64)
    names = [k for k in profiles if k != "tau"]
    if not names:
        raise ValueError("a performance-profile plot needs at least one entry")
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    for i, name in enumerate(names):
        p = profiles[name]
        if p.get("ci95_low") is None:
            ax.plot(taus, p["fraction_above"], color=f"C{i}", label=f"{name} ({ONE_SEED})")
            continue
        ax.plot(taus, p["fraction_above"], color=f"C{i}", label=name)
        ax.fill_between(taus, p["ci95_low"], p["ci95_high"], color=f"C{i}", alpha=0.2, linewidth=0)
    ax.set_xlabel("score threshold tau")
    ax.set_ylabel("fraction of (seed, world) scores > tau")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    banded = any(profiles[n].get("ci95_low") is not None for n in names)
    ax.legend(fontsize=8, title="band: stratified bootstrap 95% CI" if banded else None, title_fontsize=8)
    if title:
        ax.set_title(title)
    return save_figure(fig, path)
