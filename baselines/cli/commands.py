"""The trainer's parts of the `hivex` command, which finds them through the `hivex_jax.commands` entry-point
group (pyproject.toml): `train`, `evaluate`, `sweep`, `transfer` (in `baselines.cli.train`, `.evaluate`,
`.sweep`, `.transfer`), `bench-train` and `pretrained-policy` (`hivex render --pretrained`; here), so the
`hivex_jax` library imports nothing from `baselines`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def bench_train(
    config_path: str,
    num_updates: int,
    overrides: Sequence[str] = (),
    profile: bool = False,
    variants: Sequence[Sequence[str]] = (),
    repeats: int = 3,
) -> Callable[[], dict[str, Any]]:
    """`hivex bench --train CONFIG [--train-set KEY=VALUE ...] [--profile [--compare KEY=VALUE ...]]`:
    check the config with its `overrides` (and each of `variants`, more overrides on top) now, a
    `UserError` before anything compiles, and return the measurement to run later:
    `baselines.cli.bench.train_throughput(...)`'s dict, or with `profile`
    `baselines.cli.profile.train_profile(...)`'s (timed in `repeats` rounds), whose `"table"` is the profile
    as text."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.config import load_config, validate_env
    from hivex_jax.core.errors import UserError

    if variants and not profile:
        raise UserError("--compare adds variants to the profile: give --profile too")
    for extra in [(), *variants]:
        validate_env(load_config(config_path, [*overrides, *extra, f"chunk_updates={int(num_updates)}"]))

    def measure() -> dict[str, Any]:
        if not profile:
            # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
            from baselines.cli.bench import train_throughput

            return train_throughput(config_path, list(overrides), num_updates)
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.cli.profile import train_profile
        from baselines.cli.profile_report import profile_table

        result = train_profile(
            config_path, list(overrides), num_updates, [list(v) for v in variants], repeats
        )
        return {**result, "table": profile_table(result)}

    return measure


def pretrained_policy(env: str, algo: str = "ippo") -> dict[str, Any]:
    """`hivex render --pretrained ENV [--algo mappo]`: the shipped policy as the GIF plays it, `{"env",
    "env_params", "policy", "policy_params", "name"}` (`policy(policy_params, key, obs, state)`, greedy, on
    `env`: the card's env, for a recurrent policy with its memory in the state); files checked, an unknown
    env or algorithm or a damaged file a `UserError`."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.pretrained_policies import pretrained
    from baselines.pretrained_policies.play import rollout_policy

    loaded = pretrained(env, algo)
    env_obj, policy = rollout_policy(loaded)
    return {
        "env": env_obj,
        "env_params": loaded.env_params,
        "policy": policy,
        "policy_params": loaded.params,
        "name": loaded.name,
    }
