"""Which config made a result record: the learning keys of a run's resolved config and its env's version,
with a fingerprint (a hash) of both, stored in each cell's record (`config_block`), and how a record
stands against the config its cell would train with now (`check_record`), which the results pages mark.

What is hashed: every key of the resolved config (`PPOConfig.to_dict()`, flat) but those that change
neither the training nor the recorded results (`NOT_LEARNING_KEYS`, each with why), plus the env's
version. The envs carry no version string beyond their id's `-v0`, so an env's version is its id and a
checksum of its golden rollouts (`hivex_jax.eval.golden`: fixed-key random rollouts of every task,
re-recorded in `tests/envs/golden_rollouts.json` only when the env's behaviour changes on purpose); where
that file is absent (an install without the tests) the id alone.

Comparing a record with the config now (`config_changes`) goes key by key over the stored learning keys:
a key the record lacks (added to the trainer since) counts as unchanged when its value now is its default,
since a new option's default keeps the behaviour from before it existed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baselines.config import PPOConfig, fit_saved_config, load_config
from hivex_jax.core.errors import one_line
from hivex_jax.eval.result_records import (
    CONFIG_CHANGED,
    CONFIG_CURRENT,
    CONFIG_NOT_RECORDED,
    ConfigCheck,
    rounded,
)

#: keys of a resolved config that change neither the training nor the recorded results, and why
NOT_LEARNING_KEYS = {
    "name": "the run folder's name",
    "out_dir": "where the run folder is written",
    "checkpoint_every": "when checkpoints are saved; the training between them is the same",
    "gif_stride": "the episode GIF's frame spacing",
    "gif_frames": "the episode GIF's length",
    "pregenerate_worlds": "worlds built once or at each reset: the same episodes either way",
    # as another machine or jax version: the record's summary names those, and accelerators ignore it
    "cpu_compile_level": "XLA's optimisation level on a CPU: the same training up to float32 rounding",
}
#: counts only with `stop_at_test_return` (it then sets where training may stop); without it, the
#: held-out evaluations between chunks are logged and change nothing that is trained or recorded
EVAL_EVERY = "eval_every"
#: the golden rollouts whose checksum versions each env (`env_version`)
GOLDEN_ROLLOUTS = Path(__file__).resolve().parents[2] / "tests" / "envs" / "golden_rollouts.json"
#: hex digits of a fingerprint or checksum kept (64 bits: no accidental collision among a few hundred)
DIGITS = 16


def _canonical(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same text for the same values on every machine."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()[:DIGITS]


def learning_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a flat resolved config (`PPOConfig.to_dict()`) that change its training or recorded
    results: all but `NOT_LEARNING_KEYS`, and `eval_every` without `stop_at_test_return`; tuples as lists,
    floats as a record keeps them (`result_records.rounded`), so a stored config hashes as it did."""
    dropped = set(NOT_LEARNING_KEYS)
    if values.get("stop_at_test_return") is None:
        dropped.add(EVAL_EVERY)
    # through JSON: tuples become lists and dict keys text, as a record stores them
    return rounded(json.loads(_canonical({k: v for k, v in values.items() if k not in dropped})))


def read_golden(path: str | Path = GOLDEN_ROLLOUTS) -> dict[str, Any] | None:
    """The golden rollouts file's content, or None where it is absent."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def env_version(env_id: str, golden: Mapping[str, Any] | None) -> str:
    """`"<env id> golden <checksum>"`: the env's id and a checksum of its golden rollouts (of the values,
    not the file's text); the id alone where `golden` (`read_golden`) is None or lacks the env."""
    if golden is None or env_id not in golden:
        return env_id
    return f"{env_id} golden {_digest(golden[env_id])}"


def config_fingerprint(values: Mapping[str, Any], version: str) -> str:
    """The fingerprint of a resolved config (flat, `PPOConfig.to_dict()`) on an env version (`env_version`):
    a sha256 of the learning keys' values (`learning_config`) and the version, `DIGITS` hex digits."""
    return _digest({"config": learning_config(values), "env": version})


