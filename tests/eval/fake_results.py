"""Small hand-made eval JSON dicts (the shape `hivex train` / `hivex evaluate` write), for tests that
must not train."""

from __future__ import annotations

from typing import Any

import numpy as np


def fake_results(
    trained: dict[str, Any],
    scripted: Any = None,
    random: Any = None,
    worlds: list[int] | None = None,
    algo: str = "ippo",
    task: int = 0,
    level: int = 0,
    env_steps: int = 1000,
) -> dict[str, Any]:
    """An eval JSON dict: `trained` maps policy -> returns `[seeds, worlds]`; scripted/random `[worlds]`.
    Episode lengths are 10 + the world's index (seed-independent), so a test can tell worlds apart."""
    trained = {k: np.asarray(v, np.float64) for k, v in trained.items()}
    seeds, num_worlds = next(iter(trained.values())).shape
    worlds = list(range(6000, 6000 + num_worlds)) if worlds is None else worlds
    policies: dict[str, Any] = {}
    for name, m in trained.items():
        policies[name] = {
            "summary": {},
            "per_world": [
                {
                    "world": worlds[i],
                    "return_mean": float(m[:, i].mean()),
                    "return_per_seed": m[:, i].tolist(),
                    "length": [10 + i] * seeds,
                }
                for i in range(num_worlds)
            ],
        }
    for name, values in (("scripted", scripted), ("random", random)):
        if values is not None:
            policies[name] = {
                "summary": {},
                "per_world": [
                    {"world": worlds[i], "return_mean": float(values[i]), "length": 10 + i}
                    for i in range(num_worlds)
                ],
            }
    return {
        "worlds": worlds,
        "policies": policies,
        "algo": algo,
        "env_id": "WindFarmControl-v0",
        "task": task,
        "level": level,
        "num_seeds": seeds,
        "env_steps_per_seed": env_steps,
    }
