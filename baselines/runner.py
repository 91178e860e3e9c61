"""The host loop: a population of seeds x envs on all local devices, compiled chunks of updates, and
between chunks the progress bar, per-seed metrics, held-out evaluation and checkpoints.

`Population` holds the compiled pieces; `run_training` writes `runs/<name>/` (config.yaml, metrics.csv,
learning_curve.png, eval.json, episode.gif, checkpoints/); `evaluate_run` scores a saved run on any
worlds.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from baselines import checkpoint
from baselines.common import FINITE_FLAGS, RunnerState, Train, stack_trees
from baselines.config import ConfigError, PPOConfig, from_dict
from hivex_jax.eval import rollout
from hivex_jax.eval.stats import summarize

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


def make_train(config: PPOConfig, env: Any = None, env_params: Any = None) -> Train:
    """`ippo.make_train` or `mappo.make_train` according to `config.algo`."""
    if config.algo == "mappo":
        from baselines.mappo import make_train as make
    else:
        from baselines.ippo import make_train as make
    return make(config, env, env_params)


# ---------------------------------------------------------------------------------------- errors
class NonFiniteError(RuntimeError):
    """A seed's loss, gradient norm or parameters became NaN/inf; the run stopped, its last finite
    checkpoint kept (`hivex train` exits with status 3)."""


class ResumeError(ConfigError):
    """A `--resume` whose config changes what the checkpoint holds (one line, exit status 2)."""


#: config keys a resumed run cannot change, and why: they shape the saved state, or (chunk_updates,
#: num_steps) the host's count of updates and env steps. Everything else may change on resume: the
#: optimiser and loss hyper-parameters (lr, anneal_lr, max_grad_norm, update_epochs, num_minibatches,
#: gamma, clip_eps, ...), total_env_steps, the env's task/level/params, evaluation and output keys.
RESUME_FIXED_KEYS = {
    "algo": "the algorithm",
    "env_id": "the environment",
    "num_agents": "the agent count (state and network shapes)",
    "env_options": "the env's static options (state shapes)",
    "num_seeds": "the seed axis of the saved state",
    "num_envs": "the env axis of the saved state",
    "hidden_sizes": "the network shapes",
    "cnn_channels": "the network shapes",
    "critic_agent_id": "the critic's input shape",
    "critic_local_obs": "the critic's input shape",
    "chunk_updates": "the checkpoint's position is counted in chunks",
    "num_steps": "env steps are counted as updates x num_envs x num_steps",
}


def check_resume_config(saved: dict[str, Any], config: PPOConfig) -> None:
    """Raise `ResumeError` (one line) if `config` changes a `RESUME_FIXED_KEYS` key of the checkpoint's
    config `saved` (keys the checkpoint predates are not compared)."""
    now = config.to_dict()
    for key, why in RESUME_FIXED_KEYS.items():
        if key in saved and key in now and saved[key] != now[key]:
            raise ResumeError(
                f"cannot change {key} on --resume ({saved[key]!r} -> {now[key]!r}): {why}; "
                "start a new run instead"
            )


def first_nonfinite(flags: dict[str, np.ndarray], first_update: int) -> dict[str, Any] | None:
    """The first update of a chunk whose `finite_*` flags (bool `[S, K]`) are not all set: `{"update"
    (1-based, counting from `first_update` done before the chunk), "seeds" (every seed bad there),
    "quantity" (the first bad of loss, gradient norm, parameters for the first of those seeds)}`, or
    None if every flag is set."""
    ok = np.stack([np.asarray(flags[k], bool) for k in FINITE_FLAGS])  # [Q, S, K]
    bad_updates = np.flatnonzero(~ok.all(axis=(0, 1)))
    if bad_updates.size == 0:
        return None
    j = int(bad_updates[0])
    seeds = np.flatnonzero(~ok[:, :, j].all(axis=0))
    quantity = list(FINITE_FLAGS.values())[int(np.argmin(ok[:, seeds[0], j]))]
    return {"update": first_update + j + 1, "seeds": seeds.tolist(), "quantity": quantity}


def write_text_atomic(path: Path, text: str) -> None:
    """Write `path` via a temporary file and a rename: a kill leaves the old or the new file, never
    half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------ population
