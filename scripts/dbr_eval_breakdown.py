"""What a Drone-Based Reforestation run's policies do on the held-out worlds, from its eval.json.

Usage: python scripts/dbr_eval_breakdown.py RUN_DIR [RUN_DIR ...]
One row per policy (greedy, stochastic, scripted, random) and run: mean per-drone return (trained: ± 95 % CI
over seeds), the normalised score (R - R_random) / (R_scripted - R_random) and the fraction of the scripted
return (`hivex_jax.eval.score`; ± the return's CI over seeds scaled alike; "n/a" where scripted does not beat
random, or where the scripted return is not positive), and the episode sums per drone behind it: tree drops,
drop reward (`drop_seed` term) and per drop, mean distance to the existing forest at a drop (d_et; valid band
2.5-75 m), running-back reward, pick-ups, decisions spent recharging, out-of-energy endings and episode
length.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from hivex_jax.eval import score  # noqa: E402


def rows(run_dir: Path) -> list[str]:
    """Markdown table rows for one run folder's eval.json."""
    data = json.loads((run_dir / "eval.json").read_text())
    policies = data["policies"]
    scripted, random = policies["scripted"]["summary"]["mean"], policies["random"]["summary"]["mean"]
    out = []
    for name in ("greedy", "stochastic", "scripted", "random"):
        per_world = policies[name]["per_world"]
        summary = policies[name]["summary"]

        def mean(field: str, key: str, pw=per_world) -> float:
            return float(np.mean([np.mean(w[field][key]) for w in pw]))

        drops = mean("stats", "tree_drop_count")
        drop_reward = mean("reward_terms", "drop_seed")
        d_et = mean("stats", "cumulative_distance_to_existing_trees")
        length = float(np.mean([np.mean(w["length"]) for w in per_world]))
        trained = name in ("greedy", "stochastic")
        ret = f"{summary['mean']:.1f}" + (f" ± {summary['ci95']:.1f}" if trained else "")
        # the score is linear in the return: the return's CI maps to the score's by the same function
        normalised = score.normalised_score(summary["mean"], scripted, random)
        half = score.normalised_score(summary["mean"] + summary["ci95"], scripted, random) - normalised
        norm = score.format_score(normalised, 2) + (f" ± {half:.2f}" if trained and np.isfinite(half) else "")
        fraction = score.fraction_of_scripted(summary["mean"], scripted)
        frac = score.format_score(fraction, 2) + (
            f" ± {summary['ci95'] / scripted:.2f}" if trained and np.isfinite(fraction) else ""
        )
        out.append(
            f"| {run_dir.name} | {name} | {ret} | {norm} | {frac} | {drops:.1f} | {drop_reward:.1f} | "
            f"{drop_reward / max(drops, 1e-9):.1f} | {d_et / max(drops, 1e-9):.0f} | "
            f"{mean('reward_terms', 'incremental_running_back'):.1f} | "
            f"{mean('stats', 'seed_pick_up_count'):.1f} | {mean('stats', 'recharge_energy_count'):.1f} | "
            f"{mean('stats', 'out_of_energy_count'):.2f} | {length:.0f} |"
        )
    return out


def main() -> None:
    print(
        "| run | policy | return | normalised score | fraction of scripted | drops | drop reward | per drop "
        "| d_et at drop (m) | running back | pick-ups | recharge decisions | out of energy | length |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        print("\n".join(rows(Path(arg))))


if __name__ == "__main__":
    main()
