"""A run's helper process (`baselines.run.helpers`, the side in this process): `serve` builds the run's
population and evaluation from its config and trains, plays and stops as the run asks."""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.run.distributed import fetch
from hivex_jax.core.errors import one_line
from hivex_jax.core.registry import EnvSpec, register, registered_envs, spec


def registered_spec(env_id: str) -> EnvSpec | None:
    """The registry entry of an env registered in this process, for a helper that would not know it (a
    test's or a user's env registered at run time), where it pickles (a lambda factory does not)."""
    if env_id not in registered_envs():
        return None
    found = spec(env_id)
    try:
        pickle.dumps(found)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return found


def serve(
    config_values: dict,
    worlds: list[int],
    baselines: bool,
    seeds: int,
    cache_dir: Any,
    env: Any,
    connection: Any,
) -> None:
    """A helper: build the run's population (compiling its `seeds` rows' chunk) and evaluation, say
    "ready", then serve "train" / "play" / "baselines" until "stop" or the run's end. With `baselines` it
    plays the baselines unasked once idle: at once if it trains nothing, else after its first part."""
    null = os.open(os.devnull, os.O_WRONLY)  # jax's start-up warnings would break the run's progress bar
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        if cache_dir:
            jax.config.update("jax_compilation_cache_dir", cache_dir)
        if env is not None and env.id not in registered_envs():  # the run's entry (`registered_spec`)
            register(env.id, env.entry_point, env.description, **env.kwargs)
        from baselines.config import from_dict
        from baselines.run.evaluation import HeldOutEvaluation
        from baselines.run.population import get_population

        config = from_dict(config_values)
        population = get_population(config)
        evaluation = HeldOutEvaluation(population.train, worlds)
        # its part of the chunk, compiled while the run compiles its own (whose memory check covers the
        # larger part: the first)
        program = population.compile_part(population.part_state(seeds)) if seeds else None
        connection.send(("ready", None))
        baselines_owed = baselines

        def play_baselines() -> None:
            names = jnp.arange(len(evaluation.baseline_names))
            connection.send(("baselines", jax.tree.map(np.asarray, evaluation.baselines(names, worlds))))

        if baselines_owed and program is None:
            play_baselines()
            baselines_owed = False
        while True:
            kind, payload = connection.recv()
            if kind == "stop":
                break
            if kind == "train":
                state, metrics = program(jax.device_put(payload))
                connection.send(("trained", (jax.device_get(state), fetch(metrics))))
            elif kind == "play":
                connection.send(("totals", jax.tree.map(np.asarray, evaluation.play_trained(payload))))
            if baselines_owed and kind in ("train", "baselines"):
                play_baselines()
                baselines_owed = False
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the run has ended
    except Exception as error:  # noqa: BLE001 (every failure is reported to the run, which carries on)
        try:
            connection.send(("error", one_line(error)))
        except (OSError, ValueError):
            pass
    finally:
        sys.exit(0)