class Population:
    """`num_seeds` independent runs, vmapped, sharded over `devices` (default: all local devices).

    Sharding (`shard_axis="auto"`): over the seed axis when the device count divides `num_seeds` (no
    communication), else over the env axis when it divides `num_envs` (parameters replicated,
    gradients all-reduced by XLA), else replicated; "seeds", "envs" or "none" force a choice. The
    program is the same in every case, so the numbers agree with one device up to float summation
    order.
    """

    def __init__(self, train: Train, devices: Sequence[Any] | None = None, shard_axis: str = "auto"):
        self.train = train
        self.config = train.config
        self.devices = list(devices if devices is not None else jax.local_devices())
        self.mesh = Mesh(np.asarray(self.devices), ("pop",))
        n = len(self.devices)
        divides = {"seeds": self.config.num_seeds % n == 0, "envs": self.config.num_envs % n == 0}
        if shard_axis == "auto":
            shard_axis = "seeds" if divides["seeds"] else "envs" if divides["envs"] else "none"
        elif shard_axis not in ("seeds", "envs", "none") or (
            shard_axis != "none" and not divides[shard_axis]
        ):
            raise ValueError(f"cannot shard the {shard_axis!r} axis over {n} devices")
        self.shard_axis = shard_axis
        self._init_one = jax.jit(train.init)
        self._chunk = jax.jit(
            self._vmapped_chunk,
            donate_argnums=0 if jax.default_backend() != "cpu" else (),
        )
        self.compiled: Any = None
        self.compile_s = float("nan")

    # -------------------------------------------------------------------------------- sharding
    def shardings(self, state: Any) -> Any:
        """A pytree of `NamedSharding` matching `state` (a population `RunnerState`)."""
        replicated = NamedSharding(self.mesh, P())
        if self.shard_axis == "seeds":
            return jax.tree.map(lambda _: NamedSharding(self.mesh, P("pop")), state)
        if self.shard_axis == "envs":
            envs = NamedSharding(self.mesh, P(None, "pop"))
            everything = jax.tree.map(lambda _: replicated, state)
            return everything.replace(
                env_state=jax.tree.map(lambda _: envs, state.env_state),
                obs=jax.tree.map(lambda _: envs, state.obs),
            )
        return jax.tree.map(lambda _: replicated, state)

    def _vmapped_chunk(self, state: RunnerState) -> tuple[RunnerState, dict]:
        state, metrics = jax.vmap(self.train.update_chunk)(state)
        return jax.lax.with_sharding_constraint(state, self.shardings(state)), metrics

    # ------------------------------------------------------------------------------------ init
    def seed_keys(self, seed: int) -> list[jax.Array]:
        """Key of training seed i = fold_in(PRNGKey(seed), i): seed i is the same run for any num_seeds."""
        base = jax.random.PRNGKey(seed)
        return [jax.random.fold_in(base, i) for i in range(self.config.num_seeds)]

    def init(self, seed: int | None = None) -> RunnerState:
        """The population's initial state `[num_seeds, ...]`, placed on the devices.

        Seeds are initialised one by one, NOT under `vmap`: flax's orthogonal init is a QR
        decomposition, and batched LAPACK calls can deadlock jaxlib 0.10 on 2-core CPUs.
        """
        seed = self.config.seed if seed is None else seed
        state = stack_trees([self._init_one(k) for k in self.seed_keys(seed)])
        return jax.device_put(state, self.shardings(state))

    def abstract_state(self) -> Any:
        """Shapes, dtypes and shardings of the population state (the target of a restore)."""
        keys = self.seed_keys(self.config.seed)
        shapes = jax.eval_shape(lambda: stack_trees([self.train.init(k) for k in keys]))
        shardings = self.shardings(shapes)
        return jax.tree.map(
            lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes, shardings
        )

    # ----------------------------------------------------------------------------------- chunk
    def compile(self, state: RunnerState) -> float:
        """Ahead-of-time compile the chunk for `state`'s shapes; returns the compile time (s)."""
        start = time.perf_counter()
        self.compiled = self._chunk.lower(state).compile()
        self.compile_s = time.perf_counter() - start
        return self.compile_s

    def chunk(self, state: RunnerState) -> tuple[RunnerState, dict[str, np.ndarray]]:
        """Run `chunk_updates` updates on every seed; metrics come back as numpy `[num_seeds, K]`."""
        if self.compiled is None:
            self.compile(state)
        state, metrics = self.compiled(state)
        return state, jax.tree.map(np.asarray, metrics)


