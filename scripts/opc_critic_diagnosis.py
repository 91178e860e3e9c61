"""Does a trained Ocean Plastic Collection critic see a coming collision?

    PJRT_NPROC=1 python scripts/opc_critic_diagnosis.py RUN_DIR [--rollouts 40] [--seed 0]

Prints the critic's value on the 12 decisions before each -100 event (collision / border crossing) and
its mean value against the mean GAE target by distance to the nearest vessel: `baselines.studies.opc_critic`.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)

from baselines.studies.opc_critic import diagnose, table


def main() -> None:
    """Print the critic diagnosis of one run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--rollouts", type=int, default=40, help="rollouts of one seed (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="which training seed (default 0)")
    args = parser.parse_args()
    if args.rollouts < 1:
        parser.error("--rollouts must be >= 1")
    try:
        result = diagnose(args.run_dir, args.rollouts, args.seed)
    except ValueError as err:
        parser.error(str(err))
    print(table(result))


if __name__ == "__main__":
    main()
