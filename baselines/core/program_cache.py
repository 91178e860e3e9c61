"""The program cache: a tiny LRU of traced and compiled programs keyed by the config's compute keys, so a
resumed run, `hivex evaluate` after `hivex train`, or a sweep over host-only keys in one process reuse
them. Below the core: the training env and the run layer both key their programs here, with the keys
`make_train` computes once (`ProgramKeys`, carried on `Train.keys`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from baselines.config import PPOConfig, keys_of_kind
from baselines.core.member import ENV_MEMBER_KEYS, UPDATE_ONLY_KEYS

#: config keys that only steer the host loop (declared "run" in `baselines.config.schema`): runs differing
#: in these share compiled programs
HOST_ONLY_KEYS = keys_of_kind("run")
_CACHE: dict[Any, Any] = {}
_CACHE_SIZE = 4


def cached(key: Any, build: Any) -> Any:
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


def compute_key(config: PPOConfig, without: frozenset[str] = frozenset()) -> str:
    """The config without host-only keys (and `without`), as canonical JSON."""
    values = {k: v for k, v in config.to_dict().items() if k not in HOST_ONLY_KEYS and k not in without}
    return json.dumps(values, sort_keys=True)


@dataclass(frozen=True)
class ProgramKeys:
    """A config's cache keys, computed once (`of`) and carried with its trainer (`Train.keys`), so the
    population, the training env and the evaluations key their programs without reading the config."""

    compute: str  # `compute_key`: the population's programs (training)
    # without `UPDATE_ONLY_KEYS`: configs with equal keys initialise a seed and evaluate a policy with the
    # same compiled programs (a fused sweep's lr x ent_coef members share them)
    init_and_eval: str
    setting_free: str  # also without the env setting (`ENV_MEMBER_KEYS`): shared by every env setting

    @classmethod
    def of(cls, config: PPOConfig) -> ProgramKeys:
        """The keys of `config`."""
        return cls(
            compute_key(config),
            compute_key(config, UPDATE_ONLY_KEYS),
            compute_key(config, UPDATE_ONLY_KEYS | ENV_MEMBER_KEYS),
        )
