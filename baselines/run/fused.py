"""Fused sweeps: combinations of a sweep that differ only in data keys train as members of one
population, members x seeds on one vmapped axis, in one compiled program.

A member carries its data keys as arrays (`baselines.core.member.member_data`: the PPO scalars and its
`EnvParams`), vmapped with its rows of the state; everything else is one program. Each member still gets
its own run folder as `hivex train` writes it (config.yaml, metrics.csv, checkpoints, eval.json, plots),
its held-out evaluation runs the program its config alone would use (members in other env settings, e.g.
levels, share one with the env params as data: `get_setting_evaluation`), so `hivex evaluate`,
`transfer` and `--protocol hivex` read the folder unchanged.

What fuses, and into how many programs: `baselines.run.fused_plan`; the population:
`baselines.run.fused_population`.
A member that reaches its `stop_at_test_return` is frozen (evaluated and written as it stands) while the
others go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from baselines.config import PPOConfig
from baselines.config.values import ConfigError
from baselines.core.program_cache import cached
from baselines.run import checkpoint, memory
from baselines.run.distributed import broadcast_value, check_population_divides, fetch
from baselines.run.eval_worlds import distinct_worlds
from baselines.run.evaluation import HeldOutEvaluation, get_evaluation
from baselines.run.files import (
    MetricsCSV,
    machine_summary,
    metric_names,
    per_update_metrics,
    write_summary,
    write_text_atomic,
)
from baselines.run.fused_plan import settings_differ
from baselines.run.fused_population import FusedPopulation
from baselines.run.guards import NonFiniteError, first_nonfinite, stop_nonfinite
from baselines.run.loggers import Logger, NoLogger, check_logger, final_values, log_chunk, open_logger
from baselines.run.population import Population, get_population
from baselines.run.runner import (
    check_resume_processes,
    final_evaluation,
    record_test_returns,
    save_checkpoint,
)
from hivex_jax.core.errors import one_line


def members_that_fit(population: FusedPopulation) -> int:
    """How many of the population's members fit the device memory, by XLA's estimate of its compiled
    chunk (`baselines.run.memory`; the population keeps the program): all of them, or the share the estimate
    per member allows (at least 1: a single member too big is refused as `hivex train` refuses it)."""
    members = len(population.members)
    estimate = memory.compile_with_estimate(population)
    if estimate is None:
        return members
    try:
        memory.check_fits(population.config, estimate, population.devices)
        fit = members
    except ConfigError:
        if jax.process_count() == 1 and members == 1:
            raise
        local = [d for d in population.devices if d.process_index == jax.process_index()]
        have = memory.device_memory_bytes(local[0]) or 0
        fit = 0 if members == 1 else max(1, int(have // (estimate.peak_bytes / members)))
    # process 0's answer on every process: they must all train the same programs
    fit = int(broadcast_value(fit))
    if fit == 0:  # one member too big on process 0's devices: refused as `hivex train` refuses it
        memory.check_fits(population.config, estimate, population.devices)
        raise ConfigError("one member does not fit process 0's device (XLA's estimate of its chunk)")
    return fit


def resume_members(
    population: FusedPopulation,
    members: Sequence[Population],
    run_dirs: Sequence[Path],
    csvs: Sequence[MetricsCSV],
    log: Callable[..., Any],
) -> tuple[Any, int, float]:
    """`(population state, chunks done, wall seconds before)` from every member's newest intact
    checkpoint (stacked member-major, as `FusedPopulation.init`); each metrics.csv truncated to it. The
    members must stand at the same update: one line naming them otherwise."""
    main = jax.process_index() == 0
    states, done, walls = [], [], []
    for member, run_dir in zip(members, run_dirs, strict=True):
        state, meta = checkpoint.restore(
            run_dir,
            member.abstract_state(),
            check=lambda saved, d=run_dir: check_resume_processes(d, saved),
            log=log,
            set_aside_damaged=True,
        )
        states.append(fetch(state))  # gathered whole on every process (a collective with several)
        done.append(int(meta["chunks_done"]))
        walls.append(float(meta.get("wall_s", 0.0)))
    if len(set(done)) > 1:
        at = ", ".join(f"{d.name} at chunk {c}" for d, c in zip(run_dirs, done, strict=True))
        raise ConfigError(f"fused members resume together from the same update; they stand at {at}")
    config = members[0].config
    if main:  # process 0 writes the run folders
        for csv_file in csvs:
            csv_file.truncate(done[0] * config.chunk_updates)
    log(f"resuming {len(members)} members at update {done[0] * config.chunk_updates} of {config.num_updates}")
    state = population.place(jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *states))
    return state, done[0], max(walls)


def run_fused(
    configs: Sequence[PPOConfig],
    run_dirs: Sequence[Path],
    progress: bool = True,
    log: Callable[..., Any] = print,
    populations: Sequence[Population | None] | None = None,
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Train `configs` (one fusion key; see `fused_plan.plan_programs`) as one population; each member's
    run folder is written as `run_training` writes it. Returns per member its summary (with "eval"), or
    `{"diverged": message}` for a member that went non-finite (recorded as `run_training` records it;
    its rows compute on but are no longer recorded or checkpointed, while the others go on).
    `populations`: members' trainers built already (`fused_plan.plan_sweep`), None where not. `resume`:
    every member continues from its newest intact checkpoint, all at the same update (`hivex sweep`
    groups them so), its metrics.csv truncated to it."""
    from tqdm.auto import tqdm

    main = jax.process_index() == 0  # process 0 prints and writes the members' folders
    if not main:
        log, progress = _quiet, False
    for member_config in configs:  # a logger whose package is missing: one line before anything compiles
        check_logger(member_config)
    populations = populations or [None] * len(configs)
    members = [p if p is not None else get_population(c) for c, p in zip(configs, populations, strict=True)]
    # each member's own config: a cached population serves every config that computes the same (run keys
    # such as stop_at_test_return or eval_every may differ); fused_plan.plan_sweep may have turned its
    # pool off
    run_configs = [
        c.replace(pregenerate_worlds=p.config.pregenerate_worlds)
        for c, p in zip(configs, members, strict=True)
    ]
    population = FusedPopulation(members)
    config = population.config
    # with several processes the rows (member-major, so whole seed blocks) shard over every device as
    # `hivex train` shards its seeds, or else the envs: refused as it refuses, before anything compiles
    check_population_divides(config.num_seeds, config.num_envs, len(population.devices), jax.process_count())
    fit = members_that_fit(population)  # compiled from abstract shapes, before any state exists
    if fit < len(members):
        size = -(-len(members) // -(-len(members) // fit))  # the fewest programs, as even as can be
        log(
            f"{len(members)} members x {config.num_seeds} seeds do not fit the device (XLA's estimate); "
            f"training them as {-(-len(members) // size)} programs of at most {size}"
        )
        out = []
        for start in range(0, len(members), size):
            part = slice(start, start + size)
            out += run_fused(configs[part], run_dirs[part], progress, log, members[part], resume)
        return out
    compile_s = population.compile_s
    csvs, evaluations = [], []
    # members in other env settings (levels, tasks, env params) share one evaluation program with the
    # params as data, its scan as long as the longest episode of them; else each its run alone's
    shared_evaluation = settings_differ(configs)
    if shared_evaluation:
        longest = max(int(np.max(np.asarray(m.train.env_params.max_steps))) for m in members)
    for member, member_config, run_dir in zip(members, run_configs, run_dirs, strict=True):
        if main:
            run_dir.mkdir(parents=True, exist_ok=True)
        if main and not resume:
            (run_dir / "metrics.csv").unlink(missing_ok=True)
            write_text_atomic(run_dir / "config.yaml", member_config.to_yaml())
        csvs.append(MetricsCSV(run_dir / "metrics.csv", config.num_seeds, metric_names(member_config)))
        if shared_evaluation:
            evaluations.append(get_setting_evaluation(member, member_config.test_worlds, longest))
        else:
            evaluations.append(get_evaluation(member, member_config.test_worlds))
    state, start_chunk, wall_before = population.init(), 0, 0.0
    if resume:
        state, start_chunk, wall_before = resume_members(population, members, run_dirs, csvs, log)
    trackers: list[Logger] = []  # each member's experiment logger (its config's `logger`)
    for member_config, run_dir in zip(run_configs, run_dirs, strict=True):
        first_update = start_chunk * config.chunk_updates
        trackers.append(open_logger(member_config, run_dir, first_update, log) if main else NoLogger())
        trackers[-1].log_config(member_config.to_dict())
    log(
        f"{len(configs)} members x {config.num_seeds} seeds in one program "
        f"({population.rows} rows x {config.num_envs} envs); compiled in {compile_s:.1f} s"
    )
    diverged: dict[int, str] = {}
    # members that reached their stop_at_test_return: their state, update and target record at that point
    frozen: dict[int, tuple[Any, int, float, dict[str, Any]]] = {}
    final_tests: dict[int, Any] = {}  # the held-out totals of the state a member's final evaluation plays
    steps = config.chunk_updates * config.steps_per_update * config.num_seeds
    bar = tqdm(
        total=config.num_chunks * steps * len(members), disable=not progress, desc="fused", unit="step"
    )
    bar.update(start_chunk * steps * len(members))
    start = time.perf_counter() - wall_before
    for chunk in range(start_chunk, config.num_chunks):
        state, raw = population.chunk(state)
        wall = time.perf_counter() - start
        finished = chunk + 1 == config.num_chunks
        for m, member in enumerate(members):
            if m in diverged or m in frozen:  # its rows compute on; nothing more is recorded
                continue
            raw_m = population.member_slice(raw, m)
            nonfinite = first_nonfinite(raw_m, chunk * config.chunk_updates)
            metrics = per_update_metrics(raw_m)
            reached = None
            if nonfinite is not None:  # as a run alone: summary.json, a finite checkpoint, the message
                try:
                    stop_nonfinite(
                        run_dirs[m], run_configs[m], member, nonfinite, time.perf_counter() - start
                    )
                except NonFiniteError as exc:
                    diverged[m] = one_line(exc)
            else:
                every = run_configs[m].eval_every
                if (every and (chunk + 1) % every == 0) or finished:
                    test, tests = record_test_returns(
                        evaluations[m], population.member_state(state, m), metrics
                    )
                    target = run_configs[m].stop_at_test_return
                    if target is not None and test >= target:
                        update = (chunk + 1) * config.chunk_updates
                        reached = {
                            "update": update,
                            "test_return_greedy": test,
                            "env_steps_per_seed": update * config.steps_per_update,
                            "wall_s": wall,
                        }
                    if finished or reached is not None:  # the state its final evaluation plays
                        final_tests[m] = tests
            if main:
                csvs[m].append(chunk * config.chunk_updates, config.steps_per_update, wall, metrics)
                log_chunk(
                    trackers[m], chunk * config.chunk_updates, config.steps_per_update, metrics, csvs[m].names
                )
            if m in diverged:  # its last rows logged; nothing more is recorded
                trackers[m].close()
            every = run_configs[m].checkpoint_every
            stop = reached is not None
            if nonfinite is None and ((every and (chunk + 1) % every == 0) or finished or stop):
                save_checkpoint(
                    run_dirs[m], run_configs[m], population.member_state(state, m), chunk + 1, wall
                )
            if stop:  # frozen: evaluated and written as it stands now, while the others go on
                frozen[m] = (
                    population.member_state(state, m),  # its own arrays: later chunks do not touch them
                    reached["update"],
                    wall,
                    reached,
                )
        bar.update(steps * len(members))
        if len(diverged) + len(frozen) == len(members):
            break
    bar.close()
    train_s = time.perf_counter() - start
    out = []
    for m, member in enumerate(members):
        if m in diverged:
            out.append({"run_dir": str(run_dirs[m]), "diverged": diverged[m]})
            continue
        member_state, updates_done, member_train_s, reached = frozen.get(
            m, (population.member_state(state, m), config.num_updates, train_s, None)
        )
        summary: dict[str, Any] = {
            "run_dir": str(run_dirs[m]),
            "updates_done": updates_done,
            "finished": True,
            "compile_s": compile_s,
            "train_s": member_train_s,
            # the whole population's rate (every member's seeds), as one program ran them
            "env_steps_per_s": config.env_steps * population.rows / max(train_s, 1e-9),
            "fused_members": len(members),
            "num_seeds": config.num_seeds,
            "num_envs": config.num_envs,
            "devices": len(population.devices),
            "processes": jax.process_count(),
            **machine_summary(),
        }
        target = run_configs[m].stop_at_test_return
        if target is not None:
            summary["target"] = {
                "stop_at_test_return": target,
                "reached": reached is not None,
                **(reached or {}),
            }
        results = final_evaluation(
            run_dirs[m], run_configs[m], member, evaluations[m], member_state, final_tests.get(m)
        )
        trackers[m].log_final(final_values(results))
        trackers[m].close()
        if main:
            write_summary(run_dirs[m], summary)
        out.append({**summary, "eval": results})
    return out


def get_setting_evaluation(
    population: Population, worlds: Any, num_steps: int | None = None
) -> HeldOutEvaluation:
    """`get_evaluation` with the trained policy's env params as data (`HeldOutEvaluation(params_as_data=
    True)`): one compiled trained-policy evaluation serves every population of the same config but for
    the env setting (`task`, `level`, `env_params`, `train_env_params`, the update-only keys), as a fused
    sweep's members over levels are; the baselines play each setting's constant-params program, as
    `get_evaluation`'s do, or one shared program on the envs where that scores the same bit for bit
    (`BASELINES_EXACT_AS_DATA`). The trained totals equal `get_evaluation`'s up to float rounding where
    XLA folds constant params differently (on Drone-Based Reforestation that can change an episode).
    `num_steps` must cover every setting's episode (full episodes: the longest `max_steps` of them)."""
    world_list, dropped = distinct_worlds(population.train.env, worlds)
    key = ("setting evaluation", population.train.keys.setting_free, len(world_list), num_steps)
    evaluation = cached(key, lambda: HeldOutEvaluation(population.train, world_list, num_steps, True))
    evaluation = evaluation.in_setting(population.train).on(world_list)
    evaluation.distinct_episodes = dropped
    return evaluation


def _quiet(*args: Any, **kwargs: Any) -> None:
    """The log of processes other than 0: they print nothing."""
