"""What a run says about its config before it starts: the rounding of `total_env_steps` to whole chunks,
and a warning per training-only recipe still on when training ends. Functions of a `PPOConfig` (`config`),
which its `rounding_note` / `recipe_notes` methods call."""

from __future__ import annotations

from typing import Any


def rounding_note(config: Any) -> str | None:
    """One line when `total_env_steps` is not a whole number of chunks and runs rounded up, else None."""
    if config.env_steps == config.total_env_steps:
        return None
    return (
        f"note: total_env_steps {config.total_env_steps:,} rounded up to {config.env_steps:,} per seed "
        f"(whole chunks of chunk_updates x num_envs x num_steps = {config.chunk_updates} x {config.num_envs} "
        f"x {config.num_steps} = {config.chunk_updates * config.steps_per_update:,} env steps)"
    )


def recipe_notes(config: Any) -> list[str]:
    """One warning line per training-only recipe that is still on when training ends: reward weights
    that never reach the env's own (a curriculum should anneal to them), or a teacher never annealed to 0
    (the evaluated policy is then partly behaviour cloning of the scripted controller)."""
    notes = []
    if (
        config.train_reward_weights
        and not 0 < config.train_reward_weights_anneal_updates <= config.num_updates
    ):
        notes.append(
            f"warning: train_reward_weights {dict(config.train_reward_weights)} never reach the env's "
            f"weights (train_reward_weights_anneal_updates {config.train_reward_weights_anneal_updates} of "
            f"{config.num_updates} updates): the policy is trained on another reward than it is "
            "evaluated on"
        )
    if config.teacher_coef > 0 and not 0 < config.teacher_anneal_updates <= config.num_updates:
        notes.append(
            f"warning: the teacher is never annealed to 0 (teacher_anneal_updates "
            f"{config.teacher_anneal_updates} of {config.num_updates} updates): the evaluated policy is "
            "partly behaviour cloning of the scripted controller"
        )
    if config.train_env_params_anneal_updates > config.num_updates:
        moving, goal = (
            (f"train_env_params_start {dict(config.train_env_params_start)}", "train_env_params")
            if config.train_env_params_start
            else (f"train_env_params {dict(config.train_env_params)}", "the env's values")
        )
        notes.append(
            f"warning: {moving} never reach {goal} "
            f"(train_env_params_anneal_updates {config.train_env_params_anneal_updates} of "
            f"{config.num_updates} updates)"
        )
    if config.value_heads_final and config.value_heads_anneal_updates[1] > config.num_updates:
        notes.append(
            f"warning: value_heads_final {dict(config.value_heads_final)} is reached at update "
            f"{config.value_heads_anneal_updates[1]}, after training ends ({config.num_updates} updates)"
        )
    return notes
