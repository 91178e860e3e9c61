"""The host loop of a run, `run_training`: start or resume, compile, then compiled chunks of updates
with, between chunks, the finite check, held-out evaluation, metrics.csv, the progress bar and
checkpoints; at the end the final evaluation and the run's files.

Its pieces: `baselines.run.population` (seeds x envs on the devices), `baselines.run.evaluation` (held-out
worlds), `baselines.run.files` (what lands in `runs/<name>/`), `baselines.run.loggers` (TensorBoard or W&B
beside metrics.csv), `baselines.run.guards` (resume checks, divergence), `baselines.run.distributed`
(several processes).

With several processes (`jax.distributed`) every process runs this same loop on its shards and takes
the same branches (metrics and parameters are gathered, the held-out return broadcast from process 0);
process 0 alone prints and writes the run folder, while every process writes its part of the orbax
checkpoints.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from baselines.config import PPOConfig
from baselines.core.ppo import RunnerState
from baselines.run import checkpoint
from baselines.run.distributed import broadcast_text, broadcast_value, fetch, is_main
from baselines.run.evaluation import HeldOutEvaluation, get_evaluation
from baselines.run.files import (
    MetricsCSV,
    default_run_name,
    format_results,
    machine_summary,
    metric_names,
    per_update_metrics,
    provenance,
    write_episode_gif,
    write_eval_files,
    write_summary,
    write_text_atomic,
)
from baselines.run.guards import check_resume_config, first_nonfinite, stop_nonfinite
from baselines.run.helpers import with_helpers
from baselines.run.loggers import NoLogger, check_logger, final_values, log_chunk, open_logger
from baselines.run.memory import compile_checked
from baselines.run.population import Population, get_population


def run_training(
    config: PPOConfig,
    run_dir: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    max_chunks: int | None = None,
    outputs: bool = True,
    log: Any = print,
) -> dict[str, Any]:
    """Train (or continue) a run in `run_dir`; returns a summary (and writes the run's files).

    `max_chunks` stops after that many chunks in this call (with a checkpoint), e.g. to split a run
    over preemptible jobs; `outputs=False` skips the final evaluation, plot and GIF.

    Resuming restores the latest *complete* checkpoint (orbax commits one by renaming its temporary
    folder, so a kill mid-write leaves the previous one) and truncates `metrics.csv` to it; with none
    (killed before the first), the run starts over. A config change that reshapes the state raises
    `ResumeError`. If a chunk ends with a non-finite loss, gradient norm or parameter in any seed, the
    run stops without evaluating or checkpointing that state and raises `NonFiniteError`; the last
    checkpoint stays the latest (the initial state is saved as checkpoint 0 if there was none).
    """
    from tqdm.auto import tqdm

    main = is_main()  # process 0 prints and writes the run's files (always true with one process)
    if not main:
        log = _quiet
        progress = False
    check_logger(config)  # a logger whose package is missing: one line before anything is built
    # 1. the run folder, the population, its state (fresh or resumed) and the compiled chunk
    setup_start = time.perf_counter()  # time to target counts world pools, init and compilation too
    run_dir = (
        Path(run_dir)
        if run_dir is not None  # process 0's clock names the run for every process
        else Path(config.out_dir) / (config.name or broadcast_text(default_run_name(config)))
    )
    population = get_population(config)
    evaluation, trainer = with_helpers(
        get_evaluation(population, config.test_worlds), population, config, log
    )
    # compiled from abstract shapes before the state exists: XLA's memory estimate refuses a run that
    # cannot fit (baselines.run.memory), and the program it compiled is the one that trains
    compile_s = compile_checked(config, trainer) if trainer.compiled is None else 0.0
    csv_file = MetricsCSV(run_dir / "metrics.csv", config.num_seeds, metric_names(config))
    steps_per_update = config.steps_per_update
    state, chunks_done, wall_before = start_or_resume(run_dir, config, population, csv_file, resume, log)
    if main:
        write_text_atomic(run_dir / "config.yaml", config.to_yaml())
    tracker = open_logger(config, run_dir, chunks_done * config.chunk_updates, log) if main else NoLogger()
    tracker.log_config(config.to_dict())
    log(describe_run(config, population, compile_s))
    for note in [config.rounding_note(), *config.recipe_notes()]:
        if note:
            log(note)
    hint = scale_hint(config, jax.default_backend())
    if hint:
        log(hint)

    # 2. chunks of updates; between them: finite check, evaluation, CSV, progress, checkpoint
    bar = tqdm(
        total=config.env_steps * config.num_seeds,
        initial=chunks_done * config.chunk_updates * steps_per_update * config.num_seeds,
        unit="step",
        unit_scale=True,
        dynamic_ncols=True,
        disable=not progress,
        desc="train",
    )
    start = time.perf_counter()
    last_return, last_test = float("nan"), float("nan")
    chunks_run, test_eval_s = 0, 0.0  # test_eval_s: the held-out evaluations' share of the loop
    target = config.stop_at_test_return
    reached: dict[str, Any] | None = None
    nonfinite: dict[str, Any] | None = None
    final_tests = None  # the held-out totals of the state the loop ended with, if it evaluated it
    for chunk in range(chunks_done, config.num_chunks):
        final_tests = None
        state, raw = trainer.chunk(state)
        nonfinite = first_nonfinite(raw, chunk * config.chunk_updates)  # flags computed in the chunk
        metrics = per_update_metrics(raw)
        finished = chunk + 1 == config.num_chunks
        if nonfinite is None and ((config.eval_every and (chunk + 1) % config.eval_every == 0) or finished):
            tested = time.perf_counter()
            last_test, final_tests = record_test_returns(evaluation, state, metrics)
            test_eval_s += time.perf_counter() - tested
            if target is not None and last_test >= target and reached is None:
                reached = {"update": (chunk + 1) * config.chunk_updates, "test_return_greedy": last_test}
        ended = raw["episodes"].sum(axis=1)
        if ended.sum() > 0:
            last_return = float(raw["episode_return_sum"].sum() / ended.sum())
        wall = wall_before + time.perf_counter() - start
        if reached is not None and "wall_s" not in reached:
            since_setup = wall_before + time.perf_counter() - setup_start
            reached.update(
                env_steps_per_seed=reached["update"] * steps_per_update,
                wall_s=wall,
                seconds_total=since_setup,
            )
        if main:
            csv_file.append(chunk * config.chunk_updates, steps_per_update, wall, metrics)
            log_chunk(tracker, chunk * config.chunk_updates, steps_per_update, metrics, csv_file.names)
        bar.update(config.chunk_updates * steps_per_update * config.num_seeds)
        bar.set_postfix(
            reward=f"{float(raw['step_reward'][:, -1].mean()):.3f}",
            ret=_short(last_return),  # mean finished-episode return ("-" until an episode ends)
            test=_short(last_test),  # mean greedy held-out return ("-" until the first evaluation)
            refresh=False,
        )
        chunks_run += 1
        if nonfinite is not None:  # the poisoned state is neither evaluated nor checkpointed
            break
        stop = (max_chunks is not None and chunks_run >= max_chunks) or reached is not None
        if (config.checkpoint_every and (chunk + 1) % config.checkpoint_every == 0) or finished or stop:
            save_checkpoint(run_dir, config, state, chunk + 1, wall)
        if stop:
            break
    bar.close()
    train_s = time.perf_counter() - start
    steps_run = chunks_run * config.chunk_updates * steps_per_update * config.num_seeds
    if nonfinite is not None:
        tracker.close()
        stop_nonfinite(run_dir, config, population, nonfinite, train_s)

    # 3. the summary; when the run is finished, the final evaluation and the run's files
    done = int(fetch(state.update)[0])
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "updates_done": done,
        "finished": done >= config.num_updates or reached is not None,
        "compile_s": compile_s,
        "train_s": train_s,
        "test_eval_s": test_eval_s,
        "env_steps_per_s": steps_run / max(train_s, 1e-9),
        "num_seeds": config.num_seeds,
        "num_envs": config.num_envs,
        "devices": len(population.devices),
        "processes": jax.process_count(),
        **machine_summary(),
    }
    if target is not None:
        # wall_s: the training loop (evaluations included); seconds_total: from the start of this call
        # (world pool, parameter init, compilation) to the target, plus the loop time of earlier calls
        summary["target"] = {"stop_at_test_return": target, "reached": reached is not None}
        if reached is not None:
            summary["target"].update(reached)
    if main:
        write_summary(run_dir, summary)
    if not summary["finished"] or not outputs:
        tracker.close()
        return summary

    start = time.perf_counter()
    results = final_evaluation(run_dir, config, population, evaluation, state, final_tests)
    summary["eval_s"] = time.perf_counter() - start
    tracker.log_final(final_values(results))
    tracker.close()
    if main:
        write_summary(run_dir, summary)
    summary["eval"] = results
    log(format_results(results))
    return summary


# ------------------------------------------------------------------------------ the steps of a run
def start_or_resume(
    run_dir: Path, config: PPOConfig, population: Population, csv_file: MetricsCSV, resume: bool, log: Any
) -> tuple[RunnerState, int, float]:
    """`(state, chunks done, wall seconds before this call)`: the newest intact checkpoint's state
    (metrics.csv truncated to it) when resuming, else the initial state of a fresh run folder."""
    main = is_main()
    if resume and checkpoint.latest_step(run_dir) is not None:

        def check(saved: dict[str, Any]) -> None:  # before the arrays are read
            check_resume_config(saved["config"], config)
            check_resume_processes(run_dir, saved)

        # the newest intact checkpoint; newer damaged ones are named in one line and set aside
        state, meta = checkpoint.restore(
            run_dir, population.abstract_state(), check=check, log=log, set_aside_damaged=True
        )
        chunks_done = int(meta["chunks_done"])
        if main:
            csv_file.truncate(chunks_done * config.chunk_updates)
        log(f"resuming {run_dir} at update {chunks_done * config.chunk_updates} of {config.num_updates}")
        return state, chunks_done, float(meta.get("wall_s", 0.0))
    if resume:  # killed before its first checkpoint was complete
        log(f"{run_dir} has no complete checkpoint: starting it over")
    elif checkpoint.latest_step(run_dir) is not None:
        raise FileExistsError(f"{run_dir} already holds a run; use --resume {run_dir} or another name")
    if main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "metrics.csv").unlink(missing_ok=True)
    return population.init(), 0, 0.0


def check_resume_processes(run_dir: Path, meta: dict[str, Any]) -> None:
    """Refuse (one-line `UserError`) to resume a checkpoint written by another number of processes: on
    another mesh the numbers would no longer continue the run's (orbax could reshard the state, but
    that is not offered). A checkpoint from before multi-process support counts as one process."""
    from hivex_jax.core.errors import UserError

    saved, now = int(meta.get("process_count", 1)), jax.process_count()
    if saved != now:
        raise UserError(
            f"{run_dir} was written by {saved} process(es); resume it with {saved} "
            f"(--num-processes {saved}), not {now}"
        )


def describe_run(config: PPOConfig, population: Population, compile_s: float) -> str:
    """The run's first log line: algorithm, env, population, updates, devices, compile time."""
    return (
        f"{config.algo.upper()} on {config.env_id} (task {config.task}"
        + (f", level {config.level}" if config.level is not None else "")  # no level: none printed
        + "): "
        f"{config.num_seeds} seeds x {config.num_envs} envs x {population.train.env.num_agents} agents, "
        f"{config.num_updates} updates of {config.steps_per_update} env steps; "
        f"{len(population.devices)} device(s)"
        + (f" of {jax.process_count()} processes" if jax.process_count() > 1 else "")
        + f", sharded over {population.shard_axis}; "
        f"compiled in {compile_s:.1f} s"
    )


