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


#: the run folders `fake_hivex_folder` writes: (env id, folder name) -> (held-out, HIVEX protocol)
FAKE_HIVEX_CELLS = {
    ("WindFarmControl-v0", "task0_level0"): (True, True),
    ("WindFarmControl-v0", "task0_level1"): (True, True),
    ("WindFarmControl-v0", "task1_level4"): (False, True),
    ("WildfireResourceManagement-v0", "task0_level1"): (True, False),
    ("DroneBasedReforestation-v0", "task0_level1"): (True, True),
    ("OceanPlasticCollection-v0", "task0"): (True, True),
}
#: the dates (local noon) `fake_hivex_folder` gives its summary.json and eval_hivex.json files
FAKE_HELD_OUT_DATE, FAKE_HIVEX_DATE = "2026-11-30", "2026-12-01"


def _summary(seed_means: np.ndarray, num_worlds: int) -> dict[str, Any]:
    from hivex_jax.eval.stats import mean_ci95

    mean, ci = mean_ci95(seed_means)
    return {
        "mean": float(mean),
        "ci95": float(ci),
        "iqm": float(mean),
        "num_seeds": int(len(seed_means)),
        "num_worlds": num_worlds,
        "seed_min": float(seed_means.min()),
        "seed_max": float(seed_means.max()),
    }


def fake_held_out(
    env_id: str, task: int, level: int | None, rng: np.random.Generator, seeds: int = 3, worlds: int = 4
) -> dict[str, Any]:
    """An `eval.json` of a HIVEX results cell as `hivex train` writes it: greedy and stochastic returns of
    `seeds` x `worlds` with full float precision, scripted and random per world, every policy's summary,
    and per world and seed every `info["stats"]` key the env's statistics tables map plus one they do not
    (`unmapped_stat`)."""
    from hivex_jax.eval.hivex_cells import HIVEX_ENVS

    greedy = rng.normal(100.0, 10.0, (seeds, worlds))
    stochastic = rng.normal(95.0, 10.0, (seeds, worlds))
    scripted, random = rng.normal(110.0, 5.0, worlds), rng.normal(20.0, 5.0, worlds)
    results = fake_results(
        {"greedy": greedy, "stochastic": stochastic}, scripted, random, task=task, level=level, env_steps=4096
    )
    results.update(env_id=env_id, eval_seed=12345, episode_steps=None)
    for name, values in (("greedy", greedy), ("stochastic", stochastic)):
        results["policies"][name]["summary"] = _summary(values.mean(axis=1), worlds)
    for name, values in (("scripted", scripted), ("random", random)):
        results["policies"][name]["summary"] = _summary(np.array([values.mean()]), worlds)
    keys = [k for k in HIVEX_ENVS[env_id].stat_map.values() if k and k != "episode_length"]
    for entry in results["policies"]["stochastic"]["per_world"]:
        entry["stats"] = {k: rng.normal(50.0, 20.0, seeds).tolist() for k in [*keys, "unmapped_stat"]}
    return results


def fake_hivex(
    env_id: str, rng: np.random.Generator, seeds: int = 3, scale: float = 1.0, points: int = 200
) -> dict[str, Any]:
    """An `eval_hivex.json` as `scripts/hivex_results.py run` writes it: the stochastic policy one run per
    seed, scripted and random one run each, every run with `points` per-summary-point values."""
    from hivex_jax.eval.hivex_cells import HIVEX_ENVS

    budget = HIVEX_ENVS[env_id].test_run
    test_run = {
        "agent_steps": int(budget.agent_steps * scale),
        "summary_freq": budget.summary_freq,
        "runs": seeds,
        "test_seed": 6000,
    }

    def policy(runs: int, centre: float) -> dict[str, Any]:
        means = rng.normal(centre, 5.0, runs)
        return {
            "protocol": "hivex",
            "cell": float(means.mean()),
            "episode_length": 4999.0,
            "world_episode_length": 4999.0,
            "agent_episode_length": float(rng.uniform(100.0, 4999.0)),
            "test_run": {**test_run, "runs": runs},
            "runs": [
                {
                    "mean": float(m),
                    "episodes": points,
                    "agent_steps": test_run["agent_steps"],
                    "summary_points": rng.normal(m, 1.0, points).tolist(),
                    "episode_length_points": [4999.0] * points,
                }
                for m in means
            ],
        }

    return {
        "protocol": "hivex",
        "protocol_description": "HIVEX (reference §1.4): the mean of per-window mean agent returns",
        "env_id": env_id,
        "test_run": test_run,
        "agent_steps_scale": scale,
        "hivex_agent_steps": budget.agent_steps,
        "agent_steps_clamped_to_one_window": False,
        "num_seeds": seeds,
        "wall_s": float(rng.uniform(10.0, 100.0)),
        "policies": {
            "stochastic": policy(seeds, 90.0),
            "scripted": policy(1, 105.0),
            "random": policy(1, 15.0),
        },
    }


