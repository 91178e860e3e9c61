"""What a trained Ocean Plastic Collection policy lacks, measured by lending it parts of the scripted
controller.

`scripts/opc_safety_diagnosis.py RUN_DIR [--worlds 16]` prints `table(diagnose(RUN_DIR, worlds))`.

Scores the run's trained actor (every seed, greedy and stochastic) on held-out worlds 6000.. (full
1000-decision episodes), as it is and with one or both of the scripted controller's missing skills lent:

- `vessels`: on decisions where the scripted vessel-avoidance rule fires (a vessel predicted within 20 m
  in the next 10 decisions), the scripted action replaces the policy's;
- `safety`: the same for the border rule and the vessel rule;
- `throttle`: the throttle is always on (the policy steers);
- `safety + throttle`: both.

A policy that steers to pebbles well but has not learned the two safety rules gains most from `safety
+ throttle`; one that has learned neither gains nothing. Prints one Markdown row per variant: return,
normalised score and fraction of the scripted return on the same worlds (`hivex_jax.eval.score`: "n/a"
where scripted does not beat random, or where the scripted return is not positive), pebbles, and the shares
of vessels that crossed the border and collided (per-vessel means over worlds and seeds).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.run.eval_policies import policy_env, trained_policy
from baselines.run.evaluation import load_run
from hivex_jax.envs.ocean_plastic_collection import heuristics
from hivex_jax.eval import rollout, score

VARIANTS = ("as trained", "vessels", "safety", "throttle", "safety + throttle")


def lend(variant: str, policy: rollout.Policy, env_params: Any) -> rollout.Policy:
    """`policy(params, key, obs [A, ...], state) -> action` with the scripted skills of `variant` lent to
    it (other entries of the action, e.g. a recurrent policy's memory, pass through)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {VARIANTS}")

    def lent(params: Any, key: jax.Array, obs: dict, state: Any) -> dict:
        action = policy(params, key, obs, state)
        discrete = action["discrete"]
        if variant in ("vessels", "safety", "safety + throttle"):
            near_border, threat = heuristics.safety_rules(obs, env_params)
            take = threat if variant == "vessels" else near_border | threat
            scripted = heuristics.scripted_policy(obs, env_params)["discrete"]
            discrete = jnp.where(take[:, None], scripted, discrete)
        if "throttle" in variant:
            discrete = discrete.at[:, 0].set(1)
        return {**action, "discrete": discrete}

    return lent


def diagnose(run_dir: str, worlds: str) -> list[dict[str, Any]]:
    """One dict per (variant, greedy/stochastic): return, normalised score, fraction of scripted, pebbles,
    crossed, collided; then the scripted controller's and random's rows."""
    config, population, state = load_run(run_dir)
    train = population.train
    env, env_params = train.env, train.env_params
    key = config.eval_seed
    scripted = rollout.evaluate(env, env_params, rollout.scripted_policy(env, env_params), worlds, key=key)
    random = rollout.evaluate(env, env_params, rollout.random_policy(env), worlds, key=key)
    baselines = float(np.mean(scripted["return"])), float(np.mean(random["return"]))
    rows = []
    acting_env = policy_env(train)  # carries a recurrent actor's memory
    for variant in VARIANTS:
        for greedy in (True, False):
            policy = lend(variant, trained_policy(train, greedy), env_params)
            # every seed at once: totals [seeds, worlds, ...]
            out = rollout.evaluate(acting_env, env_params, policy, worlds, state.params, key, batched=True)
            rows.append(cell_row(variant, "greedy" if greedy else "stochastic", out, *baselines))
    for name, out in (("scripted controller", scripted), ("random", random)):
        rows.append(cell_row(name, "", out, *baselines))
    return rows


def cell_row(
    variant: str,
    policy: str,
    totals: dict[str, Any],
    scripted_return: float,
    random_return: float | None = None,
) -> dict[str, Any]:
    """Per-vessel means of one variant's totals (`[seeds,] worlds, vessels`), with its normalised score
    (None without random's return or where scripted does not beat random) and fraction of scripted (None
    unless the scripted return is positive), of the mean and per seed."""
    per_seed = np.mean(totals["return"].reshape(-1, *totals["return"].shape[-2:]), axis=(1, 2))
    stats = totals["stats"]

    def scores(returns: Any) -> np.ndarray:
        if random_return is None:
            return np.full(np.shape(returns), np.nan)
        return score.normalised_score(returns, scripted_return, random_return)

    return {
        "variant": variant,
        "policy": policy,
        "return": float(np.mean(per_seed)),
        "normalised": score.as_json(scores(np.mean(per_seed))),
        "per_seed_normalised": [score.as_json(v) for v in scores(per_seed)] if policy else [],
        "fraction": score.as_json(score.fraction_of_scripted(np.mean(per_seed), scripted_return)),
        "per_seed_fraction": [score.as_json(v) for v in score.fraction_of_scripted(per_seed, scripted_return)]
        if policy
        else [],
        "pebbles": float(np.mean(stats["pebbles_collected"])),
        "crossed": float(np.mean(stats["border_crossings"])),
        "collided": float(np.mean(stats["vessel_collisions"])),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| lent | policy | return | normalised score (per seed) | fraction of scripted (per seed) | pebbles "
        "| crossed | collided |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def with_seeds(value: float | None, per_seed: list[float | None]) -> str:
        seeds = ", ".join(score.format_score(v, 2) for v in per_seed)
        return score.format_score(value, 2) + (f" ({seeds})" if seeds and value is not None else "")

    for r in rows:
        normalised = with_seeds(r.get("normalised"), r.get("per_seed_normalised", []))
        fraction = with_seeds(r["fraction"], r["per_seed_fraction"])
        lines.append(
            f"| {r['variant']} | {r['policy']} | {r['return']:.1f} | {normalised} | {fraction} "
            f"| {r['pebbles']:.1f} | {r['crossed']:.2f} | {r['collided']:.2f} |"
        )
    return "\n".join(lines)
