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
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("PJRT_NPROC", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import hivex_jax  # noqa: E402

STEPS = 24
WORLDS = (6000, 6001)
GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "envs" / "golden_rollouts.json"


def variants(env: Any, params: Any) -> list[tuple[int, int | None]]:
    """(task, level) pairs: every task at the default level, the last task at the highest level."""
    pairs: list[tuple[int, int | None]] = [(t, None) for t in env.task_ids]
    if env.level_field is not None:
        pairs.append((env.task_ids[-1], max(env.level_values)))
    return pairs


def fingerprint(env_id: str) -> dict[str, Any]:
    """`{"variants": [[task, level], ...], "reward": [V, W, T], "obs_mean": [V, W, T], "terminated": ...}`."""
    env, params = hivex_jax.make(env_id)
    pairs = variants(env, params)
    batch = hivex_jax.stack_params([env.variant_params(params, task=t, level=lv) for t, lv in pairs])
    space = env.action_space(params)

    def one(p: Any, world: jax.Array) -> dict[str, jax.Array]:
        obs, state = env.reset(hivex_jax.world_key(world), p)
        key = jax.random.fold_in(jax.random.PRNGKey(7), world)

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            obs, state, reward, terminated, _, _ = env.step(k_step, state, space.sample(k_act), p)
            return state, (reward.sum(), obs["vector"].mean(), terminated.sum())

        _, (reward, obs_mean, terminated) = jax.lax.scan(body, state, jax.random.split(key, STEPS))
        return {"reward": reward, "obs_mean": obs_mean, "terminated": terminated}

    worlds = jnp.asarray(WORLDS, jnp.uint32)
    out = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))(batch, worlds)
    record = {k: np.asarray(v).tolist() for k, v in out.items()}
    record["variants"] = [[t, lv] for t, lv in pairs]
    return record


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