def _set_date(path: Any, date: str) -> None:
    import datetime
    import os

    stamp = datetime.datetime.fromisoformat(f"{date}T12:00:00").timestamp()  # local noon
    os.utime(path, (stamp, stamp))


def fake_hivex_folder(root: Any, seed: int = 0) -> Any:
    """A results folder (`OUT_DIR` of `scripts/hivex_results.py run`) holding the cells of
    `FAKE_HIVEX_CELLS`: WFC task 0 patterns 0 (HIVEX protocol at a 0.01 budget) and 1 complete, WFC task 1
    pattern 4 HIVEX protocol only, WRM task 0 level 1 held-out only, DBR task 0 level 1 complete at the
    real size (3 seeds x 32 worlds, every statistic), OPC task 0 complete; `summary.json` beside each
    `eval.json`, dated `FAKE_HELD_OUT_DATE` (`eval_hivex.json`: `FAKE_HIVEX_DATE`); a folder with a config
    but no results and a folder that is no cell. Returns `root`."""
    import json
    from pathlib import Path

    from hivex_jax.eval.hivex_cells import cell_of_dirname

    rng = np.random.default_rng(seed)
    for (env_id, name), (held, hivex) in FAKE_HIVEX_CELLS.items():
        cell = cell_of_dirname(env_id, name)
        run_dir = Path(root) / env_id / name
        run_dir.mkdir(parents=True)
        dbr = env_id == "DroneBasedReforestation-v0"
        if held:
            results = fake_held_out(env_id, cell.task, cell.level, rng, worlds=32 if dbr else 4)
            (run_dir / "eval.json").write_text(json.dumps(results, indent=1))
            summary = {
                "run_dir": str(run_dir),
                "finished": True,
                "compile_s": float(rng.uniform(1, 10)),
                "train_s": float(rng.uniform(10, 100)),
                "eval_s": float(rng.uniform(1, 5)),
                "num_seeds": 3,
                "backend": "cpu",
                "jax_version": "0.10.2",
            }
            (run_dir / "summary.json").write_text(json.dumps(summary))
            _set_date(run_dir / "summary.json", FAKE_HELD_OUT_DATE)
        if hivex:
            scale = 0.01 if name == "task0_level0" and env_id == "WindFarmControl-v0" else 1.0
            (run_dir / "eval_hivex.json").write_text(
                json.dumps(fake_hivex(env_id, rng, scale=scale), indent=1)
            )
            _set_date(run_dir / "eval_hivex.json", FAKE_HIVEX_DATE)
    (Path(root) / "WindFarmControl-v0" / "task0_level2").mkdir()
    (Path(root) / "WindFarmControl-v0" / "task0_level2" / "config.yaml").write_text("algo: ippo\n")
    (Path(root) / "WindFarmControl-v0" / "notes").mkdir()
    return root


def fake_level_results(
    env_id: str,
    protocol: dict[tuple[int, int], list[float]],
    greedy: dict[tuple[int, int], list[float]] | None = None,
) -> dict[Any, dict[str, Any]]:
    """Results of level cells as `hivex_records.load_results` reads them, made by hand: per (task, level)
    in `protocol` an `eval_hivex.json` whose stochastic run i (= training seed i) has the given mean (the
    cell: their mean), per (task, level) in `greedy` an `eval.json` whose greedy (and stochastic) summary
    is the mean and Student-t 95% CI of the given per-seed means."""
    from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell
    from hivex_jax.eval.stats import mean_ci95

    budget = HIVEX_ENVS[env_id].test_run
    results: dict[Any, dict[str, Any]] = {}
    for (task, level), runs in protocol.items():
        stochastic = {"cell": float(np.mean(runs)), "runs": [{"mean": float(m)} for m in runs]}
        test_run = {"agent_steps": budget.agent_steps, "summary_freq": budget.summary_freq, "runs": len(runs)}
        hivex = {"test_run": test_run, "agent_steps_scale": 1.0, "policies": {"stochastic": stochastic}}
        results.setdefault(Cell(env_id, task, level), {"held_out": None, "hivex": None})["hivex"] = hivex
    for (task, level), seeds in (greedy or {}).items():
        values = np.asarray(seeds, np.float64)
        mean, ci = mean_ci95(values)
        summary = {
            "mean": float(mean),
            "ci95": float(ci),
            "num_seeds": len(seeds),
            "seed_min": float(values.min()),
            "seed_max": float(values.max()),
        }
        held = {
            "worlds": [6000, 6001],
            "num_seeds": len(seeds),
            "policies": {
                "greedy": {"summary": summary},
                "stochastic": {"summary": summary, "per_world": []},  # (the page's table needs one)
            },
        }
        results.setdefault(Cell(env_id, task, level), {"held_out": None, "hivex": None})["held_out"] = held
    return results
