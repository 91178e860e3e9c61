"""Which combinations of a sweep fuse, planned before anything compiles: configs with the same
`fusion_key` (`program_signature`: static keys and data switches, and the same values of the data keys
the fused trainer does not take per member) are members of one program (`plan_programs`). Env keys
(task, level, env_params, train_env_params) and the training reward's weights, anneal and sharing are
per member; members whose pregenerated pools differ each draw from their own pool within the pools
joined (`plan_sweep`, `FusedPopulation`). Running a planned program: `baselines.run.fused`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from baselines.config import PPOConfig
from baselines.config.schema import keys_of_kind, program_signature
from baselines.core.member import (
    ENV_MEMBER_KEYS,
    PPO_MEMBER_KEYS,
    REWARD_MEMBER_KEYS,
    WORLD_MEMBER_KEYS,
)
from baselines.core.ppo import make_train
from baselines.run.population import Population


def settings_differ(configs: Sequence[PPOConfig]) -> bool:
    """Whether `configs` differ in an env setting (`ENV_MEMBER_KEYS`: task, level, env params), so their
    pregenerated pools differ and their evaluations share one program only with the params as data."""
    return (
        len({json.dumps([getattr(c, k) for k in sorted(ENV_MEMBER_KEYS)], default=str) for c in configs}) > 1
    )


def fusion_key(config: PPOConfig) -> str:
    """Configs with equal keys can be members of one program: the program signature and the values of
    the data keys not taken per member."""
    per_member = set(PPO_MEMBER_KEYS) | ENV_MEMBER_KEYS | REWARD_MEMBER_KEYS | WORLD_MEMBER_KEYS
    fixed = {k: getattr(config, k) for k in keys_of_kind("data") if k not in per_member}
    return json.dumps(
        {"signature": program_signature(config), "fixed": fixed},
        sort_keys=True,
        default=str,
    )


def plan_programs(
    configs: Sequence[PPOConfig], fuse: bool = True, max_members: int | None = None
) -> list[list[int]]:
    """Indices of `configs` per program, in first-appearance order: one per config with `fuse=False`,
    else one per `fusion_key`, each cut into programs of at most `max_members` members."""
    if not fuse:
        return [[i] for i in range(len(configs))]
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(fusion_key(config), []).append(i)
    programs = []
    for members in groups.values():
        size = max_members or len(members)
        programs.extend(members[i : i + size] for i in range(0, len(members), size))
    return programs


def same_pool(a: Any, b: Any) -> bool:
    """Whether two `Train`s reset from the same training worlds: a pregenerated pool's arrays are equal
    (it was built for one env setting and ignores the params at reset); a plain pool builds each world
    from the params it is given, so any two agree."""
    pool_a, pool_b = getattr(a.training_env.pool, "pool", None), getattr(b.training_env.pool, "pool", None)
    if pool_a is None or pool_b is None:
        return pool_a is None and pool_b is None
    leaves_a, leaves_b = jax.tree.leaves(pool_a), jax.tree.leaves(pool_b)
    return len(leaves_a) == len(leaves_b) and all(
        x.shape == y.shape and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def split_by_pool(populations: Sequence[Population]) -> list[list[int]]:
    """Members (indices) grouped so that each group shares one training pool (`same_pool`)."""
    groups: list[list[int]] = []
    for i, population in enumerate(populations):
        for group in groups:
            if same_pool(populations[group[0]].train, population.train):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


#: the most memory the members' pregenerated pools of one program may take together (that of one pool,
#: `PregeneratedWorldPool`'s `max_bytes`); over it they generate their worlds at reset instead
JOINED_POOL_MAX_BYTES = 4 << 30


def plan_sweep(
    configs: Sequence[PPOConfig], fuse: bool = True, max_members: int | None = None
) -> tuple[list[list[int]], dict[int, Population]]:
    """`plan_programs`, for a program whose members differ in env keys with their trainers built (and
    returned by index for reuse): members whose pregenerated training pools differ (e.g. levels that
    generate other worlds) stay one program, each drawing from its own pool within the members' pools
    joined (`FusedPopulation`), the pools built by one program with the env params as data (the worlds
    their runs alone build, up to float rounding); only if those would take over `JOINED_POOL_MAX_BYTES`
    do they generate their worlds at reset instead (`pregenerate_worlds=false`: the same episodes,
    `TrainingEnv`)."""
    populations: dict[int, Population] = {}
    programs = []
    for program in plan_programs(configs, fuse, max_members):
        if not settings_differ([configs[i] for i in program]):
            programs.append(program)
            continue
        for i in program:  # their pools built by one program, the env params as data
            populations[i] = Population(make_train(configs[i], pool_as_data=True))
        groups = split_by_pool([populations[i] for i in program])
        pools = [populations[program[g[0]]].train.training_env.pool for g in groups]
        if len(groups) > 1 and sum(pool.bytes for pool in pools) > JOINED_POOL_MAX_BYTES:
            for i in program:  # too big to hold every member's pool: worlds generated at reset
                populations[i] = Population(make_train(configs[i].replace(pregenerate_worlds=False)))
        programs.append(program)
    return programs, populations


def describe_plan(programs: Sequence[Sequence[int]], num_seeds: Sequence[int]) -> str:
    """`"2 programs: 30 members x 3 seeds, 1 member x 3 seeds"` (said before anything compiles)."""

    def count(n: int, noun: str) -> str:
        return f"{n} {noun}{'s' if n != 1 else ''}"

    parts = [f"{count(len(p), 'member')} x {count(num_seeds[p[0]], 'seed')}" for p in programs]
    return f"{count(len(programs), 'program')}: " + ", ".join(parts)
