"""The files of a run folder: metrics.csv, eval.json, learning_curve.png, eval.png, summary.json
(written atomically), and the held-out results table printed at the end."""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import jax
import jaxlib
import numpy as np

import hivex_jax
from baselines.config import ExtensionsConfig, PPOConfig
from baselines.core import extensions
from baselines.run.eval_policies import policy_env, trained_policy
from baselines.run.evaluation import HeldOutEvaluation
from hivex_jax.eval.stats import ONE_SEED

METRIC_NAMES = (
    "step_reward",
    "episode_return",
    "episode_length",
    "episodes",
    "loss",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "active_fraction",
    "test_return_greedy",
    "test_return_stochastic",
)
#: columns the auxiliary losses of `baselines.core.extensions` can add after METRIC_NAMES (the teacher's)
AUXILIARY_METRIC_NAMES = extensions.AUXILIARY_METRIC_NAMES


def metric_names(config: PPOConfig) -> tuple[str, ...]:
    """The per-seed metric columns of `config`'s metrics.csv."""
    return METRIC_NAMES + extensions.metric_names(ExtensionsConfig.of(config))


def write_text_atomic(path: Path, text: str) -> None:
    """Write `path` via a temporary file and a rename: a kill leaves the old or the new file, never
    half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_summary(run_dir: Path, summary: dict[str, Any]) -> None:
    """`summary.json`: what `run_training` returns, less the evaluation results (those are eval.json)."""
    write_text_atomic(run_dir / "summary.json", json.dumps(summary, indent=1))


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The host CPU's model name, with ", avx512" where it has AVX-512 (XLA compiles CPU code for the host's
    vector width, which can change a long training's floats); "unknown cpu" where the file is not there."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return "unknown cpu"
    lines = text.splitlines()
    names = (line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    name = next(names, "unknown cpu")
    flags = next((line for line in lines if line.startswith("flags")), "")
    return name + (", avx512" if " avx512f" in flags else "")


def machine_summary() -> dict[str, str]:
    """What a run was measured on (summary.json): backend, JAX version, the device (on a CPU its model)."""
    device = jax.devices()[0]
    kind = cpu_model() if device.platform == "cpu" else device.device_kind
    return {"backend": jax.default_backend(), "jax_version": jax.__version__, "device": kind}


def default_run_name(config: PPOConfig) -> str:
    """`<algo>_<env>_task<t>_<date>_<time>`: the run folder's name when the config names none."""
    slug = "".join(c if c.isalnum() else "_" for c in config.env_id.split("-v")[0]).lower()
    return f"{config.algo}_{slug}_task{config.task}_{datetime.now().strftime('%Y%m%d_%H%M%S')}"


class MetricsCSV:
    """`metrics.csv`: one row per update; columns `update, env_steps, wall_s`, then one column set per
    seed (`seed_<i>/<metric>`). Empty cells where a metric was not measured (no episode ended, no
    evaluation at that update)."""

    def __init__(self, path: Path, num_seeds: int, names: tuple[str, ...] = METRIC_NAMES):
        self.path = path
        self.names = names
        self.columns = ["update", "env_steps", "wall_s"] + [
            f"seed_{s}/{m}" for s in range(num_seeds) for m in names
        ]

    def truncate(self, updates_done: int) -> None:
        """Keep the complete rows of updates 1..`updates_done` (those of the checkpoint a resume
        starts from): rows written after it, and a row cut short by a kill, go. Atomic."""
        if not self.path.exists():
            return
        with self.path.open(newline="") as f:
            rows = list(csv.reader(f))
        keep: dict[int, list[str]] = {}
        for r in rows[1:]:
            if len(r) == len(self.columns) and r[0].isdigit() and 1 <= int(r[0]) <= updates_done:
                keep[int(r[0])] = r
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", newline="") as f:
            csv.writer(f).writerows([self.columns] + [keep[u] for u in sorted(keep)])
        os.replace(tmp, self.path)

    def append(self, first_update: int, steps_per_update: int, wall_s: float, metrics: dict) -> None:
        new = not self.path.exists()
        num_seeds, k = metrics["step_reward"].shape
        with self.path.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(self.columns)
            for j in range(k):
                update = first_update + j + 1
                row: list[Any] = [update, update * steps_per_update, f"{wall_s:.2f}"]
                for s in range(num_seeds):
                    for m in self.names:
                        v = metrics.get(m)
                        x = np.nan if v is None else float(v[s, j])
                        row.append("" if math.isnan(x) else f"{x:.6g}")
                writer.writerow(row)

    def read(self) -> dict[str, np.ndarray]:
        """Columns as float arrays (NaN for empty cells)."""
        with self.path.open() as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        data = np.array([[float(x) if x != "" else np.nan for x in r] for r in body], np.float64)
        data = data.reshape(len(body), len(header))
        return {name: data[:, i] for i, name in enumerate(header)}


