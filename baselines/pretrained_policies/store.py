"""The shipped policies' files and how one is loaded: `data/manifest.json` names each policy (`<algo>_<env>`,
e.g. `ippo_wfc`) with its env id, algorithm and files, each with its sha256 and size; `<name>.msgpack` holds
the actor's parameters (flax msgpack, float32; with `obs_normalization` also the actor's running
observation statistics) and `<name>.json` is its card, whose `config` rebuilds the network.

Every file is checked against the manifest before it is read: a missing, damaged or unreadable file, or
weights that do not fit the card's network, is one line (`PretrainedError`) naming the file; an env or
algorithm without a policy is one line listing those that exist.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization, traverse_util

from baselines.config import ConfigError, NetworkConfig, PPOConfig, fit_saved_config, from_dict, make_env
from baselines.core.inputs import ObsNormalization
from baselines.core.kernels import example_obs, running_stats_init
from baselines.core.policy import Policy, make_policy
from hivex_jax.core.errors import UserError

#: the shipped files: the manifest, and per policy its weights and card
DATA_DIR = Path(__file__).resolve().parent / "data"
MANIFEST = "manifest.json"
#: the manifest's format; a loader refuses another
FORMAT_VERSION = 1
#: what rebuilding a policy's files takes, named in the errors
REBUILD_HINT = "reinstall hivex-jax, or rebuild it with scripts/pretrained.py"


class PretrainedError(UserError):
    """A pretrained policy that does not exist or whose files are missing, damaged or do not fit."""


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at `path`."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(data_dir: Path | None = None) -> dict[str, Any]:
    """The manifest of `data_dir` (default `DATA_DIR`): `{"format_version", "policies": {name: entry}}`, or
    a one-line error."""
    path = Path(DATA_DIR if data_dir is None else data_dir) / MANIFEST
    if not path.is_file():
        raise PretrainedError(f"no pretrained policies: {path} is missing ({REBUILD_HINT})")
    try:
        manifest = json.loads(path.read_text())
        policies = manifest["policies"]
        version = manifest.get("format_version")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PretrainedError(f"{path} is unreadable ({type(exc).__name__}: {exc}); {REBUILD_HINT}") from exc
    if version != FORMAT_VERSION:
        raise PretrainedError(
            f"{path} has format_version {version!r}; this version of hivex-jax reads {FORMAT_VERSION}"
        )
    return {"format_version": version, "policies": dict(policies)}


def available(data_dir: Path | None = None) -> dict[str, list[str]]:
    """`{env_id: [algorithms]}` of the shipped policies, env ids and algorithms sorted."""
    found: dict[str, list[str]] = {}
    for entry in read_manifest(data_dir)["policies"].values():
        found.setdefault(entry["env_id"], []).append(entry["algo"])
    return {env_id: sorted(found[env_id]) for env_id in sorted(found)}


def _listing(manifest: dict[str, Any]) -> str:
    """'WindFarmControl-v0 (ippo, mappo), ...': every shipped env id with its algorithms."""
    by_env: dict[str, list[str]] = {}
    for entry in manifest["policies"].values():
        by_env.setdefault(entry["env_id"], []).append(entry["algo"])
    return ", ".join(f"{env} ({', '.join(sorted(algos))})" for env, algos in sorted(by_env.items()))


def policy_name(env: str, algo: str, manifest: dict[str, Any]) -> str:
    """The manifest's name of the `algo` policy of `env` (an env id, or its short name as in `ippo_wfc`:
    wfc, wrm, dbr, opc, aws; any case), or a one-line error listing what exists."""
    algo = str(algo).lower()
    policies = manifest["policies"]
    wanted = str(env).lower()
    matches = {
        name: entry
        for name, entry in policies.items()
        if wanted in (entry["env_id"].lower(), str(entry.get("env", "")).lower())
    }
    if not matches:
        raise PretrainedError(f"no pretrained policy for {env!r}; there are: {_listing(manifest)}")
    for name, entry in matches.items():
        if entry["algo"] == algo:
            return name
    env_id = next(iter(matches.values()))["env_id"]
    algos = sorted(entry["algo"] for entry in matches.values())
    raise PretrainedError(
        f"no pretrained {algo} policy for {env_id}; it has: {', '.join(algos)} (all: {_listing(manifest)})"
    )


def verified_file(data_dir: Path, name: str, entry: dict[str, Any], role: str) -> Path:
    """The path of policy `name`'s `role` file ("weights" or "card") once its sha256 matches the manifest."""
    try:
        file_name = entry[role]
        expected = entry["sha256"][file_name]
    except (KeyError, TypeError) as exc:
        raise PretrainedError(f"{Path(data_dir) / MANIFEST}: policy {name} has no {role} file entry") from exc
    path = Path(data_dir) / file_name
    if not path.is_file():
        raise PretrainedError(f"pretrained policy {name}: {path} is missing ({REBUILD_HINT})")
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise PretrainedError(
            f"pretrained policy {name}: {path} is unreadable ({exc}); {REBUILD_HINT}"
        ) from exc
    if actual != expected:
        raise PretrainedError(
            f"pretrained policy {name}: {path} fails its sha256 check (manifest {expected[:12]}..., file "
            f"{actual[:12]}...): the file is damaged; {REBUILD_HINT}"
        )
    return path