def config_block(values: Mapping[str, Any], version: str, shipped: str, source: str) -> dict[str, Any]:
    """A record's `config`: the fingerprint, the env version, the learning keys' values, the shipped
    config file the cell trains with (`configs/<name>.yaml`) and where the values came from
    (`fingerprint_source`)."""
    return {
        "fingerprint": config_fingerprint(values, version),
        "env_version": version,
        "learning": learning_config(values),
        "shipped_config": shipped,
        "fingerprint_source": source,
    }


def not_recorded(why: str) -> dict[str, Any]:
    """A record's `config` when the config its run trained with is not known: no fingerprint, and why."""
    return {"fingerprint": None, "fingerprint_source": f"config not recorded: {why}"}


def config_now(config: PPOConfig, shipped: str, golden: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `config_block` of the config a cell would train with now (`config`: its shipped config `shipped`
    with the cell's settings, loaded), on its env's version now (`golden`: `read_golden`)."""
    version = env_version(config.env_id, golden)
    return config_block(config.to_dict(), version, shipped, "the shipped config now")


def run_config(run_dir: str | Path, shipped: str, golden: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `config_block` of the config a run folder trained with (its `config.yaml`, as this version reads
    it), on its env's version at record time (`golden`); `not_recorded` (saying why) when the folder has no
    config.yaml or this version cannot read it."""
    saved = Path(run_dir) / "config.yaml"
    if not saved.is_file():
        return not_recorded("the run folder has no config.yaml")
    try:
        config = fit_saved_config(load_config(saved))
    except Exception as exc:  # a folder from another version: say so rather than guess
        return not_recorded(f"this version cannot read the run folder's config.yaml ({one_line(exc)})")
    version = env_version(config.env_id, golden)
    return config_block(config.to_dict(), version, shipped, "the run folder's config.yaml at record time")


def defaults_of(config: PPOConfig) -> dict[str, Any]:
    """Every key's default value for `config`'s algorithm, as `to_dict` writes values."""
    return rounded(json.loads(_canonical(type(config)().to_dict())))


def _short(value: Any) -> str:
    """A value in a change line: JSON, at most 60 characters."""
    text = _canonical(value)
    return text if len(text) <= 60 else text[:57] + "..."


def config_changes(
    recorded: Mapping[str, Any], now: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[str]:
    """`"key recorded -> now"` for each learning key in which a record's `config` block differs from `now`'s
    (both `config_block`s), and `"env <version> -> <version>"` when the env's changed; a key the record
    lacks counts only when its value now is not its default (`defaults`), one it has that no longer exists
    always counts ("(absent)" stands for the missing side)."""
    missing = object()
    before, after = recorded["learning"], now["learning"]
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, missing), after.get(key, missing)
        if old is missing and new == defaults.get(key, missing):
            continue
        if old != new:
            changes.append(
                f"{key} {'(absent)' if old is missing else _short(old)} -> "
                f"{'(absent)' if new is missing else _short(new)}"
            )
    if recorded["env_version"] != now["env_version"]:
        changes.append(f"env {recorded['env_version']} -> {now['env_version']}")
    return changes


def check_record(
    record: Mapping[str, Any], now: Mapping[str, Any], defaults: Mapping[str, Any]
) -> ConfigCheck:
    """How a record stands against its cell's config now (`now`: a `config_block`): current (the same
    fingerprint, or no learning key changed but keys added since at their defaults), changed (with what),
    or not recorded (no fingerprint in the record)."""
    block = record.get("config") or not_recorded("the record predates config fingerprints")
    source = block.get("fingerprint_source", "")
    if block.get("fingerprint") is None:
        return ConfigCheck(CONFIG_NOT_RECORDED, (), source)
    if block["fingerprint"] == now["fingerprint"]:
        return ConfigCheck(CONFIG_CURRENT, (), source)
    changes = config_changes(block, now, defaults)
    return ConfigCheck(CONFIG_CHANGED if changes else CONFIG_CURRENT, tuple(changes), source)
