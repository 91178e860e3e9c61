"""The one auto-reset (`reset_where`, `AutoReset`): values of a plain select, resets skipped when no env
of a (nested) vmapped batch is done, the pre-reset observation and state in `info`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import hivex_jax
from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.wrappers import AutoReset, SameWorldAutoReset, reset_where, select_where

RESETS: list[int] = []  # one entry per world reset actually computed (a host callback in the reset)


@struct.dataclass
class DriftParams:
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(3))


@struct.dataclass
class DriftState(EnvState):
    x: jax.Array  # f32[A]


class Drift(Environment):
    """Two agents drifting by their action plus noise; the world is x drawn from the key (compiles fast)."""

    num_agents = 2
    continuous_dims = 1
    params_type = DriftParams

    def default_params(self) -> DriftParams:
        return DriftParams()

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-100.0, 100.0, (2, 1), jnp.float32)})

    def reset_env(self, key, params):
        jax.debug.callback(lambda: RESETS.append(1))  # fires only where a reset really runs
        x = jax.random.uniform(key, (2,))
        return {"vector": x[:, None]}, DriftState(step=jnp.int32(0), alive=jnp.ones(2, bool), x=x)

    def step_env(self, key, state, action, params):
        x = state.x + action["continuous"][:, 0] + 0.1 * jax.random.normal(key, (2,))
        new_state = state.replace(step=state.step + 1, x=x)
        return StepOutput({"vector": x[:, None]}, new_state, -jnp.abs(x), jnp.zeros(2, bool), {})


ENV = Drift()
PARAMS = ENV.default_params()


def _noop(lead):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, lead + x.shape), ENV.action_space().noop())


def test_reset_where_selects_per_entry_and_skips_without_done():
    current = jnp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

    def fresh(scale):
        jax.debug.callback(lambda: RESETS.append(1))
        return jnp.full((3, 2), scale)

    run = jax.jit(lambda done: reset_where(done, fresh, (jnp.float32(9.0),), current))
    RESETS.clear()
    out = run(jnp.asarray([False, True, False]))
    assert np.array_equal(out, [[1.0, 2.0], [9.0, 9.0], [5.0, 6.0]]) and len(RESETS) == 1
    RESETS.clear()
    assert np.array_equal(run(jnp.zeros(3, bool)), current) and RESETS == []
    # the same select a scalar mask makes
    assert np.array_equal(select_where(jnp.asarray(True), jnp.zeros(2), jnp.ones(2)), [0.0, 0.0])


def test_reset_where_gradient_is_the_selects():
    # d/dc sum(where(c > 1.5, 3c, c)) = 3 where the entry resets, else 1
    grad = jax.grad(lambda c: jnp.sum(reset_where(c > 1.5, lambda x: 3.0 * x, (c,), c)))(jnp.arange(3.0))
    assert np.array_equal(grad, [1.0, 1.0, 3.0])


@pytest.mark.parametrize("nested", [False, True])
def test_vmapped_autoreset_generates_worlds_only_on_steps_where_an_episode_ends(nested):
    wrapped = AutoReset(ENV)
    step = jax.vmap(wrapped.step, (0, 0, 0, None))
    reset = jax.vmap(wrapped.reset, (0, None))
    if nested:  # e.g. training seeds x envs
        step, reset = jax.vmap(step, (0, 0, 0, None)), jax.vmap(reset, (0, None))
    lead = (2, 3) if nested else (3,)
    keys = jax.random.split(jax.random.PRNGKey(0), int(np.prod(lead))).reshape(lead + (2,))
    step = jax.jit(step)
    _, state = reset(keys, PARAMS)
    counts = []
    for t in range(4):  # every episode ends on step 3 (max_steps=3)
        RESETS.clear()
        _, state, _, _, _, info = step(keys + t, state, _noop(lead), PARAMS)
        jax.block_until_ready(state)
        counts.append(len(RESETS))
        assert bool(jnp.all(info["done"])) == (t == 2) and bool(jnp.any(info["done"])) == (t == 2)
    assert counts[0] == counts[1] == counts[3] == 0 and counts[2] > 0
    assert np.all(state.step == 1)  # restarted on step 3, stepped once since


def test_vmapped_autoreset_resets_exactly_the_done_envs_with_the_split_key():
    # env 0 ends after 2 steps, env 1 after 3: a batch where only some envs reset
    batch = hivex_jax.stack_params([DriftParams(jnp.int32(2)), DriftParams(jnp.int32(3))])
    wrapped = AutoReset(ENV, final_obs=True, final_state=True)
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    obs, state = jax.vmap(wrapped.reset)(keys, batch)
    step = jax.jit(jax.vmap(wrapped.step))
    for t in range(2):
        step_keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys + t)
        inner_obs, inner_state, *_ = jax.jit(jax.vmap(ENV.step))(step_keys, state, _noop((2,)), batch)
        obs, state, _, _, _, info = step(keys + t, state, _noop((2,)), batch)
    # second step: env 0 is done and restarted from its reset key, env 1 kept its stepped state
    assert np.array_equal(info["done"], [True, False])
    fresh_obs, fresh_state = ENV.reset(jax.random.split(keys[0] + 1)[1], DriftParams(jnp.int32(2)))
    assert np.array_equal(obs["vector"][0], fresh_obs["vector"]) and int(state.step[0]) == 0
    assert np.array_equal(state.x[0], fresh_state.x)
    assert np.array_equal(obs["vector"][1], inner_obs["vector"][1]) and int(state.step[1]) == 2
    # the pre-reset observation and state come back in info
    assert np.array_equal(info["final_obs"]["vector"], inner_obs["vector"])
    assert np.array_equal(info["final_state"].step, [2, 2])
    assert np.array_equal(info["final_state"].x, inner_state.x)


def test_same_world_autoreset_lives_with_the_wrappers():
    assert issubclass(SameWorldAutoReset, AutoReset)
    with pytest.raises(TypeError, match="reset_episode"):
        SameWorldAutoReset(ENV)