def policy_config(card: dict[str, Any]) -> PPOConfig:
    """The config a card's network is rebuilt from: the trained config, with one seed."""
    return fit_saved_config(from_dict({**card["config"], "num_seeds": 1}))


def make_actor(config: PPOConfig, env: Any) -> Policy:
    """The trained actor of `config` for `env`, as `make_train` builds it (its observation view included)."""
    view = ObsNormalization(config.obs_normalization, config.obs_norm_clip, config.algo == "mappo").actor_view
    return make_policy(NetworkConfig.of(config), env, view)


def params_template(config: PPOConfig, env: Any, env_params: Any, policy: Policy) -> dict[str, Any]:
    """Shapes and dtypes of what a policy file holds: `{"actor": ...}` (+ `"obs_norm": {"actor": stats}`)."""
    example = example_obs(env, env_params)
    actor = jax.eval_shape(lambda key: policy.init(key, example, env.num_agents), jax.random.PRNGKey(0))
    template: dict[str, Any] = {"actor": actor}
    if config.obs_normalization:
        template["obs_norm"] = {"actor": running_stats_init(example["vector"].shape[-1:])}
    return template


def read_weights(path: Path, name: str, template: dict[str, Any]) -> dict[str, Any]:
    """The parameters in `path` as jax arrays, in `template`'s structure; a one-line error if the file is
    not flax msgpack or its arrays are not the template's (names, shapes, dtypes)."""
    try:
        state = serialization.msgpack_restore(path.read_bytes())
    except Exception as exc:  # msgpack raises its own types for any corrupt byte
        raise PretrainedError(f"pretrained policy {name}: {path} is not readable weights ({exc})") from exc
    want = traverse_util.flatten_dict(serialization.to_state_dict(template), sep="/")
    got = traverse_util.flatten_dict(state, sep="/") if isinstance(state, dict) else {}
    mismatched = sorted(
        key
        for key in set(want) | set(got)
        if key not in want
        or key not in got
        or tuple(np.shape(got[key])) != tuple(want[key].shape)
        or np.asarray(got[key]).dtype != want[key].dtype
    )
    if mismatched:
        raise PretrainedError(
            f"pretrained policy {name}: {path} does not fit the network its card describes "
            f"({len(mismatched)} arrays differ, e.g. {mismatched[0]!r}); {REBUILD_HINT}"
        )
    arrays = jax.tree.map(jnp.asarray, state)
    return serialization.from_state_dict(template, arrays)


