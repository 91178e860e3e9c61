"""Frozen, typed trainer configs loaded from YAML with `key=value` overrides.

Derived sizes are properties. Every check runs in `validate()` (called on construction), so an unknown
key or an impossible combination is a clear error before anything is compiled; `validate_env` adds what
only `hivex_jax.make` can check (env id, task, level, env options and their bounds).

A run's config.yaml starts with `format_version` (`FORMAT_VERSION`): a file from another format is
refused with a message instead of failing later. Files without it (written before the field existed, or
hand-written) are read as the current format, which they were.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from baselines.config_values import ConfigError, coerce_value, load_yaml, parse_overrides
from hivex_jax.core.errors import UserError, one_line, world_seeds
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

#: the config shipped as the default of `hivex train`
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "ippo_wind_farm_control.yaml"

#: values of `reward_scaling`
REWARD_SCALINGS = ("none", "return_std")

#: values of `recurrent`: "none" (feed-forward actor) or "gru" (a GRU over the actor's encoder output)
RECURRENT_CELLS = ("none", "gru")

#: values of `teacher_where`: imitate the scripted controller on every decision, or only where the env's
#: `scripted_safety_mask` says its safety rules take over (Ocean Plastic Collection's border and vessel rules)
TEACHER_WHERE = ("all", "safety")

#: version of the config.yaml layout a run folder records; bump when a field is renamed or changes meaning
FORMAT_VERSION = 1

#: upper bounds of the size keys (docs/training.md, "Bounds"): far above any run one machine holds, low
#: enough that a typo (`num_seeds=1e30`) is one line before anything allocates or compiles; what does fit
#: under them is then checked against the device's memory (`baselines.memory`)
SIZE_BOUNDS = {
    "num_seeds": 4096,
    "num_envs": 1 << 20,
    "num_steps": 1 << 16,
    "total_env_steps": 1 << 40,
    "chunk_updates": 4096,
    "update_epochs": 1024,
    "num_minibatches": 1 << 20,
    "gru_size": 1 << 14,
    "gif_stride": 1 << 20,
    "gif_frames": 10_000,
    "eval_every": 1 << 31,
    "checkpoint_every": 1 << 31,
    "teacher_anneal_updates": 1 << 31,
    "train_reward_weights_anneal_updates": 1 << 31,
}

#: per-layer width and layer count of `hidden_sizes` and `cnn_channels`
LAYER_BOUNDS = {"hidden_sizes": (1 << 14, 64), "cnn_channels": (4096, 16)}

#: `seed` and `eval_seed` are in [0, SEED_LIMIT): `jax.random.PRNGKey` wraps larger ones onto smaller keys
SEED_LIMIT = 2**32


def _common_seeds(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted seeds in both `a` and `b`; a pool may name millions of seeds, so a binary search of the
    larger in the sorted smaller rather than sets or `np.intersect1d` (tens of seconds at 16M seeds)."""
    small, large = sorted((a, b), key=len)
    if small.size == 0:
        return small
    small = np.sort(small)
    found = small[np.searchsorted(small, large).clip(max=small.size - 1)] == large
    return np.unique(large[found])


def _figure(value: int) -> str:
    """An integer for an error line: `1,234` or, past 16 digits, `~1e30` (a 4,000-digit value stays short)."""
    digits = len(str(abs(value)))
    return f"{value:,}" if digits <= 16 else f"{'-' if value < 0 else ''}~1e{digits - 1}"


