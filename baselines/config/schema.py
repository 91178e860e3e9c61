"""The trainer config's fields, each declared once with its section and its kind.

Kinds (docs/training.md, "Config"), by what a key does to the compiled programs:
  - "static": changes the training program (a shape, a loop length, a branch, a module's structure):
    configs that differ in one need programs of their own;
  - "data": only a number a program computes with, so one program could take it as an input array
    (fused sweeps); a data key may also carry a `switch`, the part of its value that turns a
    piece of the program on or off (teacher_coef 0 is the program without the teacher), which is static;
  - "run": no compiled program is built from it (the host loop, outputs, which held-out worlds to play):
    runs that differ only in these share their programs (`baselines.run.population.HOST_ONLY_KEYS`).
Sections group the keys of a config file (`env:`, `ppo:`, `network:`, `extensions:`, `run:`); the
config object stays flat (`config.lr`).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Any

import yaml

from baselines.config.checks import check_config
from baselines.config.declare import data_key, is_given, is_on, run_key, static_key
from baselines.config.notes import recipe_notes, rounding_note
from baselines.config.synonyms import unknown_keys_error
from baselines.config.values import ConfigError, coerce_value, put_value, route_message_options
from hivex_jax.wrappers.messages import MESSAGE_OPTIONS

#: the sections of a config file, in the order a file lists them; `algo` (and `base`) stay top-level
SECTIONS = ("env", "ppo", "network", "extensions", "run")

#: version of the config.yaml layout a run folder records; bump when a field is renamed or changes meaning
FORMAT_VERSION = 1


@dataclass(frozen=True)
class PPOConfig:
    """Fields shared by IPPO and MAPPO. Sizes: envs x steps x agents samples per update."""

    algo: str = static_key(None, "ippo")
    # --- environment
    env_id: str = static_key("env", "WindFarmControl-v0")
    task: int = data_key("env", 0)
    level: int | None = data_key(
        "env", None
    )  # the env's level field (pattern / terrain_level); None = default
    num_agents: int | None = static_key("env", None)  # None = the env's default count
    env_options: dict = static_key("env", {})  # other static (constructor) options
    world_files: str | None = static_key("env", None)  # worlds from files (glob); = env_options.world_files
    env_params: dict = data_key("env", {})  # other EnvParams field overrides
    # world-seed pool of training episodes; data: a fused member draws from its own share of one pool of
    # every member's worlds (baselines.core.training_env), whose size is the program's shape
    train_worlds: str = data_key("env", "5000:6000")
    test_worlds: str = run_key(
        "env", "6000:6008"
    )  # held-out pool for evaluation (disjoint from train_worlds)
    pregenerate_worlds: bool = static_key("env", True)  # build every train world once (reset = a gather)
    # --- population and PPO
    seed: int = data_key("ppo", 0)  # a PRNG key
    num_seeds: int = static_key("ppo", 3)  # independent training seeds, a vmap axis
    num_envs: int = static_key("ppo", 8)
    num_steps: int = static_key("ppo", 128)  # rollout length per update (GAE bootstraps from V(final obs))
    # per seed; rounded up to whole chunks. Static: it sets the learning-rate anneal's length
    total_env_steps: int = static_key("ppo", 300_000)
    chunk_updates: int = static_key("ppo", 5)  # K: updates per compiled chunk (host logs between chunks)
    update_epochs: int = static_key("ppo", 4)
    num_minibatches: int = static_key("ppo", 16)
    lr: float = data_key("ppo", 1e-3)  # the start of the anneal schedule when anneal_lr
    anneal_lr: bool = static_key("ppo", True)
    gamma: float = data_key("ppo", 0.99)
    gae_lambda: float = data_key("ppo", 0.95)
    clip_eps: float = data_key("ppo", 0.2)
    clip_value_eps: float = data_key("ppo", 0.0, is_on)  # value-function clipping range (<= 0 disables)
    ent_coef: float = data_key("ppo", 0.005)
    # entropy bonus of the hybrid action's parts: the Gaussian (continuous dims) and the categoricals
    # (discrete branches); None = ent_coef
    ent_coef_continuous: float | None = data_key("ppo", None, is_given)
    ent_coef_discrete: float | None = data_key("ppo", None, is_given)
    vf_coef: float = data_key("ppo", 0.5)
    max_grad_norm: float = data_key("ppo", 0.5)
    normalize_advantages: bool = static_key("ppo", True)
    # running per-feature mean/var of obs["vector"] (stored with the params, so checkpoints and
    # evaluation use them); the actor and critic read (obs - mean) / std clipped to +-obs_norm_clip
    obs_normalization: bool = static_key("ppo", False)
    obs_norm_clip: float = data_key("ppo", 10.0)
    reward_scaling: str = static_key("ppo", "none")  # "none" or "return_std" (running std of the return)
    # {reward term: scale}: the critic gets a head per named term of the training reward besides the rest;
    # head k learns the return of term / scale and its advantage counts scale times
    # (baselines.core.value_heads)
    value_heads: dict = static_key("ppo", {})
    # {term: scale}: a named head's scale moves linearly from its value_heads scale (until update
    # value_heads_anneal_updates[0]) to this one (at value_heads_anneal_updates[1]); {}: constant scales
    value_heads_final: dict = static_key("ppo", {})
    value_heads_anneal_updates: tuple = static_key("ppo", (0, 0))
    # --- networks
    hidden_sizes: tuple = static_key("network", (64, 64))
    cnn_channels: tuple = static_key("network", ())  # convs over obs["visual"]; () = image flattened
    activation: str = static_key("network", "tanh")
    init_log_std: float = data_key("network", -0.5)  # an initial parameter value
    # "gru": the actor is recurrent (a GRU of gru_size units over its encoder output, reset at every
    # episode start; PPO minibatches are whole env sequences); the critic stays feed-forward
    recurrent: str = static_key("network", "none")
    gru_size: int = static_key("network", 128)
    # the convolutions over obs["visual"]: "strided3" (3x3/2 SAME per cnn_channels entry) or "hivex_simple"
    # (ML-Agents' simple encoder HIVEX used: 8x8/4 then 4x4/2, VALID; two cnn_channels)
    visual_encoder: str = static_key("network", "strided3")
    shared_encoder: bool = static_key("network", False)  # IPPO: the critic is a head on the actor's encoder
    # --- extensions (training only; evaluation and the "return" metrics keep the env's reward)
    # {term name: weight} re-weights info["raw_reward_terms"] in training rollouts (terms not named keep
    # the env's task weight)
    train_reward_weights: dict = data_key("extensions", {}, is_on)
    # > 0: weights move linearly to the env's over N updates
    train_reward_weights_anneal_updates: int = data_key("extensions", 0, is_on)
    # each agent's reward becomes (1 - s) r_i + s * mean of its env's active agents' r (s = 1: a team reward)
    train_reward_sharing: float = data_key("extensions", 0.0, is_on)
    # a training-time teacher (off at 0): teacher_coef * mean -log pi(scripted action | obs) over the
    # decisions where it applies (teacher_where) joins the loss, moving linearly to 0 at update
    # teacher_anneal_updates (0 = constant); the actions taken stay the policy's own
    teacher_coef: float = data_key("extensions", 0.0, is_on)
    teacher_where: str = static_key("extensions", "all")  # "all" or "safety" (env.scripted_safety_mask)
    teacher_anneal_updates: int = data_key("extensions", 0, is_on)
    # EnvParams field overrides for training rollouts only, on top of env_params (evaluation plays
    # env_params): e.g. {max_steps: 500} for ten times the episode starts per env step
    train_env_params: dict = data_key("extensions", {})
    # > 0: the train_env_params fields move linearly to env_params' values over N updates (a curriculum of
    # the training env: baselines.core.extensions.env_anneal)
    train_env_params_anneal_updates: int = static_key("extensions", 0)
    # with an anneal: the values of some train_env_params fields at update 0, moving linearly to
    # train_env_params' values by update N, which then stay (the switch, static: which fields)
    train_env_params_start: dict = data_key("extensions", {}, sorted)
    # --- evaluation, logging, outputs
    # XLA's LLVM optimisation level (0-3) of the training program on a CPU backend; None = the process's
    # (`hivex` commands compile at 1 on CPU-only installs, baselines/cli/common.py). Static: another level
    # is another program, with other float32 rounding. Accelerators ignore it
    cpu_compile_level: int | None = static_key("run", None)
    # RNG stream of evaluation, independent of training seeds (the evaluation program's PRNG key)
    eval_seed: int = data_key("run", 12345)
    eval_every: int = run_key("run", 6)  # chunks between held-out evaluations (greedy); 0 = only at the end
    # processes beside a CPU run that train a share of each chunk and play some of its held-out evaluation
    # (baselines.run.helpers): None = one per idle core on the camera envs' long evaluations; 0 = none
    cpu_helpers: int | None = run_key("run", None)
    # stop at the first evaluation whose greedy held-out return, averaged over seeds, reaches this;
    # summary.json records the time to it. None = run all updates
    stop_at_test_return: float | None = run_key("run", None)
    checkpoint_every: int = run_key("run", 20)  # chunks between checkpoints (always one at the end)
    gif_stride: int = run_key("run", 50)  # env steps between GIF frames
    gif_frames: int = run_key("run", 100)
    name: str | None = run_key("run", None)  # run name under out_dir; None = from algo/env/task + time
    out_dir: str = run_key("run", "runs")
    # experiment tracking beside metrics.csv (baselines.run.loggers): "none", "tensorboard" or "wandb"
    logger: str = run_key("run", "none")
    logger_project: str | None = run_key("run", None)  # the W&B project; None: WANDB_PROJECT, else hivex_jax

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
        """Raise `ConfigError` on an impossible combination (`config_checks.check_config`)."""
        if self.algo not in ALGORITHMS:
            raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}; got {self.algo!r}")
        check_config(self)

    def rounding_note(self) -> str | None:
        """`baselines.config.notes.rounding_note` of this config."""
        return rounding_note(self)

    def recipe_notes(self) -> list[str]:
        """`baselines.config.notes.recipe_notes` of this config."""
        return recipe_notes(self)

    # ------------------------------------------------------------------------------ conversions
    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for k, v in out.items():
            if isinstance(v, tuple):
                out[k] = list(v)
        return out

    def to_yaml(self) -> str:
        """The config as flat YAML headed by `format_version` (what a run folder's config.yaml holds:
        every key, flat, so any version that reads format_version 1 reads it)."""
        return yaml.safe_dump({"format_version": FORMAT_VERSION, **self.to_dict()}, sort_keys=False)

    def replace(self, **changes: Any) -> PPOConfig:
        return from_dict({**self.to_dict(), **changes})


@dataclass(frozen=True)
class IPPOConfig(PPOConfig):
    """Independent PPO: shared-parameter actor and critic on local observations."""

    algo: str = static_key(None, "ippo")


@dataclass(frozen=True)
class MAPPOConfig(PPOConfig):
    """MAPPO: the IPPO actor; the critic sees `env.global_state` plus a one-hot agent id."""

    algo: str = static_key(None, "mappo")
    critic_agent_id: bool = static_key("network", True)  # append the one-hot agent id to the global state
    # also append the agent's own local `vector` obs ("agent-specific"); and its `visual` (a CNN of its own)
    critic_local_obs: bool = static_key("network", True)
    critic_local_visual: bool = static_key("network", False)
    critic_heads_local: bool = static_key("network", False)  # value heads on a critic of the local obs alone


ALGORITHMS: dict[str, type[PPOConfig]] = {"ippo": IPPOConfig, "mappo": MAPPOConfig}


# ---------------------------------------------------------------------------------- declarations
def declared_fields() -> dict[str, dataclasses.Field]:
    """Every config field of every algorithm by name (MAPPO's critic options included)."""
    return {f.name: f for cls in ALGORITHMS.values() for f in dataclasses.fields(cls)}


def key_kind(name: str) -> str:
    """The kind ("static", "data" or "run") of a config key, flat or sectioned (`ppo.lr`); `env_params.x`
    is its dict key's kind, and a message option (routed into env_options) is static."""
    section, _, rest = name.partition(".")
    top = rest.split(".", 1)[0] if section in SECTIONS and rest else section
    if top in MESSAGE_OPTIONS:
        return "static"
    fields = declared_fields()
    if top not in fields:
        raise ConfigError(f"{name!r} is not a config key")
    return fields[top].metadata["kind"]


def key_section(name: str) -> str | None:
    """The file section a config key is written in (None: top-level, `algo`)."""
    if name in MESSAGE_OPTIONS:
        return "extensions"
    fields = declared_fields()
    if name not in fields:
        raise ConfigError(f"{name!r} is not a config key")
    return fields[name].metadata["section"]


def keys_of_kind(kind: str) -> tuple[str, ...]:
    """The config keys declared as `kind`, in field order."""
    return tuple(name for name, f in declared_fields().items() if f.metadata["kind"] == kind)


def program_signature(config: PPOConfig) -> dict[str, Any]:
    """What selects the compiled training program: the static keys' values and the data keys' switches.
    Configs with equal signatures differ only in values one program could take as data."""
    signature: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.metadata["kind"] == "static":
            signature[f.name] = value
        elif f.metadata["switch"] is not None:
            signature[f.name] = f.metadata["switch"](value)
    return signature


# ---------------------------------------------------------------------------------------- sections
def flatten_sections(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with its sections (`ppo: {lr: ...}`) spread into flat keys (`lr: ...`); top-level keys
    stay. A known key in another section than its own, or given twice, is a `ConfigError`."""
    fields = declared_fields()
    flat: dict[str, Any] = {}
    for top, value in values.items():
        if top not in SECTIONS:
            put_value(flat, top, value)
            continue
        if value is None:  # an empty section (`run:` with every key commented out)
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{top}: a section is a mapping of key: value; got {value!r}")
        for key, entry in value.items():
            key = str(key)
            name, _, sub = key.partition(".")  # `env.env_params.x=1` on the command line
            if name in fields or name in MESSAGE_OPTIONS:
                home = key_section(name)
                if home != top:
                    where = f"the {home} section" if home else "the top level"
                    raise ConfigError(f"{name} belongs in {where}, not in {top}")
            put_value(flat, name, {sub: entry} if sub else entry)
    return flat


def flat_layer(values: dict[str, Any]) -> dict[str, Any]:
    """One file's (or the command line's) values, flat, message options routed into env_options."""
    return route_message_options(flatten_sections(values))


# ---------------------------------------------------------------------------------------- building
def from_dict(values: dict[str, Any]) -> PPOConfig:
    """Build the config class named by `values["algo"]` (default ippo) from flat or sectioned values;
    unknown keys are errors."""
    values = dict(values)
    version = values.pop("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ConfigError(
            f"format_version {version!r}: written by another version of hivex_jax; this one reads "
            f"format_version {FORMAT_VERSION} (use the hivex_jax version that wrote it)"
        )
    if "base" in values:
        raise ConfigError("base: names the file a config file inherits from; only a config file has one")
    values = flat_layer(values)
    algo = str(values.get("algo", "ippo")).lower()
    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}; got {algo!r}")
    cls = ALGORITHMS[algo]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(values) - set(hints))
    if unknown:
        keys_by_algo = {a: typing.get_type_hints(c) for a, c in ALGORITHMS.items()}
        raise ConfigError(unknown_keys_error(unknown, algo, keys_by_algo))
    kwargs = {k: coerce_value(k, v, hints[k]) for k, v in values.items()}
    kwargs["algo"] = algo
    return cls(**kwargs)
