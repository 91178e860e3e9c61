"""`BASELINES_EXACT_AS_DATA` (and `..._IN_TURN`, with the baselines played in turn): on the listed envs the
baselines' program with the env params as data scores what the constant-params program scores, bit for
bit, so a fused sweep over their settings may play them all with one program (docs/sweeps.md)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from baselines.run.eval_policies import (
    BASELINES_EXACT_AS_DATA,
    BASELINES_EXACT_AS_DATA_IN_TURN,
    SettingBaselines,
    baseline_factory,
    baseline_policies,
)
from hivex_jax.eval import rollout

WORLDS = np.arange(6000, 6002)


def _settings(env_id: str) -> list[dict]:
    """The first and last task, and the last level where the env has levels."""
    env, _ = hivex_jax.make(env_id)
    last_task = env.param_bounds["task"][1]
    settings = [{"task": 0}, {"task": last_task}]
    if getattr(env, "level_field", None):
        settings.append({"task": 0, "level": env.param_bounds[env.level_field][1]})
    return settings


#: (env, in_turn): both ways on the envs of BASELINES_EXACT_AS_DATA, in turn on those of ..._IN_TURN
CASES = [(env_id, in_turn) for env_id in sorted(BASELINES_EXACT_AS_DATA) for in_turn in (False, True)] + [
    (env_id, True) for env_id in sorted(BASELINES_EXACT_AS_DATA_IN_TURN)
]


@pytest.mark.slow  # two compiles per setting, full episodes: ~1 min on the 2-core CPU
@pytest.mark.parametrize(("env_id", "in_turn"), CASES)  # vmapped (accelerators) or in turn (one CPU device)
def test_baselines_with_params_as_data_equal_the_constant_params_program(env_id, in_turn):
    env, params = hivex_jax.make(env_id)
    names = baseline_policies(env, params)[0]
    key = jax.random.PRNGKey(0)
    program = rollout.Evaluator(
        env,
        hivex_jax.stack_params([params]),
        baseline_factory(env),
        WORLDS,
        key,
        None,
        True,
        True,
        in_turn=in_turn,
    )
    for setting in _settings(env_id):
        env, params = hivex_jax.make(env_id, **setting)
        constant = rollout.Evaluator(
            env, params, baseline_policies(env, params)[1], WORLDS, key, batched=True, in_turn=in_turn
        )
        want = constant(jnp.arange(len(names)))
        got = SettingBaselines(program, hivex_jax.stack_params([params]))(jnp.arange(len(names)))
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{env_id} {setting}")