def per_update_metrics(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Chunk metrics `[S, K]` -> the CSV's metrics (episode means from sums; NaN if none ended; the
    held-out test returns NaN until an evaluation fills the chunk's last update)."""
    out = {k: v for k, v in raw.items() if k in METRIC_NAMES + AUXILIARY_METRIC_NAMES}
    episodes = raw["episodes"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["episode_return"] = np.where(episodes > 0, raw["episode_return_sum"] / episodes, np.nan)
        out["episode_length"] = np.where(episodes > 0, raw["episode_length_sum"] / episodes, np.nan)
    for variant in ("greedy", "stochastic"):
        out[f"test_return_{variant}"] = np.full_like(out["step_reward"], np.nan)
    return out


def plot_learning_curve(run_dir: Path, config: PPOConfig, references: dict[str, float]) -> Path:
    """`learning_curve.png` from `metrics.csv`: training reward and held-out greedy return per seed."""
    from hivex_jax.eval.plots import learning_curve

    cols = MetricsCSV(run_dir / "metrics.csv", config.num_seeds, metric_names(config)).read()
    steps = cols["env_steps"]
    train = np.stack([cols[f"seed_{s}/step_reward"] for s in range(config.num_seeds)])
    tests = {
        variant: np.stack([cols[f"seed_{s}/test_return_{variant}"] for s in range(config.num_seeds)])
        for variant in ("greedy", "stochastic")
    }
    has_test = ~np.all(np.isnan(tests["greedy"]), axis=0)
    return learning_curve(
        run_dir / "learning_curve.png",
        steps,
        train,
        steps[has_test],
        {variant: values[:, has_test] for variant, values in tests.items()},
        references=references,
        title=f"{config.algo.upper()} on {config.env_id} task {config.task}"
        + (f" level {config.level}" if config.level is not None else ""),
    )


def _worlds_kind(results: dict[str, Any]) -> str:
    """ "held-out worlds", how many of the evaluated worlds are training worlds, or the file / stress
    worlds the seeds pick among."""
    distinct = results.get("distinct_episodes")  # seeds dropped as repeats of an episode (evaluation.py)
    if distinct:
        files = f" over {len(results['world_files'])} file world(s)" if results.get("world_files") else ""
        return f"distinct episode(s){files} ({distinct['seeds_given']} seeds given, repeats dropped)"
    if results.get("world_files"):
        return f"seeds over {len(results['world_files'])} file world(s)"
    if results.get("stress_worlds"):
        return f"seeds over {len(results['stress_worlds']['names'])} stress world(s)"
    in_train = results.get("worlds_in_train_pool", 0)
    return f"worlds ({in_train} of them in the train pool)" if in_train else "held-out worlds"


def plot_eval(path: Path, results: dict[str, Any]) -> Path:
    """`eval.png`: per-world returns of every policy (trained: mean and 95% CI over seeds) of an
    evaluation's results (which name the algorithm, env, task and level)."""
    from hivex_jax.eval.plots import per_world_returns

    level = f" level {results['level']}" if results["level"] is not None else ""
    title = f"{results['algo'].upper()} on {results['env_id']} task {results['task']}{level}"
    title += f": {_worlds_kind(results)}"
    return per_world_returns(path, results, title)


def write_eval_files(run_dir: Path, config: PPOConfig, results: dict[str, Any]) -> None:
    """The final evaluation's files: eval.json, eval.png and learning_curve.png (with the scripted and
    random returns as reference lines)."""
    write_text_atomic(run_dir / "eval.json", json.dumps(results, indent=1))
    plot_eval(run_dir / "eval.png", results)
    policies = results["policies"]
    references = {n: policies[n]["summary"]["mean"] for n in ("scripted", "random") if n in policies}
    plot_learning_curve(run_dir, config, references)


def _episodes(results: dict[str, Any]) -> str:
    """How long the evaluated episodes were: full, or cut at `--steps` decisions."""
    steps = results.get("episode_steps")
    return f"episodes cut at {steps} steps (--steps)" if steps else "full episodes"


def format_results(results: dict[str, Any]) -> str:
    """A small table of held-out returns: mean +- 95% CI over training seeds ("-" for a policy run
    once, like scripted and random, and for a trained policy of one seed, said below the table), IQM over
    (seed, world) runs and the normalised score (0 random, 1 scripted; `hivex_jax.eval.score`), then each
    trained policy's score or why there is none. Computed from the policies' mean returns, so eval.json
    files written before the score was saved read the same."""
    from hivex_jax.eval.score import format_score, normalised_score, score_fields, score_lines

    policies = results["policies"]
    means = {n: p["summary"]["mean"] for n, p in policies.items()}
    both = "scripted" in means and "random" in means
    worlds = results["worlds"]
    lines = [
        f"{len(worlds)} {_worlds_kind(results)} {worlds[0]}..{worlds[-1]}, {_episodes(results)}; "
        "return = per-agent mean:",
        f"  {'policy':<11s} {'return':>10s} {'+-95% CI':>9s} {'IQM':>10s} {'normalised':>11s}",
    ]
    if results.get("distinct_episodes"):
        d = results["distinct_episodes"]
        shown = ", ".join(map(str, d["dropped_seeds"][:4])) + (", ..." if len(d["dropped_seeds"]) > 4 else "")
        lines.insert(1, f"  {len(d['dropped_seeds'])} seed(s) dropped ({shown}): {d['why']}")
    for name, block in policies.items():
        s = block["summary"]
        score = normalised_score(s["mean"], means["scripted"], means["random"]) if both else None
        ci = f"{s['ci95']:9.1f}" if s.get("num_seeds", 2) > 1 else f"{'-':>9s}"  # one run: no spread
        lines.append(
            f"  {name:<11s} {s['mean']:10.1f} {ci} {s['iqm']:10.1f} {format_score(score, 3, ''):>11s}"
        )
    one_seed = [
        n
        for n, p in policies.items()
        if n in ("greedy", "stochastic") and p["summary"].get("num_seeds", 2) == 1
    ]
    if one_seed:  # a CI of 0 would be fake: the "-" says so
        lines.append(f"  {', '.join(one_seed)}: {ONE_SEED} (num_seeds=1; train more seeds for a CI)")
    lines += ["  " + line for line in score_lines(score_fields(means))]
    return "\n".join(lines)


def write_episode_gif(path: Path, evaluation: HeldOutEvaluation, params: Any) -> None:
    """`episode.gif` of the first seed's greedy policy on the evaluation's first world, in its env (a
    stress world when the pool is stress, file worlds with world_files) (`gif_stride`, `gif_frames`)."""
    import jax

    from hivex_jax.eval.gif import episode_frames, write_gif

    train = evaluation.train
    world = int(evaluation.worlds[0])
    config = train.config
    params0 = jax.tree.map(lambda x: x[0], params)
    frames = episode_frames(
        policy_env(train),
        train.env_params,
        trained_policy(train, True),
        params0,
        world,
        config.eval_seed,
        config.gif_stride,
        config.gif_frames,
    )
    write_gif(path, frames)


def provenance(config_dict: dict[str, Any]) -> dict[str, Any]:
    """Config plus the versions a restore is checked against."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return {
        "config": config_dict,
        "env_id": config_dict.get("env_id"),
        "hivex_jax_version": hivex_jax.__version__,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "backend": jax.default_backend(),
        "device_count": jax.device_count(),
        "process_count": jax.process_count(),  # a resume must use as many (runner.check_resume_processes)
        "python": platform.python_version(),
        "git_sha": sha,
    }
