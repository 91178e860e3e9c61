"""The one score that compares a policy with the env's baselines, used wherever a result is reported.

`normalised_score` is the field's convention (Atari's human-normalised score, rliable):
`(R - R_random) / (R_scripted - R_random)` on the same worlds, 0 = random, 1 = the scripted controller.
It rises with the agent's return whatever the baselines' signs. Where the scripted controller does not
beat random by a usable gap there is no scale, and the score is NaN (`None` in JSON), with
`SCRIPTED_NOT_ABOVE_RANDOM` said instead of a ratio.

`fraction_of_scripted` (`R / R_scripted`) is kept only where it means something: a scripted return that is
positive by a usable margin. On a negative scripted return it would run backwards (an agent far better than
scripted scoring near 0), so there it is NaN too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: a gap |R_scripted - R_random| at most this fraction of max(|R_scripted|, |R_random|), or at most
#: ABSOLUTE_MIN_GAP, is no scale to divide by
RELATIVE_MIN_GAP = 1e-3
ABSOLUTE_MIN_GAP = 1e-8
#: what a report says instead of a normalised score where the scripted controller does not beat random
SCRIPTED_NOT_ABOVE_RANDOM = "scripted does not beat random here: no normalised score"
#: what a report says instead of a fraction where the scripted return is not positive
SCRIPTED_NOT_POSITIVE = "scripted return not positive: no fraction of scripted"
#: the definition, in the words tables and JSON use
DEFINITION = (
    "normalised score = (R - R_random) / (R_scripted - R_random) on the same worlds (0 random, 1 scripted)"
)


def scripted_beats_random(scripted: Any, random: Any) -> np.ndarray:
    """`bool[...]`: where the scripted return exceeds random's by a usable gap (elementwise)."""
    scripted, random = np.asarray(scripted, np.float64), np.asarray(random, np.float64)
    gap = scripted - random
    scale = np.maximum(np.abs(scripted), np.abs(random))
    return np.isfinite(gap) & (gap > RELATIVE_MIN_GAP * scale) & (gap > ABSOLUTE_MIN_GAP)


def normalised_score(agent: Any, scripted: Any, random: Any) -> np.ndarray:
    """`(agent - random) / (scripted - random)`, broadcast (e.g. agent `[runs, worlds]`, baselines
    `[worlds]`); NaN wherever `scripted_beats_random` is False."""
    agent = np.asarray(agent, np.float64)
    scripted, random = np.asarray(scripted, np.float64), np.asarray(random, np.float64)
    ok = scripted_beats_random(scripted, random)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = (agent - random) / np.where(ok, scripted - random, 1.0)
    return np.where(ok, score, np.nan)


def fraction_of_scripted(agent: Any, scripted: Any) -> np.ndarray:
    """`agent / scripted` where the scripted return is positive by a usable margin, else NaN."""
    agent, scripted = np.asarray(agent, np.float64), np.asarray(scripted, np.float64)
    ok = np.isfinite(scripted) & (scripted > ABSOLUTE_MIN_GAP)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = agent / np.where(ok, scripted, 1.0)
    return np.where(ok, fraction, np.nan)


def as_json(value: Any) -> float | None:
    """A scalar score for JSON: a float, or None where it is NaN (no score)."""
    value = float(np.asarray(value))
    return None if not np.isfinite(value) else value


def over_seeds(scores: Any) -> dict[str, Any] | None:
    """`{"mean", "ci95", "per_seed"}` of per-seed scores `f64[S]` (Student-t 95% CI over seeds), or None
    where any seed has no score (NaN)."""
    from hivex_jax.eval.stats import mean_ci95

    values = np.asarray(scores, np.float64).reshape(-1)
    if values.size == 0 or not np.isfinite(values).all():
        return None
    mean, half = mean_ci95(values)
    return {"mean": float(mean), "ci95": float(half), "per_seed": values.tolist()}


def score_fields(
    means: Mapping[str, float], trained: Sequence[str] = ("greedy", "stochastic")
) -> dict[str, Any]:
    """The scores a results JSON carries, from each policy's mean return on the same worlds (`means`:
    policy -> return, the baselines named "scripted" and "random"): `normalised_score` {policy: float or
    None} where both baselines ran, with `normalised_score_note` (SCRIPTED_NOT_ABOVE_RANDOM) where scripted
    does not beat random; `fraction_of_scripted` {policy: float} where the scripted return is positive,
    else `fraction_of_scripted_note` (SCRIPTED_NOT_POSITIVE); `score_definition` when either is there."""
    names = [n for n in trained if n in means]
    out: dict[str, Any] = {}
    if "scripted" in means and "random" in means:
        scripted, random = means["scripted"], means["random"]
        out["normalised_score"] = {n: as_json(normalised_score(means[n], scripted, random)) for n in names}
        if not scripted_beats_random(scripted, random):
            out["normalised_score_note"] = SCRIPTED_NOT_ABOVE_RANDOM
    if "scripted" in means:
        fractions = {n: as_json(fraction_of_scripted(means[n], means["scripted"])) for n in names}
        if all(v is not None for v in fractions.values()):
            out["fraction_of_scripted"] = fractions
        else:
            out["fraction_of_scripted_note"] = SCRIPTED_NOT_POSITIVE
    if out:
        out["score_definition"] = DEFINITION
    return out


def format_score(value: Any, digits: int = 3, missing: str = "n/a") -> str:
    """A score for a table: `digits` decimals, or `missing` where there is none (None or NaN)."""
    if value is None or not np.isfinite(float(value)):
        return missing
    return f"{float(value):.{digits}f}"


def score_lines(fields: Mapping[str, Any]) -> list[str]:
    """Printed lines of `score_fields`' output: each trained policy's normalised score (or why there is
    none) and, where it means something, its fraction of scripted."""
    lines = []
    if "normalised_score" in fields:
        if fields.get("normalised_score_note"):
            lines.append(fields["normalised_score_note"])
        else:
            scores = ", ".join(f"{n} {format_score(v)}" for n, v in fields["normalised_score"].items())
            lines.append(f"normalised score (R - R_random) / (R_scripted - R_random): {scores}")
    if "fraction_of_scripted" in fields:
        fractions = ", ".join(f"{n} {format_score(v)}" for n, v in fields["fraction_of_scripted"].items())
        lines.append(f"fraction of scripted R / R_scripted: {fractions}")
    elif fields.get("fraction_of_scripted_note"):
        lines.append(fields["fraction_of_scripted_note"])
    return lines
