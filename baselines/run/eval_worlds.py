"""Which worlds an evaluation plays (`baselines.run.evaluation`): the env options that give stress worlds
and worlds from files, with what the results record of them, and a world list with each distinct episode
once."""

from __future__ import annotations

import dataclasses
from typing import Any

from baselines.config import PPOConfig, make_env
from baselines.run.eval_policies import PolicyMemoryEnv
from hivex_jax.eval import rollout


def world_setting(
    config: PPOConfig, worlds: Any, world_files: str | None = None
) -> tuple[PPOConfig, Any, dict[str, Any]]:
    """`(evaluated config, world seeds, record)` for `worlds` ("stress": the env's stress worlds over
    `STRESS_SEEDS`, else seeds) and `world_files` (paths / globs): the env options that give those worlds
    (the `env_options.stress_worlds` / `.world_files` route of `hivex_jax.make`) and what the JSON records
    (file paths; stress names and seeds). A glob matching no file, an env without stress worlds: UserError."""
    options, record = dict(config.env_options), {}
    if world_files:
        from hivex_jax.worlds.wrapper import expand_world_paths

        options["world_files"] = world_files
        record["world_files"] = expand_world_paths(world_files)
    if worlds == "stress":
        from hivex_jax.worlds.stress import STRESS_SEEDS

        options.setdefault("stress_worlds", "all")  # keep names given as env_options.stress_worlds
        first, last = (int(s) for s in STRESS_SEEDS.split("-"))  # "9000-9031", both ends included
        worlds = f"{first}:{last + 1}"
    evaluated = config if options == config.env_options else dataclasses.replace(config, env_options=options)
    if "stress_worlds" in options:
        from hivex_jax.worlds.stress import StressWorlds

        env = make_env(evaluated)[0]  # checks the names (an env without stress worlds: UserError)
        while not isinstance(env, StressWorlds):
            env = env.env
        record["stress_worlds"] = {"names": list(env.names), "seeds": worlds}
    return evaluated, worlds, record


def distinct_worlds(env: Any, worlds: Any) -> tuple[tuple[int, ...], dict[str, Any] | None]:
    """`(world seeds, record)`: `worlds` with each distinct episode once. On a file world of an env whose
    episode there depends only on the world and the actions (WRM: `FILE_WORLD_SEED_FREE`), every seed
    that plays it repeats the first one's episode for a deterministic policy (greedy, scripted) and
    only resamples actions on the same world for a stochastic one (stochastic, random); the evaluation
    plays one episode per world for every policy, as on generated worlds, so those seeds are dropped
    and `record` says which and why (None: none dropped). Other envs' seeds change the episode
    (`SEED_ON_FILE_WORLD`) and are all kept."""
    from hivex_jax.worlds.wrapper import distinct_episode_seeds

    seeds, record = distinct_episode_seeds(env, rollout.seed_range(worlds), passes_key=(PolicyMemoryEnv,))
    return tuple(seeds.tolist()), record
