"""Record or compare short fixed-key rollouts of every registered environment (a behaviour fingerprint).

`python scripts/golden_rollouts.py --write` records `tests/envs/golden_rollouts.json`; the test
`tests/envs/test_golden_rollouts.py` replays the same rollouts and compares. A refactor that must not change
behaviour keeps the test green; a deliberate behaviour change re-records the file in the same commit
(say why in its message).

Per env: every task at the default level and the last task at the highest level, worlds 6000 and 6001,
`STEPS` decisions of uniform random actions from a fixed key (no auto-reset), one compiled program over
all (task, world) pairs. Recorded per pair and step: the sum of rewards over agents, the mean of
`obs["vector"]`, the number of terminated agents.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hivex_jax.cli_support import prepare_jax

prepare_jax()  # PJRT_NPROC before jax starts a backend

from hivex_jax.eval.golden import fingerprint  # noqa: E402

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "envs" / "golden_rollouts.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help=f"record {GOLDEN}")
    p.add_argument("--env", action="append", default=None, help="only these env ids (default: all)")
    args = p.parse_args()
    from hivex_jax.envs import BUNDLED_ENV_IDS

    env_ids = args.env or list(BUNDLED_ENV_IDS)
    records = {env_id: fingerprint(env_id) for env_id in env_ids}
    if args.write:
        old = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        old.update(records)
        GOLDEN.write_text(json.dumps(old, indent=0, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN} ({', '.join(records)})")
    else:
        print(json.dumps({k: {"variants": v["variants"]} for k, v in records.items()}))


if __name__ == "__main__":
    main()