def scale_hint(config: PPOConfig, backend: str) -> str | None:
    """A note when a config sized for the CPU runs on an accelerator (a few envs leave it idle)."""
    parallel = config.num_envs * config.num_seeds
    if backend == "cpu" or parallel >= 1024:
        return None
    return (
        f"note: {config.num_envs} envs x {config.num_seeds} seeds keep a {backend.upper()} mostly idle; "
        "raise num_envs (e.g. num_envs=4096 num_minibatches=8, as configs/ippo_wind_farm_control_gpu.yaml)"
    )


def record_test_returns(
    evaluation: HeldOutEvaluation, state: RunnerState, metrics: dict
) -> tuple[float, dict[str, Any]]:
    """Evaluate every seed on the test worlds into the chunk's last `test_return_*` cells (per seed,
    mean over agents and worlds); returns the greedy mean over seeds (process 0's, on every process) and
    the totals (`HeldOutEvaluation.trained_totals`, which the final evaluation of this state reuses).
    With several processes each evaluates the gathered parameters on its own devices."""
    tests = evaluation.trained_totals(_params_here(state.params))
    for variant in ("greedy", "stochastic"):
        per_seed = tests[variant]["return"].mean(axis=(-1, -2))  # [S]: mean over agents, worlds
        metrics[f"test_return_{variant}"][:, -1] = per_seed
    return broadcast_value(float(metrics["test_return_greedy"][:, -1].mean())), tests


