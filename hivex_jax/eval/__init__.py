"""Evaluation: full-episode rollouts on held-out worlds, seed-sweep statistics, plots and GIFs."""

from hivex_jax.eval.gif import episode_frames, write_gif
from hivex_jax.eval.plots import learning_curve, per_world_returns, sweep_summary
from hivex_jax.eval.rollout import (
    Evaluator,
    evaluate,
    evaluate_params,
    find_scripted_policy,
    random_policy,
    scripted_policy,
    summarize_totals,
)
from hivex_jax.eval.stats import iqm, mean_ci95, summarize

__all__ = [
    "Evaluator",
    "episode_frames",
    "evaluate",
    "evaluate_params",
    "find_scripted_policy",
    "iqm",
    "learning_curve",
    "mean_ci95",
    "per_world_returns",
    "random_policy",
    "scripted_policy",
    "summarize",
    "summarize_totals",
    "sweep_summary",
    "write_gif",
]