# ------------------------------------------------------------------------------------ evaluation
def trained_policy(train: Train, greedy: bool) -> rollout.Policy:
    """The trained actor as an evaluation `Policy` (its params: the runner's `params`)."""
    return lambda params, key, obs, state: train.act(params, obs, key, greedy)


def _greedy_or_stochastic(train: Train) -> rollout.Policy:
    """Policy over `(params, greedy: bool[])`: one compiled program scores both variants."""

    def policy(params_and_flag, key, obs, state):
        params, greedy = params_and_flag
        mode, sample = train.act(params, obs, key, True), train.act(params, obs, key, False)
        return jax.tree.map(lambda a, b: jnp.where(greedy, a, b), mode, sample)

    return policy


def _baseline_policies(env: Any, env_params: Any) -> tuple[list[str], rollout.Policy]:
    """Names and one policy over an index: the scripted controller (if the env has one) and random."""
    names, policies = [], []
    scripted = rollout.scripted_policy(env, env_params)
    if scripted is not None:
        names.append("scripted")
        policies.append(scripted)
    names.append("random")
    policies.append(rollout.random_policy(env))

    def policy(index, key, obs, state):
        actions = [p(None, key, obs, state) for p in policies]
        return jax.tree.map(lambda *xs: jnp.stack(xs)[index], *actions)

    return names, policy


class HeldOutEvaluation:
    """Compiled evaluations on the test worlds, two programs in all: the trained policy (greedy and
    stochastic, every seed) and the baselines (the env's scripted controller, random). One
    `eval_seed` stream for all of them, so every policy meets the same worlds and the same noise."""

    def __init__(self, train: Train, worlds: str | Sequence[int], num_steps: int | None = None):
        cfg = train.config
        env, params = train.env, train.env_params
        key = jax.random.PRNGKey(cfg.eval_seed)
        self.worlds = rollout.seed_range(worlds)
        self.num_seeds = cfg.num_seeds
        self.reward_term_names = tuple(env.reward_term_names)
        self.trained = rollout.Evaluator(
            env, params, _greedy_or_stochastic(train), self.worlds, key, num_steps, batched=True
        )
        self.baseline_names, baseline = _baseline_policies(env, params)
        self.baselines = rollout.Evaluator(env, params, baseline, self.worlds, key, num_steps, batched=True)

    def on(self, worlds: Sequence[int]) -> HeldOutEvaluation:
        """The same compiled evaluation on other worlds (same count: no recompilation)."""
        other = copy.copy(self)
        other.worlds = rollout.seed_range(worlds)
        return other

    def trained_totals(self, params: Any) -> dict[str, dict[str, np.ndarray]]:
        """`{"greedy": totals [S, W, A, ...], "stochastic": ...}` for population params `[S, ...]`."""
        both = jax.tree.map(lambda x: jnp.concatenate([x, x]), params)
        flags = jnp.arange(2 * self.num_seeds) < self.num_seeds
        totals = self.trained((both, flags), self.worlds)
        s = self.num_seeds
        return {
            "greedy": jax.tree.map(lambda x: x[:s], totals),
            "stochastic": jax.tree.map(lambda x: x[s:], totals),
        }

    def baseline_totals(self) -> dict[str, dict[str, np.ndarray]]:
        """`{"scripted": totals [W, A, ...], "random": ...}`."""
        totals = self.baselines(jnp.arange(len(self.baseline_names)), self.worlds)
        return {n: jax.tree.map(lambda x, i=i: x[i], totals) for i, n in enumerate(self.baseline_names)}

    def full(self, params: Any, baselines: bool = True) -> dict[str, Any]:
        """Every policy's per-world results and summaries (the content of eval.json)."""
        out: dict[str, Any] = {"worlds": self.worlds.tolist(), "policies": {}}
        for name, totals in self.trained_totals(params).items():  # [S, W, A, ...]
            per_seed = totals["return"].mean(-1)
            per_world = [
                {
                    "world": int(w),
                    "return_mean": float(per_seed[:, i].mean()),
                    "return_per_seed": per_seed[:, i].tolist(),
                    "reward_terms": {
                        n: totals["reward_terms"][:, i, :, k].mean(-1).tolist()
                        for k, n in enumerate(self.reward_term_names)
                    },
                    "stats": {k: v[:, i].mean(-1).tolist() for k, v in totals["stats"].items()},
                    "length": totals["length"][:, i].tolist(),
                }
                for i, w in enumerate(self.worlds)
            ]
            out["policies"][name] = {"summary": summarize(per_seed), "per_world": per_world}
        if baselines:
            for name, totals in self.baseline_totals().items():  # [W, A, ...]
                per_world_returns = totals["return"].mean(-1)
                out["policies"][name] = {
                    "summary": summarize(per_world_returns[None]),
                    "per_world": [
                        {
                            "world": int(w),
                            "return_mean": float(per_world_returns[i]),
                            "reward_terms": {
                                n: float(totals["reward_terms"][i, :, k].mean())
                                for k, n in enumerate(self.reward_term_names)
                            },
                            "stats": {k: float(v[i].mean()) for k, v in totals["stats"].items()},
                            "length": int(totals["length"][i]),
                        }
                        for i, w in enumerate(self.worlds)
                    ],
                }
            if "scripted" in out["policies"]:
                ref = out["policies"]["scripted"]["summary"]["mean"]
                out["ratio_to_scripted"] = {
                    n: out["policies"][n]["summary"]["mean"] / ref if ref else float("nan")
                    for n in ("greedy", "stochastic")
                }
        return out


