"""Other trainers' spellings of this trainer's config keys, for the unknown-key error: a user coming from
Stable-Baselines3, CleanRL, PureJaxRL / JaxMARL, RLlib, Brax, the MAPPO reference code or OpenAI Baselines
writes `learning_rate=1e-3` and is told `did you mean 'lr'?` in one line.

Layer: config, below the schema; imports nothing of the trainer.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

#: every key and what it does, named when an unknown key has no suggestion
KEYS_DOC = "docs/training.md#config"

#: another trainer's key (lower case, `_` for `-`) -> ours. Only unknown keys are looked up, so a key this
#: trainer declares (today or later) always wins over an entry here.
KEY_SYNONYMS: dict[str, str] = {
    # learning rate
    "learning_rate": "lr",
    "learningrate": "lr",
    "actor_lr": "lr",
    "critic_lr": "lr",
    "policy_lr": "lr",
    "step_size": "lr",
    "use_linear_lr_decay": "anneal_lr",
    "linear_lr_decay": "anneal_lr",
    "lr_annealing": "anneal_lr",
    "anneal_learning_rate": "anneal_lr",
    # population, budget and rollout
    "n_envs": "num_envs",
    "num_env": "num_envs",
    "n_env": "num_envs",
    "n_rollout_threads": "num_envs",
    "num_parallel_envs": "num_envs",
    "num_envs_per_worker": "num_envs",
    "n_steps": "num_steps",
    "nsteps": "num_steps",
    "rollout_length": "num_steps",
    "rollout_fragment_length": "num_steps",
    "unroll_length": "num_steps",
    "episode_length": "num_steps",
    "horizon": "num_steps",
    "total_timesteps": "total_env_steps",
    "n_timesteps": "total_env_steps",
    "num_timesteps": "total_env_steps",
    "num_env_steps": "total_env_steps",
    "total_steps": "total_env_steps",
    "timesteps": "total_env_steps",
    "n_seeds": "num_seeds",
    "random_seed": "seed",
    "rng_seed": "seed",
    # PPO epochs and minibatches
    "n_epochs": "update_epochs",
    "num_epochs": "update_epochs",
    "epochs": "update_epochs",
    "ppo_epochs": "update_epochs",
    "ppo_epoch": "update_epochs",
    "noptepochs": "update_epochs",
    "num_sgd_iter": "update_epochs",
    "num_updates_per_batch": "update_epochs",
    "k_epochs": "update_epochs",
    "n_minibatches": "num_minibatches",
    "nminibatches": "num_minibatches",
    "num_mini_batch": "num_minibatches",
    "num_minibatch": "num_minibatches",
    "minibatches": "num_minibatches",
    "batch_size": "num_minibatches",
    "minibatch_size": "num_minibatches",
    "mini_batch_size": "num_minibatches",
    "sgd_minibatch_size": "num_minibatches",
    # returns and advantages
    "discount": "gamma",
    "discount_factor": "gamma",
    "lambda": "gae_lambda",
    "lambda_": "gae_lambda",
    "lam": "gae_lambda",
    "lmbda": "gae_lambda",
    "gae_lam": "gae_lambda",
    "gae_tau": "gae_lambda",
    "normalize_advantage": "normalize_advantages",
    "norm_adv": "normalize_advantages",
    "advantage_normalization": "normalize_advantages",
    "standardize_advantages": "normalize_advantages",
    # the loss
    "entropy_coef": "ent_coef",
    "entropy_coeff": "ent_coef",
    "ent_coeff": "ent_coef",
    "entropy_cost": "ent_coef",
    "entropy_beta": "ent_coef",
    "entropy_weight": "ent_coef",
    "beta": "ent_coef",
    "value_coef": "vf_coef",
    "value_coeff": "vf_coef",
    "vf_coeff": "vf_coef",
    "vf_loss_coeff": "vf_coef",
    "value_loss_coef": "vf_coef",
    "value_loss_coeff": "vf_coef",
    "critic_coef": "vf_coef",
    "clip_range": "clip_eps",
    "cliprange": "clip_eps",
    "clip_param": "clip_eps",
    "clip_coef": "clip_eps",
    "clip_ratio": "clip_eps",
    "clip_epsilon": "clip_eps",
    "eps_clip": "clip_eps",
    "ppo_clip": "clip_eps",
    "clip_range_vf": "clip_value_eps",
    "vf_clip_param": "clip_value_eps",
    "value_clip": "clip_value_eps",
    "clip_vloss": "clip_value_eps",
    "use_clipped_value_loss": "clip_value_eps",
    "grad_clip": "max_grad_norm",
    "grad_norm_clip": "max_grad_norm",
    "clip_grad_norm": "max_grad_norm",
    "max_norm": "max_grad_norm",
    "gradient_clip": "max_grad_norm",
    # observations and rewards
    "normalize_observations": "obs_normalization",
    "normalize_obs": "obs_normalization",
    "norm_obs": "obs_normalization",
    "obs_norm": "obs_normalization",
    "use_feature_normalization": "obs_normalization",
    "clip_obs": "obs_norm_clip",
    "normalize_reward": "reward_scaling",
    "norm_reward": "reward_scaling",
    "reward_scale": "reward_scaling",
    "use_valuenorm": "reward_scaling",
    # networks
    "net_arch": "hidden_sizes",
    "hidden_size": "hidden_sizes",
    "hidden_dims": "hidden_sizes",
    "hidden_dim": "hidden_sizes",
    "layer_sizes": "hidden_sizes",
    "fcnet_hiddens": "hidden_sizes",
    "policy_hidden_layer_sizes": "hidden_sizes",
    "activation_fn": "activation",
    "fcnet_activation": "activation",
    "use_recurrent_policy": "recurrent",
    "use_rnn": "recurrent",
    "use_lstm": "recurrent",
    "rnn_hidden_dim": "gru_size",
    "recurrent_hidden_size": "gru_size",
    "log_std_init": "init_log_std",
    # environment and run
    "env_name": "env_id",
    "environment": "env_id",
    "n_agents": "num_agents",
    "agents": "num_agents",
    "eval_freq": "eval_every",
    "eval_interval": "eval_every",
    "evaluation_interval": "eval_every",
    "save_freq": "checkpoint_every",
    "save_interval": "checkpoint_every",
    "checkpoint_freq": "checkpoint_every",
    "checkpoint_interval": "checkpoint_every",
    "exp_name": "name",
    "experiment_name": "name",
    "run_name": "name",
    "output_dir": "out_dir",
    "save_dir": "out_dir",
}

#: what to add where the other trainer's key is not the same quantity as ours
SYNONYM_NOTES: dict[str, str] = {
    "batch_size": "a minibatch here is num_envs x num_steps x agents / num_minibatches samples",
    "minibatch_size": "a minibatch here is num_envs x num_steps x agents / num_minibatches samples",
    "mini_batch_size": "a minibatch here is num_envs x num_steps x agents / num_minibatches samples",
    "sgd_minibatch_size": "a minibatch here is num_envs x num_steps x agents / num_minibatches samples",
    "actor_lr": "one learning rate for actor and critic",
    "critic_lr": "one learning rate for actor and critic",
    "use_valuenorm": "reward_scaling=return_std divides rewards by the return's running std",
    "clip_vloss": "the value clip's range, <= 0 disables it",
    "use_clipped_value_loss": "the value clip's range, <= 0 disables it",
    "use_recurrent_policy": "recurrent=gru",
    "use_rnn": "recurrent=gru",
    "use_lstm": "recurrent=gru; the trainer has no LSTM",
    "episode_length": "the rollout length per update; the env's episode length is env_params.max_steps",
    "horizon": "the rollout length per update; the env's episode length is env_params.max_steps",
}


def normalise_key(key: str) -> str:
    """`key` as the synonym table spells it: lower case, `-` as `_`, no leading dashes (`--learning-rate`)."""
    return key.strip().lstrip("-").lower().replace("-", "_")


def suggested_key(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` most likely means (its own spelling in another case, another trainer's
    synonym, else the closest name among ours and the synonyms), or None."""
    known = sorted(set(known))
    plain = normalise_key(key)
    if plain in known:
        return plain
    if KEY_SYNONYMS.get(plain) in known:
        return KEY_SYNONYMS[plain]
    spellings = known + [s for s, ours in KEY_SYNONYMS.items() if ours in known]
    close = difflib.get_close_matches(plain, spellings, n=1)
    return KEY_SYNONYMS.get(close[0], close[0]) if close else None