def save_checkpoint(
    run_dir: Path, config: PPOConfig, state: RunnerState, chunks_done: int, wall: float
) -> None:
    """Checkpoint the population after `chunks_done` chunks, with the config and provenance."""
    meta = provenance(config.to_dict())
    meta.update(chunks_done=chunks_done, updates_done=chunks_done * config.chunk_updates, wall_s=wall)
    checkpoint.save(run_dir, chunks_done * config.chunk_updates, state, meta)


def final_evaluation(
    run_dir: Path,
    config: PPOConfig,
    population: Population,
    evaluation: HeldOutEvaluation,
    state: Any,
    trained: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every policy on the test worlds: eval.json, eval.png, learning_curve.png and episode.gif (the
    evaluation runs on every process, on its own devices, so all stay in step; process 0 writes).
    `trained`: the totals `record_test_returns` took of this state (not played again)."""
    params = _params_here(state.params)
    results = evaluation.full(params, trained=trained)
    results.update(
        algo=config.algo,
        env_id=config.env_id,
        task=config.task,
        level=config.level,
        num_seeds=config.num_seeds,
        episode_steps=None,  # full episodes, as `hivex evaluate` without --steps (None there too)
        env_steps_per_seed=config.env_steps,
        eval_seed=config.eval_seed,
    )
    if not is_main():
        return results
    write_eval_files(run_dir, config, results)
    if config.gif_frames > 1:
        write_episode_gif(run_dir / "episode.gif", evaluation, params)  # the evaluation's env and world
    return results


def _params_here(params: Any) -> Any:
    """The population's parameters as this process can compute with them: as they are with one
    process, gathered to numpy (a collective) when they are sharded over several."""
    return params if jax.process_count() == 1 else fetch(params)


def _quiet(*args: Any, **kwargs: Any) -> None:
    """The log of processes other than 0: they print nothing."""


def _short(value: float) -> str:
    """A progress-bar figure: "-" for NaN (nothing measured yet), else rounded."""
    return "-" if np.isnan(value) else f"{value:.0f}"
