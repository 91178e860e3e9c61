"""Plots: learning curves with the mean and 95% CI over seeds."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval.stats import mean_ci95


def _band(ax: Any, x: np.ndarray, values: np.ndarray, label: str, color: str) -> None:
    mean, half = mean_ci95(values, axis=0)
    ok = ~np.isnan(mean)
    ax.plot(x[ok], mean[ok], color=color, label=label, marker="." if ok.sum() < 30 else None)
    ax.fill_between(x[ok], (mean - half)[ok], (mean + half)[ok], color=color, alpha=0.25, linewidth=0)


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
    scripted, random). Mean and 95% CI over seeds (shaded); the number of seeds is in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train_values = np.atleast_2d(np.asarray(train_values, np.float64))
    seeds = train_values.shape[0]
    if eval_values is not None and not isinstance(eval_values, Mapping):
        eval_values = {"policy": eval_values}
    eval_values = {k: v for k, v in (eval_values or {}).items() if np.size(v) > 0}
    has_eval = bool(eval_values)
    fig, axes = plt.subplots(1, 2 if has_eval else 1, figsize=(11 if has_eval else 6, 4), squeeze=False)
    ax = axes[0, 0]
    _band(ax, np.asarray(train_steps, np.float64), train_values, f"mean, 95% CI ({seeds} seeds)", "C0")
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel(train_label)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    if has_eval:
        ax = axes[0, 1]
        for i, (name, values) in enumerate(eval_values.items()):
            values = np.atleast_2d(np.asarray(values, np.float64))
            _band(ax, np.asarray(eval_steps, np.float64), values, f"{name} ({seeds} seeds)", f"C{i + 1}")
        for i, (name, value) in enumerate((references or {}).items()):
            color = f"C{i + 1 + len(eval_values)}"
            ax.axhline(value, color=color, linestyle="--", label=f"{name} ({value:.0f})")
        ax.set_xlabel("env steps per seed")
        ax.set_ylabel(eval_label)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
