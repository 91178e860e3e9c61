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
from hivex_jax.eval.score import fraction_of_scripted, normalised_score, scripted_beats_random
from hivex_jax.eval.stats import iqm, mean_ci95, summarize

__all__ = [
    "Evaluator",
    "episode_frames",
    "evaluate",
    "evaluate_params",
    "find_scripted_policy",
    "fraction_of_scripted",
    "iqm",
    "learning_curve",
    "mean_ci95",
    "normalised_score",
    "per_world_returns",
    "random_policy",
    "scripted_beats_random",
    "scripted_policy",
    "summarize",
    "summarize_totals",
    "sweep_summary",
    "write_gif",
]