def unknown_key_line(key: str, algo: str, keys_by_algo: Mapping[str, Iterable[str]]) -> str:
    """One clause of the unknown-key error for `algo`'s config: `'learning_rate': did you mean 'lr'?`,
    or the algo that has the key (`keys_by_algo`: {algo: its keys}), or where every key is listed."""
    known = set(keys_by_algo[algo]) - {"algo"}
    guess = suggested_key(key, known)
    plain = normalise_key(key)
    if guess != plain:  # not a case slip of one of ours: maybe another algo's key
        for other, keys in sorted(keys_by_algo.items()):
            if other != algo and plain in set(keys):
                return f"{key!r}: a key of algo={other}, not of {algo}"
    if guess is None:
        return f"{key!r} (every key and what it does: {KEYS_DOC})"
    note = SYNONYM_NOTES.get(plain) if KEY_SYNONYMS.get(plain) == guess else None
    return f"{key!r}: did you mean {guess!r}?" + (f" ({note})" if note else "")


def unknown_keys_error(keys: Iterable[str], algo: str, keys_by_algo: Mapping[str, Iterable[str]]) -> str:
    """The whole one-line error for the unknown `keys` of an `algo` config, with no list of every key."""
    keys = sorted(keys)
    lines = [unknown_key_line(k, algo, keys_by_algo) for k in keys]
    return f"unknown config key{'s' if len(keys) > 1 else ''} " + "; ".join(lines)
