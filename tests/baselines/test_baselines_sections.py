"""The parts of a config the trainer's pieces read (`baselines.config.sections`) and the cache keys computed
once (`ProgramKeys`): each part holds its config keys' values and no others, the keys are the ones the
program cache always used, and `make_train` is the only piece of the core that reads the config: its
constructors get their parts, and tracing the compiled chunk reads nothing more."""

import dataclasses

import jax
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.config import (
    ExtensionsConfig,
    NetworkConfig,
    OptimizerConfig,
    PPOScalars,
    ValueHeadsConfig,
    from_dict,
    key_section,
)
from baselines.config.schema import declared_fields
from baselines.core.member import ENV_MEMBER_KEYS, UPDATE_ONLY_KEYS
from baselines.core.ppo import make_train
from baselines.core.program_cache import ProgramKeys, compute_key
from baselines.studies.config_walk import Read, recording

pytestmark = pytest.mark.timeout(600)


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _section_keys(section: str) -> set[str]:
    return {name for name in declared_fields() if key_section(name) == section}


def test_the_network_and_extensions_parts_are_their_file_sections():
    assert _names(NetworkConfig) == _section_keys("network") | {"centralised_critic"}
    assert _names(ExtensionsConfig) == _section_keys("extensions")
    # the other parts name config keys (or say what they derive)
    for cls, derived in (
        (ValueHeadsConfig, set()),
        (OptimizerConfig, {"schedule_steps"}),
        (PPOScalars, set()),
    ):
        assert _names(cls) - derived <= set(declared_fields()), cls


def test_a_part_holds_its_configs_values():
    ippo = from_dict({**TINY_CONFIG, "hidden_sizes": [7, 5], "recurrent": "gru", "teacher_coef": 0.25})
    network = NetworkConfig.of(ippo)
    assert (network.hidden_sizes, network.recurrent, network.gru_size) == ((7, 5), "gru", ippo.gru_size)
    # IPPO: no centralised critic, and MAPPO's critic options (keys an IPPO config lacks) off
    assert not network.centralised_critic and not network.critic_agent_id and not network.critic_heads_local
    mappo = from_dict(
        {**TINY_CONFIG, "algo": "mappo", "critic_local_obs": False, "critic_local_visual": True}
    )
    network = NetworkConfig.of(mappo)
    assert network.centralised_critic and network.critic_agent_id  # MAPPO's default
    assert (network.critic_local_obs, network.critic_local_visual) == (False, True)
    assert ExtensionsConfig.of(ippo).teacher_coef == 0.25
    scalars = PPOScalars.of(ippo.replace(lr=0.125, ent_coef_discrete=0.5))
    assert (scalars.lr, scalars.ent_coef_discrete, scalars.ent_coef_continuous) == (0.125, 0.5, None)


def test_the_optimizer_part_counts_the_schedule_in_minibatch_steps():
    config = from_dict(TINY_CONFIG)  # 192 env steps of 4 envs x 8 steps: 6 updates, 2 epochs of 2 minibatches
    options = OptimizerConfig.of(config)
    assert options.schedule_steps == 6 * 2 * 2
    assert (options.lr, options.max_grad_norm, options.anneal_lr) == (config.lr, config.max_grad_norm, True)


def test_program_keys_are_the_cache_keys_and_share_what_they_should():
    config = from_dict(TINY_CONFIG)
    keys = ProgramKeys.of(config)
    assert keys.compute == compute_key(config)
    assert keys.init_and_eval == compute_key(config, UPDATE_ONLY_KEYS)
    assert keys.setting_free == compute_key(config, UPDATE_ONLY_KEYS | ENV_MEMBER_KEYS)
    # a run key changes no program; an update-only key only the training one; the env setting all but
    # the setting-free one
    assert ProgramKeys.of(config.replace(name="other", eval_every=5)) == keys
    lr = ProgramKeys.of(config.replace(lr=0.5))
    assert lr.compute != keys.compute and lr.init_and_eval == keys.init_and_eval
    task = ProgramKeys.of(config.replace(task=1))
    assert task.init_and_eval != keys.init_and_eval and task.setting_free == keys.setting_free
    assert ProgramKeys.of(config.replace(num_envs=2)).setting_free != keys.setting_free


@pytest.mark.parametrize("changes", [{}, {"algo": "mappo", "value_heads": {"closeness": 1.0}}])
def test_make_train_reads_the_config_at_its_top_and_nothing_after(changes):
    config = from_dict({**TINY_CONFIG, **changes})
    reads: list[Read] = []
    with recording(reads):
        train = make_train(config)
        runner = train.init(jax.random.PRNGKey(0))
        during_build = len(reads)
        jax.eval_shape(train.update_chunk, runner)  # the chunk traced: rollout, GAE, epochs, loss
    readers = {r.module for r in reads}
    # the env's making and checks, the cache keys, the parts, then make_train itself; no constructor
    assert readers == {
        "baselines.config.env",
        "baselines.core.program_cache",
        "baselines.config.sections",
        "baselines.core.ppo",
    }
    assert {r.function for r in reads if r.module == "baselines.core.ppo"} == {"make_train"}
    assert len(reads) == during_build  # tracing reads no config field
    assert train.keys == ProgramKeys.of(config)
