"""`hivex_jax.stack_params`: one stack per field gives what stacking leaf by leaf gave (values and
dtypes), for shared and distinct leaf objects, Python numbers and traced params; params that do not stack
(another env, another structure, another field shape, a value beyond its dtype, none at all) are refused
in one line that names the first offending params."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS


def stacked_leaf_by_leaf(params_list):
    """The reference: what `stack_params` computed before, one `jnp.stack` of every leaf's values."""
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *params_list)


def assert_same_stack(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def variants(env, params):
    levels = env.level_values or (None,)
    return [env.variant_params(params, task=t, level=lv) for t in env.task_ids for lv in levels]


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_every_task_and_level_stacks_as_leaf_by_leaf_stacking_did(env_id):
    env, params = hivex_jax.make(env_id)
    mixed = variants(env, params)
    got = hivex_jax.stack_params(mixed)
    assert_same_stack(got, stacked_leaf_by_leaf(mixed))
    assert got.task.shape == (len(mixed),)
    assert [int(t) for t in got.task] == [int(p.task) for p in mixed]


def test_shared_and_distinct_leaves_and_python_numbers_stack_in_order():
    env, params = hivex_jax.make("WindFarmControl-v0")
    base = variants(env, params)
    mixed = []
    for i in range(300):
        p = base[i % len(base)].replace(max_steps=jnp.int32(100 + i))  # one distinct leaf, the rest shared
        if i % 3 == 1:
            p = jax.tree.map(lambda x: x + 0, p)  # every leaf a new array
        if i % 7 == 2:
            p = p.replace(max_steps=100 + i, drag_coefficient=0.25)  # Python numbers (weakly typed)
        mixed.append(p)
    got = hivex_jax.stack_params(mixed)
    assert_same_stack(got, stacked_leaf_by_leaf(mixed))
    assert got.max_steps.dtype == jnp.int32 and got.drag_coefficient.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(got.max_steps), np.arange(100, 400))
    assert float(got.drag_coefficient[2]) == 0.25 and float(got.drag_coefficient[3]) == pytest.approx(0.1)


def test_a_thousand_params_gather_back_to_each_one():
    env, params = hivex_jax.make("WindFarmControl-v0")
    base = variants(env, params)
    many = [base[i % len(base)].replace(max_steps=jnp.int32(1 + i)) for i in range(1024)]
    stack = hivex_jax.stack_params(many)
    for i in (0, 1, 517, 1023):
        one = jax.tree.map(lambda x, i=i: x[i], stack)
        assert_same_stack(one, jax.tree.map(jnp.asarray, many[i]))


def test_traced_params_stack_under_jit():
    env, params = hivex_jax.make("WindFarmControl-v0")
    a, b = variants(env, params)[:2]
    traced = jax.jit(lambda x, y: hivex_jax.stack_params([x, y]))(a, b)
    assert_same_stack(traced, hivex_jax.stack_params([a, b]))


def one_line_error(params_list) -> str:
    with pytest.raises(ValueError) as info:
        hivex_jax.stack_params(params_list)
    message = str(info.value)
    assert "\n" not in message and message.startswith("stack_params")
    return message


def test_params_of_another_env_are_refused_naming_the_first_one():
    _, wfc = hivex_jax.make("WindFarmControl-v0")
    _, opc = hivex_jax.make("OceanPlasticCollection-v0")
    message = one_line_error([wfc, wfc, opc, wfc])
    assert message.startswith("stack_params: params 2 is OceanPlasticParams, params 0 is WindFarmParams")


def test_another_structure_or_field_shape_is_refused():
    _, params = hivex_jax.make("WindFarmControl-v0")
    odd = params.replace(task_weights=(1.0, 0.0))  # a tuple: two leaves where an array was one
    assert "params 1 has another structure than params 0" in one_line_error([params, odd])
    wide = params.replace(task_weights=jnp.ones((3, 2)))
    message = one_line_error([params, params, wide])
    assert message == "stack_params: task_weights has shape (3, 2) in params 2, (2, 2) in params 0"


def test_a_value_beyond_the_fields_dtype_is_the_bounds_error_of_that_value():
    _, params = hivex_jax.make("WindFarmControl-v0")
    many = [params] * 600 + [params.replace(max_steps=2**40)] + [params] * 10
    message = one_line_error(many)
    assert message == "stack_params: max_steps = 1099511627776 is outside its bounds [1, 1e+06]"


def test_no_params_is_refused():
    assert one_line_error([]) == "stack_params: got no params; pass a non-empty list of EnvParams"