# ------------------------------------------------------------------------------------------ cache
#: config keys that only steer the host loop: runs differing in these share compiled programs
HOST_ONLY_KEYS = (
    "name",
    "out_dir",
    "eval_every",
    "checkpoint_every",
    "gif_stride",
    "gif_frames",
    "test_worlds",
)
_CACHE: dict[Any, Any] = {}
_CACHE_SIZE = 4


def _cached(key: Any, build: Any) -> Any:
    """A tiny LRU: a resumed run, `hivex evaluate` after `hivex train`, or a sweep over host-only keys
    in the same process reuse the traced and compiled programs instead of rebuilding them."""
    if key in _CACHE:
        _CACHE[key] = _CACHE.pop(key)
        return _CACHE[key]
    value = build()
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    return value


def compute_key(config: PPOConfig) -> str:
    """The config without host-only keys (as canonical JSON)."""
    values = {k: v for k, v in config.to_dict().items() if k not in HOST_ONLY_KEYS}
    return json.dumps(values, sort_keys=True)


def get_population(config: PPOConfig, devices: Sequence[Any] | None = None) -> Population:
    """`Population(make_train(config), devices)`, reused across calls with the same compute config."""
    devices = list(devices if devices is not None else jax.local_devices())
    key = ("population", compute_key(config), tuple(str(d) for d in devices))
    return _cached(key, lambda: Population(make_train(config), devices))


def get_evaluation(population: Population, worlds: Any, num_steps: int | None = None) -> HeldOutEvaluation:
    """`HeldOutEvaluation` for the population's policy on `worlds`, reused across calls."""
    world_list = tuple(rollout.seed_range(worlds).tolist())
    key = ("evaluation", compute_key(population.config), len(world_list), num_steps)
    evaluation = _cached(key, lambda: HeldOutEvaluation(population.train, world_list, num_steps))
    return evaluation.on(world_list)


# ------------------------------------------------------------------------------------------ files
def default_run_name(config: PPOConfig) -> str:
    slug = "".join(c if c.isalnum() else "_" for c in config.env_id.split("-v")[0]).lower()
    return f"{config.algo}_{slug}_task{config.task}_{datetime.now().strftime('%Y%m%d_%H%M%S')}"


