"""Scripted allocation vs the random policy on held-out worlds, for every terrain level.

Usage: PJRT_NPROC=1 python scripts/heuristic_wildfire_resource_management.py [--worlds 32] [--task 0]
Prints a markdown table over worlds 6000..6000+N-1: mean per-tower episode return +- 95% CI of both
policies, the heuristic's reward split (self / neighbourhood / collective), Individual Performance,
Individual Resource Count and the episode length (decisions until the fire is out, cap 500). Built on
`hivex_jax.eval.rollout.evaluate_params`: the ten levels run as one stack of `EnvParams` (one compile per
policy), with the evaluation module's keys (`seeding.rollout_key` / `rollout_step_keys`, evaluation key
0). Figures measured before 2026-11-30 used a per-script key schedule, so the random columns differ
within noise.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import numpy as np

import hivex_jax
from hivex_jax.envs.wildfire_resource_management.params import TASK_NAMES
from hivex_jax.eval.rollout import evaluate_params, random_policy, scripted_policy
from hivex_jax.eval.stats import mean_ci95

LEVELS = tuple(range(1, 11))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=32)
    parser.add_argument("--task", type=int, default=0)
    args = parser.parse_args()

    env, base = hivex_jax.make("WildfireResourceManagement-v0", task=args.task)
    worlds = range(6000, 6000 + args.worlds)
    stack = hivex_jax.stack_params([env.variant_params(base, level=lv) for lv in LEVELS])
    # totals [levels, worlds, towers, ...]
    heuristic = evaluate_params(env, stack, lambda p: scripted_policy(env, p), worlds)
    rand = evaluate_params(env, stack, lambda _: random_policy(env), worlds)

    print(
        f"Task {args.task} ({TASK_NAMES[args.task]}), worlds 6000..{6000 + args.worlds - 1}: "
        "mean per-tower episode return +- 95% CI over worlds\n"
    )
    print(
        "| terrain level | heuristic | random | heuristic - random (paired) "
        "| heuristic self / neighbourhood / collective "
        "| Individual Performance | Individual Resource Count (heur. / rand.) | episode length |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, lv in enumerate(LEVELS):
        h = heuristic["return"][i].mean(-1)
        r = rand["return"][i].mean(-1)
        (hm, hc), (rm, rc), (dm, dc) = mean_ci95(h), mean_ci95(r), mean_ci95(h - r)
        terms = heuristic["reward_terms"][i].mean((0, 1))
        perf = heuristic["stats"]["individual_performance"][i].mean()
        count_h = heuristic["stats"]["individual_resource_count"][i].mean()
        count_r = rand["stats"]["individual_resource_count"][i].mean()
        length = heuristic["length"][i]
        print(
            f"| {lv} | {hm:.1f} +- {hc:.1f} | {rm:.1f} +- {rc:.1f} | {dm:+.1f} +- {dc:.1f} | "
            f"{terms[0]:.1f} / {terms[1]:.1f} / {terms[2]:.1f} | {perf:.1f} | "
            f"{count_h:.2f} / {count_r:.2f} | "
            f"{length.mean():.0f} (min {length.min():.0f}, max {length.max():.0f}) |"
        )
    all_h = heuristic["return"].mean(-1)  # [levels, worlds]
    slope = np.polyfit(np.repeat(LEVELS, args.worlds), all_h.reshape(-1), 1)[0]
    print(f"\nheuristic return vs terrain level: least-squares slope {slope:+.2f} per level")


if __name__ == "__main__":
    main()