@dataclasses.dataclass(frozen=True, eq=False)  # compared and hashed by identity: it holds arrays
class Pretrained:
    """A shipped policy: its parameters, its card and the actor that runs them.

    `act(params, obs, key) -> action` is the policy of one env: `obs` is the env's observation dict
    `[A, ...]`, the action dict `{"continuous": f32[A, C], "discrete": i32[A, B]}` the env's `step` takes;
    greedy (the distribution's mode) unless `greedy=False`. It is pure: `jax.jit(policy.act)`, and
    `jax.vmap(policy.act, in_axes=(None, 0, 0))` over a batch of envs. A recurrent policy (`recurrent`:
    Ocean Plastic Collection's GRU) acts with `step(params, obs, key, memory) -> (action, memory)` from
    `initial_memory()` at each episode's start; its `act` refuses in one line.
    """

    name: str  # "<algo>_<env>", e.g. "ippo_wfc"
    env_id: str
    algo: str
    config: PPOConfig  # the trained config with num_seeds=1: rebuilds the network and the env
    params: dict[str, Any]  # {"actor": ...} (+ "obs_norm": {"actor": RunningMeanStd})
    card: dict[str, Any]
    policy: Policy  # baselines.core.policy: the actor's interface
    env: Any
    env_params: Any
    greedy: bool = True
    weights_sha256: str = ""  # the manifest's: names this version of the weights (a transfer matrix's row)

    @property
    def recurrent(self) -> bool:
        """Whether the actor carries a memory between steps (a GRU)."""
        return bool(self.policy.recurrent)

    def with_greedy(self, greedy: bool) -> Pretrained:
        """The same policy acting greedily (mode) or stochastically (a sample with `key`)."""
        return dataclasses.replace(self, greedy=bool(greedy))

    def initial_memory(self) -> jax.Array | None:
        """The memory an episode starts from: `f32[A, H]` for a recurrent policy, else None."""
        return self.policy.initial_memory((self.env.num_agents,)) if self.recurrent else None

    def _choose(self, dist: Any, key: jax.Array) -> dict:
        return dist.mode() if self.greedy else dist.sample(key)

    def act(self, params: dict[str, Any], obs: dict[str, jax.Array], key: jax.Array) -> dict[str, jax.Array]:
        """The action of one env's agents on `obs` `[A, ...]` (a feed-forward policy)."""
        if self.recurrent:
            raise PretrainedError(
                f"pretrained policy {self.name} is recurrent (a GRU): act with step(params, obs, key, "
                "memory), starting each episode from initial_memory()"
            )
        return self._choose(self.policy.step(params, obs, None, None)[1], key)

    def step(
        self, params: dict[str, Any], obs: dict[str, jax.Array], key: jax.Array, memory: Any = None
    ) -> tuple[dict[str, jax.Array], Any]:
        """`(action, memory)` on one env's `obs` `[A, ...]` after `memory` (`f32[A, H]`: `initial_memory()`
        at an episode's first step, then what the last step returned; None for a feed-forward policy)."""
        if not self.recurrent:
            return self.act(params, obs, key), None
        episode_start = jnp.zeros(memory.shape[:-1], bool)  # the caller passes initial_memory() then
        memory, dist = self.policy.step(params, obs, memory, episode_start)
        return self._choose(dist, key), memory


def load(env: str, algo: str = "ippo", greedy: bool = True, data_dir: str | Path | None = None) -> Pretrained:
    """The `algo` policy of `env` (an env id or short name) in `data_dir` (default: the shipped ones,
    `DATA_DIR`), its files checked against the manifest."""
    data_dir = Path(DATA_DIR if data_dir is None else data_dir)
    manifest = read_manifest(data_dir)
    name = policy_name(env, algo, manifest)
    entry = manifest["policies"][name]
    card_path = verified_file(data_dir, name, entry, "card")
    try:
        card = json.loads(card_path.read_text())
        config = policy_config(card)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # ConfigError is a ValueError
        why = exc if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        raise PretrainedError(f"pretrained policy {name}: card {card_path} is unreadable ({why})") from exc
    env_obj, env_params = make_env(config)
    actor = make_actor(config, env_obj)
    template = params_template(config, env_obj, env_params, actor)
    params = read_weights(verified_file(data_dir, name, entry, "weights"), name, template)
    sha = entry["sha256"][entry["weights"]]
    return Pretrained(
        name, config.env_id, config.algo, config, params, card, actor, env_obj, env_params, bool(greedy), sha
    )


def pretrained(env_id: str, algo: str = "ippo", greedy: bool = True) -> Pretrained:
    """The shipped `algo` ("ippo" or "mappo") policy of `env_id` (e.g. "WindFarmControl-v0", or "wfc")."""
    return load(env_id, algo, greedy)
