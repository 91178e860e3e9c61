import itertools

import jax
import pytest

import hivex_jax
from hivex_jax.core.check import check_env


@pytest.fixture(scope="module")
def default_env():
    return hivex_jax.make("WindFarmControl-v0")


def test_check_env_default_full(default_env):
    env, params = default_env
    check_env(env, params)  # eager vs jit, mixed 9 patterns x 2 tasks batch with one trace


@pytest.mark.parametrize("task,pattern", list(itertools.product((0, 1), range(9))))
def test_check_env_every_task_and_pattern(default_env, task, pattern):
    env, params = default_env
    check_env(env, env.variant_params(params, task=task, level=pattern), eager=False, mixed=False)


@pytest.mark.parametrize(
    # the 16-turbine farm is a third env object to compile, with its mixed batch: -m slow
    "num_agents",
    [1, pytest.param(16, marks=pytest.mark.slow)],
)
def test_check_env_smallest_and_largest_farm(num_agents):
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=num_agents)
    check_env(env, env.variant_params(params, task=1, level=8), eager=False, mixed=num_agents == 16)


def test_mixed_patterns_and_tasks_trace_step_once(default_env):
    env, params = default_env
    variants = [env.variant_params(params, task=t, level=p) for t in (0, 1) for p in range(9)]
    batch = hivex_jax.stack_params(variants)
    keys = jax.random.split(jax.random.PRNGKey(0), len(variants))
    traces = []

    def step(k, s, a, p):
        traces.append(1)
        return env.step(k, s, a, p)

    _, states = jax.vmap(env.reset)(keys, batch)
    actions = jax.vmap(env.action_space().sample)(keys)
    stepper = jax.jit(jax.vmap(step))
    _, _, rewards, *_ = stepper(keys, states, actions, batch)
    _, _, rewards2, *_ = stepper(keys, states, actions, jax.tree.map(lambda x: x[::-1], batch))
    assert len(traces) == 1
    assert rewards.shape == (18, 8)
    # task 0 rows pay Generate Energy only, task 1 rows Avoid Damage only: the rows must differ.
    assert not bool((rewards[:9] == rewards[9:]).all())
