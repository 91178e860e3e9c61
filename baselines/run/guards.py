"""What refuses or stops a run: a `--resume` that would change what the checkpoint holds, and an update
whose loss, gradients or parameters are no longer finite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from baselines.config import ConfigError, PPOConfig, fit_saved_config
from baselines.core.kernels import FINITE_FLAGS
from baselines.run import checkpoint
from baselines.run.files import provenance, write_summary
from baselines.run.population import Population


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
    "visual_encoder": "the network shapes",
    "shared_encoder": "the network shapes (the critic's encoder is the actor's)",
    "recurrent": "the network shapes and the saved state (the GRU memory)",
    "gru_size": "the network shapes and the saved state (the GRU memory)",
    "critic_agent_id": "the critic's input shape",
    "critic_local_obs": "the critic's input shape",
    "critic_local_visual": "the critic's input and network shapes",
    "critic_heads_local": "the critic's input and network shapes",
    "obs_normalization": "the saved params (running observation statistics)",
    "reward_scaling": "the saved state (running return statistics)",
    "value_heads": "the critic's outputs (one value per head, in its scale's units)",
    "chunk_updates": "the checkpoint's position is counted in chunks",
    "num_steps": "env steps are counted as updates x num_envs x num_steps",
}


def check_resume_config(saved: dict[str, Any], config: PPOConfig) -> None:
    """Raise `ResumeError` (one line) if `config` changes a `RESUME_FIXED_KEYS` key of the checkpoint's
    config `saved` (keys the checkpoint predates are not compared)."""
    now = config.to_dict()
    for key, why in RESUME_FIXED_KEYS.items():
        if key == "cnn_channels" and not now[key] and saved.get(key):
            # a run saved with cnn_channels on an env without images (it built nothing there)
            if not fit_saved_config(config.replace(cnn_channels=saved[key])).cnn_channels:
                continue
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


def stop_nonfinite(
    run_dir: Path, config: PPOConfig, population: Population, nonfinite: dict[str, Any], train_s: float
) -> None:
    """Record a divergence in summary.json, make sure a finite checkpoint exists, raise `NonFiniteError`."""
    latest = checkpoint.latest_step(run_dir)
    if latest is None:  # diverged before the first checkpoint: the initial state is a finite one
        meta = provenance(config.to_dict())
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
    if jax.process_index() == 0:  # with several processes (docs/distributed.md) process 0 writes
        write_summary(run_dir, summary)
    raise NonFiniteError(
        f"{who} of {config.num_seeds}: {nonfinite['quantity']} not finite (NaN/inf) at update "
        f"{nonfinite['update']}; stopped. The last finite checkpoint is update {latest}: continue with "
        f"`hivex train --resume {run_dir}` and a change such as a lower lr (now {config.lr:g})"
    )