class MetricsCSV:
    """`metrics.csv`: one row per update; columns `update, env_steps, wall_s`, then one column set per
    seed (`seed_<i>/<metric>`). Empty cells where a metric was not measured (no episode ended, no
    evaluation at that update)."""

    def __init__(self, path: Path, num_seeds: int):
        self.path = path
        self.columns = ["update", "env_steps", "wall_s"] + [
            f"seed_{s}/{m}" for s in range(num_seeds) for m in METRIC_NAMES
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
                    for m in METRIC_NAMES:
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


def _short(value: float) -> str:
    """A progress-bar figure: "-" for NaN (nothing measured yet), else rounded."""
    return "-" if np.isnan(value) else f"{value:.0f}"


def per_update_metrics(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Chunk metrics `[S, K]` -> the CSV's metrics (episode means from sums; NaN if none ended)."""
    out = {k: v for k, v in raw.items() if k in METRIC_NAMES}
    episodes = raw["episodes"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["episode_return"] = np.where(episodes > 0, raw["episode_return_sum"] / episodes, np.nan)
        out["episode_length"] = np.where(episodes > 0, raw["episode_length_sum"] / episodes, np.nan)
    return out


def plot_learning_curve(run_dir: Path, config: PPOConfig, references: dict[str, float]) -> Path:
    """`learning_curve.png` from `metrics.csv`: training reward and held-out greedy return per seed."""
    from hivex_jax.eval.plots import learning_curve

    cols = MetricsCSV(run_dir / "metrics.csv", config.num_seeds).read()
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
    """ "held-out worlds", or how many of the evaluated worlds are training worlds."""
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


def scale_hint(config: PPOConfig, backend: str) -> str | None:
    """A note when a config sized for the CPU runs on an accelerator (a few envs leave it idle)."""
    parallel = config.num_envs * config.num_seeds
    if backend == "cpu" or parallel >= 1024:
        return None
    return (
        f"note: {config.num_envs} envs x {config.num_seeds} seeds keep a {backend.upper()} mostly idle; "
        "raise num_envs (e.g. num_envs=4096 num_minibatches=8, as configs/ippo_wind_farm_control_gpu.yaml)"
    )


# ---------------------------------------------------------------------------------------- the loop
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

    setup_start = time.perf_counter()  # time to target counts world pools, init and compilation too
    run_dir = (
        Path(run_dir)
        if run_dir is not None
        else Path(config.out_dir) / (config.name or default_run_name(config))
    )
    population = get_population(config)
    train = population.train
    csv_file = MetricsCSV(run_dir / "metrics.csv", config.num_seeds)
    steps_per_update = config.steps_per_update

    if resume and checkpoint.latest_step(run_dir) is not None:
        check_resume_config(checkpoint.read_meta(run_dir)["config"], config)
        state, meta = checkpoint.restore(run_dir, population.abstract_state())
        chunks_done = int(meta["chunks_done"])
        wall_before = float(meta.get("wall_s", 0.0))
        csv_file.truncate(chunks_done * config.chunk_updates)
        log(f"resuming {run_dir} at update {chunks_done * config.chunk_updates} of {config.num_updates}")
    else:
        if resume:  # killed before its first checkpoint was complete
            log(f"{run_dir} has no complete checkpoint: starting it over")
        elif checkpoint.latest_step(run_dir) is not None:
            raise FileExistsError(f"{run_dir} already holds a run; use --resume {run_dir} or another name")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "metrics.csv").unlink(missing_ok=True)
        state = population.init()
        chunks_done, wall_before = 0, 0.0
    write_text_atomic(run_dir / "config.yaml", config.to_yaml())

    evaluation = get_evaluation(population, config.test_worlds)
    compile_s = population.compile(state) if population.compiled is None else 0.0
    log(
        f"{config.algo.upper()} on {config.env_id} (task {config.task}, level {config.level}): "
        f"{config.num_seeds} seeds x {config.num_envs} envs x {train.env.num_agents} agents, "
        f"{config.num_updates} updates of {steps_per_update} env steps; "
        f"{len(population.devices)} device(s), sharded over {population.shard_axis}; "
        f"compiled in {compile_s:.1f} s"
    )
    hint = scale_hint(config, jax.default_backend())
    if hint:
        log(hint)
    total_steps = config.env_steps * config.num_seeds
    bar = tqdm(
        total=total_steps,
        initial=chunks_done * config.chunk_updates * steps_per_update * config.num_seeds,
        unit="step",
        unit_scale=True,
        dynamic_ncols=True,
        disable=not progress,
        desc="train",
    )
    start = time.perf_counter()
    last_return, last_test = float("nan"), float("nan")
    chunks_run = 0
    target = config.stop_at_test_return
    reached: dict[str, Any] | None = None
    nonfinite: dict[str, Any] | None = None
    for chunk in range(chunks_done, config.num_chunks):
        state, raw = population.chunk(state)
        nonfinite = first_nonfinite(raw, chunk * config.chunk_updates)  # flags computed in the chunk
        metrics = per_update_metrics(raw)
        for variant in ("greedy", "stochastic"):
            metrics[f"test_return_{variant}"] = np.full_like(metrics["step_reward"], np.nan)
        finished = chunk + 1 == config.num_chunks
        if nonfinite is None and ((config.eval_every and (chunk + 1) % config.eval_every == 0) or finished):
            tests = evaluation.trained_totals(state.params)
            for variant in ("greedy", "stochastic"):
                per_seed = tests[variant]["return"].mean(axis=(-1, -2))  # [S]: mean over agents, worlds
                metrics[f"test_return_{variant}"][:, -1] = per_seed
            last_test = float(metrics["test_return_greedy"][:, -1].mean())
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
        csv_file.append(chunk * config.chunk_updates, steps_per_update, wall, metrics)
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
            meta = checkpoint.provenance(config.to_dict())
            meta.update(chunks_done=chunk + 1, updates_done=(chunk + 1) * config.chunk_updates, wall_s=wall)
            checkpoint.save(run_dir, (chunk + 1) * config.chunk_updates, state, meta)
        if stop:
            break
    bar.close()
    train_s = time.perf_counter() - start
    if nonfinite is not None:
        _stop_nonfinite(run_dir, config, population, nonfinite, train_s)
    done = int(jax.device_get(state.update)[0])
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "updates_done": done,
        "finished": done >= config.num_updates or reached is not None,
        "compile_s": compile_s,
        "train_s": train_s,
        "env_steps_per_s": chunks_run
        * config.chunk_updates
        * steps_per_update
        * config.num_seeds
        / max(train_s, 1e-9),
        "num_seeds": config.num_seeds,
        "num_envs": config.num_envs,
        "devices": len(population.devices),
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
    }
    if target is not None:
        # wall_s: the training loop (evaluations included); seconds_total: from the start of this call
        # (world pool, parameter init, compilation) to the target, plus the loop time of earlier calls
        summary["target"] = {"stop_at_test_return": target, "reached": reached is not None}
        if reached is not None:
            summary["target"].update(reached)
    write_text_atomic(run_dir / "summary.json", json.dumps(summary, indent=1))
    if not summary["finished"] or not outputs:
        return summary

    start = time.perf_counter()
    results = evaluation.full(state.params)
    results.update(
        algo=config.algo,
        env_id=config.env_id,
        task=config.task,
        level=config.level,
        num_seeds=config.num_seeds,
        episode_steps=int(train.env_params.max_steps),
        env_steps_per_seed=config.env_steps,
        eval_seed=config.eval_seed,
    )
    write_text_atomic(run_dir / "eval.json", json.dumps(results, indent=1))
    plot_eval(run_dir / "eval.png", results)
    policies = results["policies"]
    references = {n: policies[n]["summary"]["mean"] for n in ("scripted", "random") if n in policies}
    plot_learning_curve(run_dir, config, references)
    if config.gif_frames > 1:
        from hivex_jax.eval.gif import episode_frames, write_gif

        params0 = jax.tree.map(lambda x: x[0], state.params)
        frames = episode_frames(
            train.env,
            train.env_params,
            trained_policy(train, True),
            params0,
            int(evaluation.worlds[0]),
            config.eval_seed,
            config.gif_stride,
            config.gif_frames,
        )
        write_gif(run_dir / "episode.gif", frames)
    summary["eval_s"] = time.perf_counter() - start
    write_text_atomic(run_dir / "summary.json", json.dumps(summary, indent=1))
    summary["eval"] = results
    log(format_results(results))
    return summary


def _stop_nonfinite(
    run_dir: Path, config: PPOConfig, population: Population, nonfinite: dict[str, Any], train_s: float
) -> None:
    """Record a divergence in summary.json, make sure a finite checkpoint exists, raise `NonFiniteError`."""
    latest = checkpoint.latest_step(run_dir)
    if latest is None:  # diverged before the first checkpoint: the initial state is a finite one
        meta = checkpoint.provenance(config.to_dict())
        meta.update(chunks_done=0, updates_done=0, wall_s=0.0)
        checkpoint.save(run_dir, 0, population.init(), meta)
        latest = 0
    seeds = nonfinite["seeds"]
    who = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {', '.join(map(str, seeds))}"
    summary = {
        "run_dir": str(run_dir),
        "finished": False,
        "nonfinite": {**nonfinite, "last_checkpoint_update": latest},
        "train_s": train_s,
    }
    write_text_atomic(run_dir / "summary.json", json.dumps(summary, indent=1))
    raise NonFiniteError(
        f"{who} of {config.num_seeds}: {nonfinite['quantity']} not finite (NaN/inf) at update "
        f"{nonfinite['update']}; stopped. The last finite checkpoint is update {latest}: continue with "
        f"`hivex train --resume {run_dir}` and a change such as a lower lr (now {config.lr:g})"
    )


def format_results(results: dict[str, Any]) -> str:
    """A small table of held-out returns: mean +- 95% CI over training seeds ("-" for a policy run
    once, like scripted and random), IQM over (seed, world) runs, and the ratio to scripted."""
    ratio = results.get("ratio_to_scripted", {})
    worlds = results["worlds"]
    lines = [
        f"{len(worlds)} {_worlds_kind(results)} {worlds[0]}..{worlds[-1]}, full episodes; "
        "return = per-agent mean:",
        f"  {'policy':<11s} {'return':>10s} {'+-95% CI':>9s} {'IQM':>10s} {'vs scripted':>12s}",
    ]
    for name, block in results["policies"].items():
        s = block["summary"]
        r = f"{ratio[name]:.3f}" if name in ratio else ("1.000" if name == "scripted" else "")
        ci = f"{s['ci95']:9.1f}" if s.get("num_seeds", 2) > 1 else f"{'-':>9s}"  # one run: no spread
        lines.append(f"  {name:<11s} {s['mean']:10.1f} {ci} {s['iqm']:10.1f} {r:>12s}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ evaluate
def load_run(
    run_dir: str | Path, overrides: dict[str, Any] | None = None
) -> tuple[PPOConfig, Population, Any]:
    """`(config, population, state)` of a saved run's latest checkpoint."""
    import yaml

    run_dir = Path(run_dir)
    values = yaml.safe_load((run_dir / "config.yaml").read_text())
    values.update(overrides or {})
    config = from_dict(values)
    population = get_population(config)
    state, _ = checkpoint.restore(run_dir, population.abstract_state())
    return config, population, state


def evaluate_run(
    run_dir: str | Path, worlds: str | None = None, baselines: bool = True, num_steps: int | None = None
) -> dict[str, Any]:
    """Evaluate a saved run's policy (greedy and stochastic, every seed) on `worlds` (default: its test
    pool), with the scripted and random baselines on the same worlds."""
    config, population, state = load_run(run_dir)
    worlds = worlds or config.test_worlds
    evaluation = get_evaluation(population, worlds, num_steps)
    results = evaluation.full(state.params, baselines=baselines)
    train_pool = set(rollout.seed_range(config.train_worlds).tolist())
    results.update(
        worlds_in_train_pool=sum(int(w) in train_pool for w in results["worlds"]),
        algo=config.algo,
        env_id=config.env_id,
        task=config.task,
        level=config.level,
        num_seeds=config.num_seeds,
        updates_done=int(jax.device_get(state.update)[0]),
        eval_seed=config.eval_seed,
    )
    return results