@dataclass(frozen=True)
class PPOConfig:
    """Fields shared by IPPO and MAPPO. Sizes: envs x steps x agents samples per update."""

    algo: str = "ippo"
    # --- environment
    env_id: str = "WindFarmControl-v0"
    task: int = 0
    level: int | None = None  # the env's level field (pattern / terrain_level); None = env default
    num_agents: int | None = None  # None = the env's default count
    env_options: dict = field(default_factory=dict)  # other static (constructor) options
    world_files: str | None = None  # worlds from files (glob); = env_options.world_files (docs/worlds.md)
    env_params: dict = field(default_factory=dict)  # other EnvParams field overrides
    train_worlds: str = "5000:6000"  # world-seed pool for training episodes
    test_worlds: str = "6000:6008"  # held-out pool for evaluation (disjoint from train_worlds)
    pregenerate_worlds: bool = True  # build every train world once (reset = a gather); same episodes
    # --- population
    seed: int = 0
    num_seeds: int = 3  # independent training seeds, a vmap axis
    num_envs: int = 8
    num_steps: int = 128  # rollout length per update (truncated; GAE bootstraps from V(final obs))
    total_env_steps: int = 300_000  # per seed; rounded up to whole chunks
    chunk_updates: int = 5  # K: updates per compiled chunk (host logs/evaluates between chunks)
    # --- PPO
    update_epochs: int = 4
    num_minibatches: int = 16
    lr: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    clip_value_eps: float = 0.0  # value-function clipping range (<= 0 disables)
    ent_coef: float = 0.005
    # entropy bonus of the hybrid action's parts: the Gaussian (continuous dims) and the categoricals
    # (discrete branches); None = ent_coef
    ent_coef_continuous: float | None = None
    ent_coef_discrete: float | None = None
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    normalize_advantages: bool = True
    # running per-feature mean/var of obs["vector"] (stored with the params, so checkpoints and
    # evaluation use them); the actor and critic read (obs - mean) / std clipped to +-obs_norm_clip
    obs_normalization: bool = False
    obs_norm_clip: float = 10.0
    reward_scaling: str = "none"  # "none" or "return_std": rewards / running std of the discounted return
    # training-only reward: {term name: weight} re-weights info["raw_reward_terms"] in training rollouts
    # (terms not named keep the env's task weight); evaluation and "return" metrics keep the env's reward
    train_reward_weights: dict = field(default_factory=dict)
    train_reward_weights_anneal_updates: int = 0  # > 0: weights move linearly to the env's over N updates
    # training-only: each agent's reward becomes (1 - s) r_i + s * mean of its env's active agents' r
    # (s = 1: a team reward, e.g. so that a speaker gains from telling the truth; docs/training.md)
    train_reward_sharing: float = 0.0
    # --- networks
    hidden_sizes: tuple = (64, 64)
    cnn_channels: tuple = ()  # conv layers over obs["visual"]; () = the image flattened into a dense layer
    activation: str = "tanh"
    init_log_std: float = -0.5
    # "gru": the actor is recurrent (a GRU of gru_size units over its encoder output, reset at every
    # episode start; PPO minibatches are whole env sequences); the critic stays feed-forward
    recurrent: str = "none"
    gru_size: int = 128
    # --- training-time teacher (off at teacher_coef 0): adds teacher_coef * the mean of
    # -log pi(scripted action | obs) over the decisions where the teacher applies (teacher_where) to the
    # PPO loss, the coefficient moving linearly to 0 at update teacher_anneal_updates (0 = constant). The
    # actions taken stay the policy's own; evaluation never sees the teacher (docs/training.md)
    teacher_coef: float = 0.0
    teacher_where: str = "all"  # "all" or "safety" (only where the env's scripted_safety_mask fires)
    teacher_anneal_updates: int = 0
    # --- evaluation, logging, outputs
    eval_seed: int = 12345  # RNG stream of evaluation, independent of training seeds
    eval_every: int = 6  # chunks between held-out evaluations (greedy); 0 = only at the end
    # stop (final evaluation, plot, GIF as usual) at the first evaluation whose greedy held-out return,
    # averaged over seeds, reaches this; summary.json records the time to it. None = run all updates
    stop_at_test_return: float | None = None
    checkpoint_every: int = 20  # chunks between checkpoints (always one at the end)
    gif_stride: int = 50  # env steps between GIF frames
    gif_frames: int = 100
    name: str | None = None  # run name under out_dir; None = derived from algo/env/task + time
    out_dir: str = "runs"

    # ------------------------------------------------------------------------------ derived sizes
    @property
    def steps_per_update(self) -> int:
        """Env steps (all envs) per update, per seed."""
        return self.num_envs * self.num_steps

    @property
    def num_chunks(self) -> int:
        return max(1, math.ceil(self.total_env_steps / (self.steps_per_update * self.chunk_updates)))

    @property
    def num_updates(self) -> int:
        """Total updates (a whole number of chunks)."""
        return self.num_chunks * self.chunk_updates

    @property
    def env_steps(self) -> int:
        """Env steps per seed actually run (total_env_steps rounded up to whole chunks)."""
        return self.num_updates * self.steps_per_update

    @property
    def minibatch_env_steps(self) -> int:
        """Env steps per minibatch (times the agent count = samples per minibatch)."""
        return self.steps_per_update // self.num_minibatches

    def num_actors(self, num_agents: int) -> int:
        """Agents acting in parallel per seed."""
        return self.num_envs * num_agents

    # --------------------------------------------------------------------------------- checking
    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise `ConfigError` on an impossible combination."""
        if self.algo not in ALGORITHMS:
            raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}; got {self.algo!r}")
        positive = (
            "num_seeds",
            "num_envs",
            "num_steps",
            "total_env_steps",
            "chunk_updates",
            "update_epochs",
            "num_minibatches",
            "gif_stride",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1; got {getattr(self, name)}")
        self._check_bounds()
        if self.steps_per_update % self.num_minibatches:
            raise ConfigError(
                f"num_envs * num_steps = {self.num_envs} * {self.num_steps} = {self.steps_per_update} "
                f"env steps per update is not divisible into num_minibatches = {self.num_minibatches}"
            )
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1]; got {getattr(self, name)}")
        if self.reward_scaling not in REWARD_SCALINGS:
            raise ConfigError(f"reward_scaling must be one of {REWARD_SCALINGS}; got {self.reward_scaling!r}")
        for term, weight in self.train_reward_weights.items():
            try:
                finite = math.isfinite(float(weight))
            except (TypeError, ValueError):
                finite = False
            if not finite:
                raise ConfigError(f"train_reward_weights.{term} must be a finite number; got {weight!r}")
        if self.train_reward_weights_anneal_updates < 0:
            raise ConfigError(
                "train_reward_weights_anneal_updates must be >= 0 (0 = constant weights); "
                f"got {self.train_reward_weights_anneal_updates}"
            )
        if not 0.0 <= self.train_reward_sharing <= 1.0:
            raise ConfigError(f"train_reward_sharing must be in [0, 1]; got {self.train_reward_sharing}")
        if self.recurrent not in RECURRENT_CELLS:
            raise ConfigError(f"recurrent must be one of {RECURRENT_CELLS}; got {self.recurrent!r}")
        if self.gru_size < 1:
            raise ConfigError(f"gru_size must be >= 1; got {self.gru_size}")
        if self.recurrent != "none" and self.num_envs % self.num_minibatches:
            raise ConfigError(
                f"recurrent={self.recurrent} trains on whole env sequences: num_envs = {self.num_envs} must "
                f"be divisible into num_minibatches = {self.num_minibatches} (minibatches are groups of envs)"
            )
        if not (math.isfinite(self.teacher_coef) and self.teacher_coef >= 0):
            raise ConfigError(
                f"teacher_coef must be a finite number >= 0 (0 = no teacher); got {self.teacher_coef}"
            )
        if self.teacher_where not in TEACHER_WHERE:
            raise ConfigError(f"teacher_where must be one of {TEACHER_WHERE}; got {self.teacher_where!r}")
        if self.teacher_anneal_updates < 0:
            raise ConfigError(
                "teacher_anneal_updates must be >= 0 (0 = a constant coefficient); "
                f"got {self.teacher_anneal_updates}"
            )
        for name in ("ent_coef", "ent_coef_continuous", "ent_coef_discrete"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ConfigError(f"{name} must be >= 0; got {value}")
        if not self.obs_norm_clip > 0:
            raise ConfigError(f"obs_norm_clip must be > 0; got {self.obs_norm_clip}")
        for name in ("lr", "clip_eps"):
            if not getattr(self, name) > 0:  # also refuses NaN
                raise ConfigError(f"{name} must be > 0; got {getattr(self, name)}")
        if not self.hidden_sizes:
            raise ConfigError("hidden_sizes needs at least one layer")
        if self.activation not in ("tanh", "relu", "gelu", "silu"):
            raise ConfigError(f"activation must be tanh, relu, gelu or silu; got {self.activation!r}")
        if self.name is not None and (
            not self.name.strip() or self.name in (".", "..") or any(c in self.name for c in "/\\\0")
        ):
            raise ConfigError(f"name {self.name!r} must be a folder name (no '/', not '.' or '..')")
        if self.name is not None and len(self.name.encode()) > 200:
            raise ConfigError(f"name is {len(self.name.encode())} bytes long; at most 200 (a folder name)")
        if self.eval_every < 0 or self.checkpoint_every < 0 or self.gif_frames < 0:
            raise ConfigError("eval_every, checkpoint_every and gif_frames must be >= 0")
        if self.stop_at_test_return is not None and self.eval_every < 1:
            raise ConfigError(
                "stop_at_test_return needs eval_every >= 1: the target is checked at held-out evaluations"
            )
        try:
            train = world_seeds(self.train_worlds, "train_worlds")
            test = (  # "stress": the env's stress worlds over STRESS_SEEDS (docs/worlds.md)
                train[:0] if self.test_worlds == "stress" else world_seeds(self.test_worlds, "test_worlds")
            )
        except UserError as exc:
            raise ConfigError(f"bad world pool: {exc}") from exc
        overlap = _common_seeds(train, test)
        if overlap.size:
            raise ConfigError(
                f"train_worlds and test_worlds overlap ({overlap.size} seeds, e.g. {overlap[0]}): "
                "held-out evaluation needs disjoint pools"
            )
        if "num_agents" in self.env_options:
            raise ConfigError("set the agent count with the num_agents field, not env_options")
        if self.world_files is not None:  # the spelled-out key is env_options.world_files
            if self.env_options.get("world_files") is not None:
                raise ConfigError("give world_files or env_options.world_files, not both")
            from hivex_jax.worlds.wrapper import expand_world_paths

            try:
                expand_world_paths(self.world_files)  # a glob that matches no file: refused here
            except UserError as exc:
                raise ConfigError(str(exc)) from exc
            object.__setattr__(self, "env_options", {**self.env_options, "world_files": self.world_files})
            object.__setattr__(self, "world_files", None)

    def _check_bounds(self) -> None:
        """Raise `ConfigError` on a size over its `SIZE_BOUNDS` / `LAYER_BOUNDS` bound, a seed outside
        [0, 2**32) or a non-finite float (inf from `lr=1e400` as NaN)."""
        for name, bound in SIZE_BOUNDS.items():
            if getattr(self, name) > bound:
                raise ConfigError(
                    f"{name} = {_figure(getattr(self, name))} is over its bound {bound:,} "
                    "(docs/training.md, Bounds)"
                )
        for name, (width, depth) in LAYER_BOUNDS.items():
            layers = getattr(self, name)
            if len(layers) > depth:
                raise ConfigError(f"{name} has {len(layers)} layers; at most {depth}")
            for size in layers:
                if not 1 <= size <= width:
                    raise ConfigError(f"{name}: layer size {_figure(size)} is outside [1, {width:,}]")
        for name in ("seed", "eval_seed"):
            if not 0 <= getattr(self, name) < SEED_LIMIT:
                raise ConfigError(f"{name} must be in [0, 2**32); got {_figure(getattr(self, name))}")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{f.name} must be a finite number; got {value}")

    def rounding_note(self) -> str | None:
        """One line when `total_env_steps` is not a whole number of chunks and runs rounded up, else None."""
        if self.env_steps == self.total_env_steps:
            return None
        return (
            f"note: total_env_steps {self.total_env_steps:,} rounded up to {self.env_steps:,} per seed "
            f"(whole chunks of chunk_updates x num_envs x num_steps = {self.chunk_updates} x {self.num_envs} "
            f"x {self.num_steps} = {self.chunk_updates * self.steps_per_update:,} env steps)"
        )

    # ------------------------------------------------------------------------------ conversions
    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for k, v in out.items():
            if isinstance(v, tuple):
                out[k] = list(v)
        return out

    def to_yaml(self) -> str:
        """The config as YAML, headed by `format_version` (what a run folder's config.yaml holds)."""
        return yaml.safe_dump({"format_version": FORMAT_VERSION, **self.to_dict()}, sort_keys=False)

    def replace(self, **changes: Any) -> PPOConfig:
        return from_dict({**self.to_dict(), **changes})


@dataclass(frozen=True)
class IPPOConfig(PPOConfig):
    """Independent PPO: shared-parameter actor and critic on local observations."""

    algo: str = "ippo"


@dataclass(frozen=True)
class MAPPOConfig(PPOConfig):
    """MAPPO: the IPPO actor; the critic sees `env.global_state` plus a one-hot agent id."""

    algo: str = "mappo"
    critic_agent_id: bool = True  # append the one-hot agent id to the global state
    critic_local_obs: bool = True  # also append the agent's own local `vector` obs ("agent-specific")


ALGORITHMS: dict[str, type[PPOConfig]] = {"ippo": IPPOConfig, "mappo": MAPPOConfig}


# ---------------------------------------------------------------------------------------- loading
def route_message_options(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the message channel's top-level keys (`message_vocab=2`, `MESSAGE_OPTIONS`) moved
    into `env_options`, where `hivex_jax.make` reads them (docs/messages.md); both spellings: refused."""
    values = dict(values)
    for key in MESSAGE_OPTIONS:
        if key in values:
            options = dict(values.get("env_options") or {})
            if key in options:
                raise ConfigError(f"give {key} or env_options.{key}, not both")
            values["env_options"] = {**options, key: values.pop(key)}
    return values


def from_dict(values: dict[str, Any]) -> PPOConfig:
    """Build the config class named by `values["algo"]` (default ippo); unknown keys are errors."""
    values = dict(values)
    version = values.pop("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ConfigError(
            f"format_version {version!r}: written by another version of hivex_jax; this one reads "
            f"format_version {FORMAT_VERSION} (use the hivex_jax version that wrote it)"
        )
    values = route_message_options(values)
    algo = str(values.get("algo", "ippo")).lower()
    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}; got {algo!r}")
    cls = ALGORITHMS[algo]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        hints = []
        for u in unknown:
            close = difflib.get_close_matches(u, list(fields), n=2)
            hints.append(f"{u!r}" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        raise ConfigError(f"unknown config key(s) for {algo}: {', '.join(hints)}. Known: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {k: coerce_value(k, v, hints[k]) for k, v in values.items()}
    kwargs["algo"] = algo
    return cls(**kwargs)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PPOConfig:
    """Read a YAML config (default: IPPO on Wind Farm Control) and apply `key=value` overrides."""
    if path is None and not DEFAULT_CONFIG.exists():  # installed without the configs/ folder
        return from_dict(parse_overrides(list(overrides or [])))
    path = Path(path) if path is not None else DEFAULT_CONFIG
    if not path.is_file():
        shipped = DEFAULT_CONFIG.parent.parent / path  # `configs/x.yaml` typed outside the repository
        hint = f"; the shipped one is {shipped}" if not path.is_absolute() and shipped.is_file() else ""
        raise ConfigError(
            f"config file {path} " + ("is a folder" if path.exists() else "does not exist") + hint
        )
    try:
        values = load_yaml(path.read_text()) or {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {one_line(exc)}") from exc
    except (ValueError, RecursionError) as exc:  # an over-long integer, nesting past Python's stack
        raise ConfigError(f"config file {path} is not valid YAML ({type(exc).__name__})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"config file {path} is not valid YAML ({problem}{where})") from exc
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: a config is a YAML mapping of key: value")
    # Command-line message options replace the file's (`message_loss=1` on a config with env_options).
    changes = route_message_options(parse_overrides(list(overrides or [])))
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value
    return from_dict(values)


def check_env_fit(config: PPOConfig, env: Any, env_params: Any) -> None:
    """Raise a one-line `ConfigError` if the config's network or normalisation options need an
    observation part the env does not have (compiles nothing)."""
    spaces = env.observation_space(env_params).spaces
    vector = spaces.get("vector")
    has_vector = vector is not None and vector.shape[-1] > 0
    parts = ", ".join(f"{k} {tuple(v.shape)}" for k, v in spaces.items())
    if config.cnn_channels and "visual" not in spaces:
        raise ConfigError(
            f"cnn_channels={list(config.cnn_channels)} builds convolutions over obs['visual'], but "
            f"{config.env_id} observes only {parts}: set cnn_channels=[]"
        )
    if config.obs_normalization and not has_vector:
        raise ConfigError(
            f"obs_normalization normalises obs['vector'], but {config.env_id} observes only {parts}: "
            "set obs_normalization=false"
        )
    names = list(getattr(env, "reward_term_names", ()))
    for term in config.train_reward_weights:
        if term not in names:
            close = difflib.get_close_matches(str(term), names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"train_reward_weights: {config.env_id} has no reward term {term!r}{hint}; its terms: {names}"
            )
    if config.train_reward_weights and not hasattr(env_params, "task_weights"):
        raise ConfigError(
            f"train_reward_weights needs the env's task weights (params.task_weights); "
            f"{config.env_id} has none"
        )
    if config.teacher_coef > 0:
        from hivex_jax.eval.rollout import find_scripted_policy

        if find_scripted_policy(env) is None:
            raise ConfigError(
                f"teacher_coef > 0 imitates the env's scripted controller; {config.env_id} has none"
            )
        if config.teacher_where == "safety" and not callable(getattr(env, "scripted_safety_mask", None)):
            raise ConfigError(
                f"teacher_where=safety needs the env's scripted_safety_mask; {config.env_id} has none: "
                "use teacher_where=all"
            )
    if config.algo == "mappo" and getattr(config, "critic_local_obs", False) and not has_vector:
        raise ConfigError(
            f"critic_local_obs appends obs['vector'] to MAPPO's critic input, but {config.env_id} "
            f"observes only {parts}: set critic_local_obs=false"
        )


def validate_env(config: PPOConfig) -> None:
    """Raise `ConfigError` unless `hivex_jax.make` accepts the config's env id, task, level and options,
    and the env has the observation parts the config's options need (builds the env once, compiles
    nothing)."""
    from baselines.common import make_env

    try:
        env, env_params = make_env(config)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int past int64
        message = one_line(exc)
        if config.env_id not in message:  # e.g. a value jnp cannot convert: say which options it was
            given = {"env_params": config.env_params, "env_options": config.env_options}
            message = (
                f"{config.env_id} with {', '.join(f'{k}={v}' for k, v in given.items() if v)}: {message}"
            )
        raise ConfigError(message) from exc
    check_env_fit(config, env, env_params)
    check_world_pool(config, env, env_params)


#: the most a pregenerated training world pool may hold (`PregeneratedWorldPool`'s own limit)
POOL_MAX_BYTES = 4 << 30


def check_world_pool(config: PPOConfig, env: Any, env_params: Any) -> None:
    """Raise a one-line `ConfigError` if `pregenerate_worlds` would build a train pool over
    `POOL_MAX_BYTES` (traces one reset only for pools of over 4096 worlds; smaller ones always fit)."""
    if not config.pregenerate_worlds or config.env_options.get("world_files") is not None:
        return
    count = len(world_seeds(config.train_worlds, "train_worlds"))
    if count <= 4096:
        return
    import jax

    from hivex_jax.core.seeding import world_key

    one = jax.eval_shape(env.reset, world_key(0), env_params)
    per_world = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(one))
    if per_world * count > POOL_MAX_BYTES:
        raise ConfigError(
            f"pregenerate_worlds: a pool of {count:,} train worlds needs {per_world * count / 2**30:.1f} GiB "
            f"({per_world / 2**10:.1f} KiB each), over {POOL_MAX_BYTES / 2**30:.0f} GiB: use fewer "
            "train_worlds or pregenerate_worlds=false"
        )


def fit_saved_config(config: PPOConfig) -> PPOConfig:
    """A run folder's config as this version reads it: runs saved before `cnn_channels` on an env without
    images was refused carry the old default (16, 32) there; it built nothing (the encoder has no image
    to convolve), so dropping it gives the same network and parameters."""
    if not config.cnn_channels:
        return config
    from baselines.common import make_env

    try:
        env, env_params = make_env(config)
    except (KeyError, TypeError, ValueError, OverflowError):
        return config  # validate_env says what is wrong with it
    if "visual" in env.observation_space(env_params).spaces:
        return config
    return config.replace(cnn_channels=[])
