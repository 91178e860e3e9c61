"""Other trainers' spellings of config keys: the unknown-key error suggests ours in one line, with no
list of every key, and a key the trainer declares is never redirected."""

import typing

import pytest

from baselines.config import ConfigError, load_config
from baselines.config.schema import ALGORITHMS
from baselines.config.synonyms import KEY_SYNONYMS, SYNONYM_NOTES, normalise_key, suggested_key

KEYS = {algo: set(typing.get_type_hints(cls)) for algo, cls in ALGORITHMS.items()}
ALL_KEYS = set().union(*KEYS.values())


def _refusal(*overrides: str) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(None, list(overrides))
    return str(err.value)


@pytest.mark.parametrize(
    "override, ours",
    [
        ("learning_rate=1e-3", "lr"),
        ("LR=1e-3", "lr"),  # PureJaxRL / JaxMARL write their keys in capitals
        ("NUM_ENVS=4", "num_envs"),
        ("n_envs=4", "num_envs"),
        ("gae-lambda=0.9", "gae_lambda"),
        ("lambda=0.9", "gae_lambda"),
        ("lam=0.9", "gae_lambda"),
        ("gae_lam=0.9", "gae_lambda"),
        ("entropy_coef=0.01", "ent_coef"),
        ("ent_coeff=0.01", "ent_coef"),
        ("beta=0.01", "ent_coef"),
        ("value_coef=0.5", "vf_coef"),
        ("vf_loss_coeff=0.5", "vf_coef"),
        ("clip_range=0.1", "clip_eps"),
        ("clip_param=0.1", "clip_eps"),
        ("n_steps=64", "num_steps"),
        ("n_epochs=3", "update_epochs"),
        ("ppo_epoch=3", "update_epochs"),
        ("num_mini_batch=4", "num_minibatches"),
        ("discount=0.9", "gamma"),
        ("grad_clip=1", "max_grad_norm"),
        ("total_timesteps=1000", "total_env_steps"),
        ("lerning_rate=1", "lr"),  # a typo of a synonym lands on our key too
    ],
)
def test_other_trainers_spellings_suggest_ours_in_one_line(override, ours):
    key = override.split("=")[0]
    assert _refusal(override) == f"unknown config key {key!r}: did you mean {ours!r}?"


def test_a_different_quantity_says_how_ours_differs():
    said = _refusal("batch_size=64")
    assert said.startswith("unknown config key 'batch_size': did you mean 'num_minibatches'? (")
    assert "num_envs x num_steps x agents / num_minibatches" in said


def test_no_key_dump_and_one_clause_per_key():
    said = _refusal("learning_rate=1", "n_envs=2", "zzz=1")
    assert "\n" not in said and "visual_encoder" not in said  # the old error listed every key
    assert said == (
        "unknown config keys 'learning_rate': did you mean 'lr'?; 'n_envs': did you mean 'num_envs'?; "
        "'zzz' (every key and what it does: docs/training.md#config)"
    )


def test_another_algos_key_names_that_algo():
    assert _refusal("critic_local_obs=false") == (
        "unknown config key 'critic_local_obs': a key of algo=mappo, not of ippo"
    )
    # under mappo it is a key like any other
    assert load_config(None, ["algo=mappo", "critic_local_obs=false"]).critic_local_obs is False


def test_every_synonym_points_at_a_declared_key():
    assert {ours for ours in KEY_SYNONYMS.values()} <= ALL_KEYS
    assert set(SYNONYM_NOTES) <= set(KEY_SYNONYMS)
    assert all(normalise_key(s) == s for s in KEY_SYNONYMS)  # looked up by their normalised spelling


def test_a_declared_key_is_never_redirected():
    # every key the trainer declares is suggested as itself (in any case), whatever the table holds; a
    # key added later that some table entry spells (e.g. a logger's) wins the same way
    for keys in KEYS.values():
        for key in keys:
            assert suggested_key(key.upper(), keys) == key
    assert suggested_key("learning_rate", {"learning_rate", "lr"}) == "learning_rate"
    assert suggested_key("learning_rate", {"gamma"}) is None  # a synonym whose key is missing is no guess
