"""Farm power of greedy yaw, an optimised static yaw and trained IPPO/MAPPO runs on the SAME held-out
wind conditions (Wind Farm Control with wakes; docs/envs/wind_farm_control.md, "Wakes").

Usage: PJRT_NPROC=1 python scripts/wfc_wakes_policy_eval.py RUN_DIR [RUN_DIR ...]
           [--conditions 64] [--opt-seeds 10] [--opt-steps 300] [--episode-steps 200] [--measure-steps 100]

The layout, wake model and wake constants come from the first run's config (all runs must share them).
Held-out conditions: `--conditions` draws of (direction within +-`--spread` deg of the wind blowing along
+x, speed 6-10 m/s, TI 0.05-0.10) from key `--held-out-key`, as in scripts/wfc_wake_steering.py; every
controller meets the same ones.
- greedy: every rotor faces the wind (yaw 0), steady farm power from the JAX wake model;
- optimised: per seed, one static yaw per turbine fitted by Adam through the wake model on 32 training
  conditions (wfc_wake_steering.optimise), steady farm power on the held-out conditions;
- scripted (in env): the env's scripted controller (turn towards the wind) stepped in the env, a check
  that the env's measured power matches the greedy row (it dithers within one rotation step);
- each run: the trained actor's greedy (mode) actions stepped in the env, one episode per condition from
  a random initial facing, farm power = mean of info["stats"]["power_mw"] summed over turbines over the
  last `--measure-steps` of `--episode-steps` steps (the first steps turn the rotors into the wind).
Prints a Markdown table: mean over seeds +- 95 % CI (t), the gain over greedy, each turbine's median yaw
offset (deg, CCW positive; over seeds and conditions, each the mean over the measured steps) and the share
of turbine-episodes left facing more than 90 deg off the wind (no power).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.wfc_wakes import evaluate, markdown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run folders written by `hivex train` (wakes on)")
    ap.add_argument("--conditions", type=int, default=64)
    ap.add_argument("--spread", type=float, default=5.0, help="wind direction within +-spread deg")
    ap.add_argument("--held-out-key", type=int, default=1000)
    ap.add_argument("--opt-seeds", type=int, default=10)
    ap.add_argument("--opt-steps", type=int, default=300)
    ap.add_argument("--episode-steps", type=int, default=200)
    ap.add_argument("--measure-steps", type=int, default=100)
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args()
    result = evaluate(
        args.runs,
        args.conditions,
        args.spread,
        args.held_out_key,
        args.opt_seeds,
        args.opt_steps,
        args.episode_steps,
        args.measure_steps,
    )
    print(json.dumps(result["setup"]))
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
