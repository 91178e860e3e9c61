"""A transfer matrix: every trained run (rows) evaluated zero-shot on every evaluation setting (columns),
greedy policy, on the same worlds and noise as the scripted and random baselines.

One compiled program per architecture and static env setting: the params of every run that shares the
actor's architecture are stacked on the seed axis, the baselines are extra rows of the same program (a row
index picks the policy), and the settings that differ only in data (task, level, `EnvParams` fields) are a
stack of env params the program plays side by side (`rollout.Evaluator(params_axis=True)`), at most
`MAX_EPISODES_PER_PROGRAM` episodes at once. Cells are JSON-serialisable dicts; the matrix file is
rewritten after each program, so an interrupted matrix resumes where it stopped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from baselines.config import PPOConfig, make_env
from baselines.run.eval_policies import policy_env, rows_in_turn, trained_policy
from baselines.run.evaluation import load_run
from baselines.run.transfer import ENV_FIELDS, env_setting
from hivex_jax.eval import rollout, score
from hivex_jax.eval.stats import ONE_SEED, mean_ci_text, summarize

#: config keys that do not change what the trained actor computes from an observation: runs that differ
#: only in these (and in their training env) share one evaluation program
TRAINING_ONLY_KEYS = frozenset(
    {
        "algo", "seed", "num_seeds", "num_envs", "num_steps", "total_env_steps", "chunk_updates",
        "update_epochs", "num_minibatches", "lr", "anneal_lr", "gamma", "gae_lambda", "clip_eps",
        "clip_value_eps", "ent_coef", "vf_coef", "max_grad_norm", "normalize_advantages", "init_log_std",
        "train_worlds", "test_worlds", "pregenerate_worlds", "eval_seed", "eval_every",
        "stop_at_test_return", "checkpoint_every", "gif_stride", "gif_frames", "name", "out_dir",
        "critic_agent_id", "critic_local_obs", "critic_local_visual", "critic_heads_local",
        "reward_scaling", "train_reward_weights",
        "train_reward_weights_anneal_updates", "train_reward_sharing", "teacher_coef", "teacher_where",
        "teacher_anneal_updates", "train_env_params", "train_env_params_anneal_updates",
        "train_env_params_start",
    }
)  # fmt: skip


@dataclass
class LoadedRun:
    """A trained run ready to evaluate: its config, its trainer (`act`), params `[S, ...]`, updates."""

    label: str
    run_dir: str
    config: PPOConfig
    train: Any
    params: Any
    updates_done: int


def load(label: str, run_dir: str) -> LoadedRun:
    """Restore the latest checkpoint of `run_dir`."""
    config, population, state = load_run(run_dir)
    updates = int(jax.device_get(state.update)[0])
    return LoadedRun(label, str(run_dir), config, population.train, state.params, updates)


#: the env fields a compiled evaluation takes as data: settings that differ only in these share a program
DATA_ENV_FIELDS = frozenset({"task", "level", "env_params"})
#: the most episodes (rows x settings x worlds) one program plays at once; more settings: more programs
MAX_EPISODES_PER_PROGRAM = 4096


def group_key(run: LoadedRun, evaluated: PPOConfig) -> str:
    """Runs and settings with equal keys share a program: the same static part of the evaluated env,
    actor options and parameter shapes."""
    actor = {k: v for k, v in run.config.to_dict().items() if k not in TRAINING_ONLY_KEYS | set(ENV_FIELDS)}
    shapes = jax.tree.map(lambda x: tuple(x.shape[1:]), run.params)
    structure = f"{jax.tree.structure(run.params)}{jax.tree.leaves(shapes)}"
    static = {k: v for k, v in env_setting(evaluated).items() if k not in DATA_ENV_FIELDS}
    return json.dumps([static, actor, structure], sort_keys=True, default=str)


def _policy(train: Any, baselines: list[rollout.Policy]) -> rollout.Policy:
    """A policy over rows `(params, index)`: index 0 the trained actor (greedy), i >= 1 baseline i-1. A
    recurrent actor runs in `policy_env`, its memory in the state: the baselines' actions carry the
    actor's new memory too (unused by them), so every row's action has the same structure."""
    actor = trained_policy(train, greedy=True)

    def policy(row: Any, key: jax.Array, obs: dict, state: Any) -> dict:
        params, index = row
        trained = actor(params, key, obs, state)
        memory = {"memory": trained["memory"]} if "memory" in trained else {}
        actions = [trained] + [{**p(None, key, obs, state), **memory} for p in baselines]
        return jax.tree.map(lambda *xs: jnp.stack(xs)[index], *actions)

    return policy


def evaluate_settings(
    runs: list[LoadedRun],
    evaluated: dict[str, list[PPOConfig]],
    worlds: np.ndarray,
    num_steps: int | None,
    eval_seed: int,
) -> dict[str, dict[str, dict[str, Any]]]:
    """`{setting: {run label: cell}}` of `runs` (one architecture) in each setting's env (`evaluated`:
    one config per run; every setting the same static env, `group_key`), as one compiled program: the
    settings' env params are a stack it plays side by side, each with every run's seeds, then scripted
    (if any) and random."""
    import hivex_jax

    names = list(evaluated)
    env, _ = make_env(evaluated[names[0]][0])
    settings_params = [make_env(evaluated[name][0])[1] for name in names]
    stack = hivex_jax.stack_params(settings_params)
    has_scripted = rollout.find_scripted_policy(env) is not None
    baseline_names = (["scripted"] if has_scripted else []) + ["random"]

    def policy_for(env_params: Any) -> rollout.Policy:  # the baselines play each setting's params
        scripted = rollout.scripted_policy(env, env_params)
        baselines = ([scripted] if scripted is not None else []) + [rollout.random_policy(env)]
        return _policy(runs[0].train, baselines)

    seeds = [jax.tree.leaves(r.params)[0].shape[0] for r in runs]
    first = jax.tree.map(lambda x: x[:1], runs[0].params)
    params = jax.tree.map(
        lambda *xs: jnp.concatenate(xs), *[r.params for r in runs], *[first] * len(baseline_names)
    )
    index = jnp.concatenate([jnp.zeros(sum(seeds), jnp.int32), jnp.arange(1, len(baseline_names) + 1)])
    evaluator = rollout.Evaluator(
        policy_env(runs[0].train, env),  # with a recurrent actor's memory in the state
        stack,
        policy_for,
        worlds,
        eval_seed,
        num_steps,
        batched=True,
        params_axis=True,
        in_turn=rows_in_turn(env, settings_params[0]),
    )
    totals = evaluator((params, index))  # [rows, settings, W, A]
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for p, name in enumerate(names):
        per_row = totals["return"][:, p].mean(-1)  # [rows, W]: the per-agent mean return of each world
        reference = {n: float(per_row[sum(seeds) + i].mean()) for i, n in enumerate(baseline_names)}
        cells, start = {}, 0
        for run, config, n in zip(runs, evaluated[name], seeds, strict=True):
            cells[run.label] = cell(per_row[start : start + n], reference, config, totals["return"].shape[-1])
            start += n
        out[name] = cells
    return out


def settings_per_program(rows: int, worlds: int) -> int:
    """How many settings one program plays at once (`MAX_EPISODES_PER_PROGRAM`; at least one)."""
    return max(1, MAX_EPISODES_PER_PROGRAM // max(1, rows * worlds))


def cell(per_seed_world: np.ndarray, reference: dict[str, float], evaluated: PPOConfig, agents: int) -> dict:
    """One matrix cell: greedy return summary `[S, W]`, the baselines' returns, and per seed (mean,
    Student-t 95% CI over seeds) the normalised score (None where scripted does not beat random) and the
    fraction of the scripted return (None without a positive scripted return), both `hivex_jax.eval.score`'s
    of each seed's mean return by the baselines' means on the same worlds."""
    per_seed = per_seed_world.mean(1)
    scripted, random = reference.get("scripted"), reference["random"]
    normalised = fraction = None
    if scripted is not None:
        normalised = score.over_seeds(score.normalised_score(per_seed, scripted, random))
        fraction = score.over_seeds(score.fraction_of_scripted(per_seed, scripted))
    return {
        "eval_setting": env_setting(evaluated),
        "num_agents": int(agents),
        "greedy": summarize(per_seed_world),
        "return_per_seed": per_seed.tolist(),
        "scripted": scripted,
        "random": random,
        "normalised_score": normalised,
        "fraction_of_scripted": fraction,
    }


# -------------------------------------------------------------------------------------- report
#: what a cell shows, the key of its block and the table's title
SHOWN = {
    "normalised": ("normalised_score", f"Normalised score: {score.DEFINITION}"),
    "fraction": ("fraction_of_scripted", "Fraction of the scripted return (where it is positive)"),
    "return": ("greedy", "Greedy return"),
}


def _text(c: dict | None, what: str) -> str:
    """A cell as Markdown text: normalised score, fraction of scripted or greedy return with its 95% CI
    ("(one seed: no interval)" for a run of one seed); "n/a" where there is none (matrices written before
    the normalised score have none)."""
    if c is None:
        return ""
    block = c.get(SHOWN[what][0])
    if block is None:
        return "n/a"
    return mean_ci_text(block["mean"], block["ci95"], len(c["return_per_seed"]), 1 if what == "return" else 2)


def markdown(matrix: dict) -> str:
    """transfer.md: the normalised-score, fraction-of-scripted and greedy-return tables (runs x settings)."""
    settings, runs = list(matrix["eval_settings"]), list(matrix["runs"])
    worlds = matrix["worlds"]
    lines = [
        f"# Transfer matrix: {matrix['env_id']}",
        "",
        f"Greedy policy, {len(worlds)} worlds {worlds[0]}..{worlds[-1]}, evaluation key "
        f"{matrix['eval_seed']}. Rows: trained runs; columns: evaluation settings. ± = Student-t 95% CI "
        "over training seeds.",
    ]
    for what, (_, title) in SHOWN.items():
        lines += ["", f"## {title}", "", "| run | " + " | ".join(settings) + " |"]
        lines.append("|---|" + "---|" * len(settings))
        for r in runs:
            row = [_text(matrix["cells"].get(r, {}).get(s), what) for s in settings]
            lines.append(f"| {r} | " + " | ".join(row) + " |")
        if what == "normalised":
            lines += ["", f"n/a: {score.SCRIPTED_NOT_ABOVE_RANDOM} (or no scripted controller)."]
        if what == "fraction":
            lines += ["", f"n/a: {score.SCRIPTED_NOT_POSITIVE} (or no scripted controller)."]
        if what == "return":
            for name in ("scripted", "random"):
                row = [_reference(matrix, s, name) for s in settings]
                lines.append(f"| *{name}* | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _reference(matrix: dict, setting: str, name: str) -> str:
    """A baseline's return in setting `setting` (the first run's cell that has it; runs that share the
    evaluated env share the baselines)."""
    for r in matrix["runs"]:
        c = matrix["cells"].get(r, {}).get(setting)
        if c is not None and c.get(name) is not None:
            return f"{c[name]:.1f}"
    return ""


def heatmap(path: Any, matrix: dict) -> Any:
    """transfer.png: the normalised score per cell (colour) with mean ± CI written in it; the greedy
    return where no cell has one (no scripted controller, or one that does not beat random)."""
    from hivex_jax.eval.plots import pyplot, save_figure

    plt = pyplot()
    settings, runs = list(matrix["eval_settings"]), list(matrix["runs"])
    cells = [[matrix["cells"].get(r, {}).get(s) for s in settings] for r in runs]
    any_score = any(c and c.get("normalised_score") for row in cells for c in row)
    what = "normalised" if any_score else "return"

    def value(c: dict | None) -> float:
        block = None if c is None else c.get(SHOWN[what][0])
        return np.nan if block is None else block["mean"]

    grid = np.array([[value(c) for c in row] for row in cells], np.float64)
    fig, ax = plt.subplots(figsize=(max(5.0, 2.8 + 1.1 * len(settings)), max(3.0, 1.8 + 0.6 * len(runs))))
    # scores on a fixed 0 (random) .. 1 (scripted) scale, widened to hold every cell: autoscaled colours
    # made 0.89 and 0.91 opposite extremes
    finite = grid[np.isfinite(grid)]
    bottom, top = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    scale = {"vmin": min(0.0, bottom), "vmax": max(1.0, top)} if what == "normalised" else {}
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto", **scale)
    label = "normalised score (0 random, 1 scripted)" if what == "normalised" else "greedy return"
    fig.colorbar(image, ax=ax, label=label)
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            bright = not np.isfinite(grid[i, j]) or image.norm(grid[i, j]) > 0.6  # viridis turns yellow
            text = _text(c, what).replace(" ± ", "\n±").replace(f" ({ONE_SEED})", "\none seed:\nno interval")
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="black" if bright else "white")  # fmt: skip
    ax.set_xticks(range(len(settings)), settings, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(runs)), runs, fontsize=8)
    ax.set_xlabel("evaluation setting")
    ax.set_ylabel("trained run")
    worlds = matrix["worlds"]
    ax.set_title(
        f"{matrix['env_id']}: zero-shot transfer, greedy policy\non {len(worlds)} worlds "
        f"{worlds[0]}..{worlds[-1]} (± 95% CI over seeds)",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)
