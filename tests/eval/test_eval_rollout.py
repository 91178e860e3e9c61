"""Held-out evaluation rollouts: totals match a step-by-step reference, stop at the episode's end,
are deterministic per key, and batch over policy parameters and over a stack of env params."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TinyEnv
from trainer_fake_env import scripted_policy as tiny_scripted

import hivex_jax
from hivex_jax.eval import Evaluator, evaluate, find_scripted_policy, random_policy, summarize_totals
from hivex_jax.eval.rollout import evaluate_params, scripted_policy

pytestmark = pytest.mark.timeout(120)


def _reference_return(env, params, policy, world, key, num_steps):
    """Python loop: sum rewards until the episode is done, same keys as the evaluator."""
    obs, state = env.reset(hivex_jax.world_key(world), params)
    key = jax.random.fold_in(key, world)
    step = jax.jit(env.step)
    total = np.zeros(env.num_agents)
    for t in range(num_steps):
        k_act, k_env = jax.random.split(jax.random.fold_in(key, t))
        obs, state, reward, _, _, info = step(k_env, state, policy(None, k_act, obs, state), params)
        total += np.asarray(reward)
        if bool(info["done"]):
            return total, t + 1
    return total, num_steps


def test_totals_match_a_step_by_step_reference_and_stop_at_done():
    env = TinyEnv()
    params = env.default_params()
    policy = random_policy(env)
    key = jax.random.PRNGKey(7)
    out = evaluate(env, params, policy, "10:12", key=key, num_steps=20)  # episodes last <= 12 steps
    assert out["return"].shape == (2, 3) and out["reward_terms"].shape == (2, 3, 3)
    for i, world in enumerate(range(10, 12)):
        ref, length = _reference_return(env, params, policy, world, key, 20)
        np.testing.assert_allclose(out["return"][i], ref, rtol=1e-5, atol=1e-5)
        assert int(out["length"][i]) == length <= 12
    np.testing.assert_allclose(out["reward_terms"].sum(-1), out["return"], rtol=1e-5, atol=1e-5)
    assert set(out["stats"]) == {"distance"}
    # same key, same numbers; another key, other numbers
    ev = Evaluator(env, params, policy, "10:12", key=key, num_steps=20)
    np.testing.assert_array_equal(ev()["return"], out["return"])
    other = Evaluator(env, params, policy, "10:12", key=jax.random.PRNGKey(8), num_steps=20)()
    assert not np.array_equal(other["return"], out["return"])


class _CountedTinyEnv(TinyEnv):
    """TinyEnv that reports each step it takes to the host: `steps` holds one entry per world stepped."""

    def __init__(self):
        super().__init__()
        self.steps: list[int] = []

    def step(self, key, state, action, params):
        jax.debug.callback(lambda s: self.steps.append(np.size(s)), state.step)
        return super().step(key, state, action, params)


@pytest.mark.parametrize("in_turn", [False, True])
def test_the_worlds_step_until_the_last_episode_has_ended_not_to_num_steps(in_turn):
    env = _CountedTinyEnv()
    params = env.default_params()
    policy = random_policy(env)
    long = Evaluator(env, params, policy, "10:13", key=3, num_steps=400)()  # episodes last <= 12 steps
    longest = int(long["length"].max())
    assert longest <= 12 and sum(env.steps) == 3 * longest  # 3 worlds side by side, then stop
    short = Evaluator(env, params, policy, "10:13", key=3, num_steps=12)()
    jax.tree.map(np.testing.assert_array_equal, long, short)  # stopping early leaves every total as it was
    # policy rows, vmapped or one after another (then each row's worlds stop at its longest episode)
    env.steps.clear()
    rows = Evaluator(
        env, params, lambda p, k, o, s: policy(None, k, o, s), "10:13", 3, 400, True, in_turn=in_turn
    )
    out = rows(jnp.zeros(2))
    np.testing.assert_array_equal(out["return"][1], long["return"])
    if in_turn:  # (a callback vmapped over rows is not called once per row)
        assert sum(env.steps) == 2 * 3 * longest


@pytest.mark.parametrize("in_turn", [False, True])
def test_batched_over_policy_parameters(in_turn):
    env = TinyEnv()
    params = env.default_params()

    def gain_policy(gain, key, obs, state):  # move towards the goal with a parameterised gain
        action = tiny_scripted(obs, params)
        return dict(action, continuous=jnp.clip(gain * action["continuous"], -1, 1))

    ev = Evaluator(env, params, gain_policy, [1, 2, 3], key=0, num_steps=12, batched=True, in_turn=in_turn)
    out = ev(jnp.array([0.0, 1.0, 0.5]))
    assert out["return"].shape == (3, 3, 3)
    single = Evaluator(env, params, gain_policy, [1, 2, 3], key=0, num_steps=12)(jnp.float32(1.0))
    np.testing.assert_allclose(out["return"][1], single["return"], rtol=1e-6)
    half = Evaluator(env, params, gain_policy, [1, 2, 3], key=0, num_steps=12)(jnp.float32(0.5))
    np.testing.assert_allclose(out["return"][2], half["return"], rtol=1e-6)  # each row its own params
    assert out["return"][1].mean() > out["return"][0].mean()  # moving to the goal pays
    summary = summarize_totals(single, env.reward_term_names)
    assert len(summary["return"]) == 3 and set(summary["reward_terms"]) == set(env.reward_term_names)


def test_scripted_policies_are_found():
    env, params = hivex_jax.make("WindFarmControl-v0")
    from hivex_jax.envs.wind_farm_control import scripted_policy as wfc_scripted

    assert find_scripted_policy(env) is wfc_scripted
    assert find_scripted_policy(TinyEnv()) is tiny_scripted
    assert scripted_policy(TinyEnv(), TinyEnv().default_params()) is not None


def test_wind_farm_scripted_beats_random_on_test_worlds():
    env, params = hivex_jax.make("WindFarmControl-v0")
    policies = (scripted_policy(env, params), random_policy(env))

    def either(index, key, obs, state):  # one compiled program for both policies
        actions = [p(None, key, obs, state) for p in policies]
        return jax.tree.map(lambda a, b: jnp.where(index == 0, a, b), *actions)

    out = evaluate(env, params, either, "6000:6002", jnp.arange(2), num_steps=300, batched=True)
    scripted, rand = out["return"][0], out["return"][1]
    assert scripted.mean() > 1.5 * rand.mean()
    assert (out["length"] == 300).all()


def test_a_params_stack_gives_the_per_params_results_bitwise_in_one_program():
    env = TinyEnv()
    base = env.default_params()
    variants = [base, base.replace(task_weights=jnp.array([[1.0, 0.5, 2.0]]), max_steps=jnp.int32(8))]

    def make_policy(p):  # reads the (traced) env params, as scripted controllers do
        def policy(policy_params, key, obs, state):
            action = tiny_scripted(obs, p)
            push = p.task_weights[0, 1] * action["continuous"] + 0.3 * jax.random.normal(key, (3, 1))
            return dict(action, continuous=jnp.clip(push, -1.0, 1.0))

        return policy

    def final(state, p):
        return {"x": state.x, "step": state.step}

    stack = hivex_jax.stack_params(variants)
    out = evaluate_params(env, stack, make_policy, [3, 4], key=5, num_steps=12, final_metrics=final)
    assert out["return"].shape == (2, 2, 3) and out["final"]["x"].shape == (2, 2, 3)
    for i, p in enumerate(variants):
        entry = jax.tree.map(lambda x, i=i: x[i], out)
        alone = evaluate_params(
            env, hivex_jax.stack_params([p]), make_policy, [3, 4], key=5, num_steps=12, final_metrics=final
        )
        jax.tree.map(np.testing.assert_array_equal, entry, jax.tree.map(lambda x: x[0], alone))
        # params folded in as compile-time constants (the fixed-params Evaluator) round differently by
        # an ulp or so (XLA simplifies around constants), so that path agrees to float32 precision
        fixed = Evaluator(env, p, make_policy(p), [3, 4], key=5, num_steps=12, final_metrics=final)()
        np.testing.assert_array_equal(entry["length"], fixed["length"])
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), entry, fixed)
    # the params reach the env and the policy: max_steps 8 cuts the second entry's episodes
    assert (out["length"][1] <= 8).all() and (out["length"][0] > 8).any()
    assert not np.array_equal(out["return"][0], out["return"][1])
    # final metrics come from the state each episode ended in, not the one after all 12 steps
    np.testing.assert_array_equal(out["final"]["step"], out["length"])
    # another stack of the same size reuses the compiled program
    ev = Evaluator(env, stack, make_policy, [3, 4], key=5, num_steps=12, params_axis=True)
    np.testing.assert_array_equal(ev()["return"], out["return"])
    swapped = ev(env_params=hivex_jax.stack_params(variants[::-1]))
    np.testing.assert_array_equal(swapped["return"][::-1], out["return"])
    assert ev._fn._cache_size() == 1
    with pytest.raises(ValueError, match="params_axis"):
        Evaluator(env, base, make_policy(base), [3], num_steps=4)(env_params=base)


def test_policies_in_turn_over_a_params_stack_match_the_vmapped_ones():
    """`in_turn` runs the policy-params rows one after another in the program (`lax.map`): each row's
    totals are the vmapped program's, on every entry of a params stack."""
    env = TinyEnv()
    base = env.default_params()
    stack = hivex_jax.stack_params([base, base.replace(max_steps=jnp.int32(8))])

    def make_policy(p):
        def policy(gain, key, obs, state):
            action = tiny_scripted(obs, p)
            push = gain * action["continuous"] + 0.3 * jax.random.normal(key, (3, 1))
            return dict(action, continuous=jnp.clip(push, -1.0, 1.0))

        return policy

    gains = jnp.array([0.0, 1.0, 0.5])
    kwargs = dict(key=5, num_steps=12, batched=True, params_axis=True)
    vmapped = Evaluator(env, stack, make_policy, [3, 4], **kwargs)(gains)
    in_turn = Evaluator(env, stack, make_policy, [3, 4], in_turn=True, **kwargs)(gains)
    assert in_turn["return"].shape == (3, 2, 2, 3)
    np.testing.assert_array_equal(in_turn["length"], vmapped["length"])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), in_turn, vmapped)
    assert not np.allclose(in_turn["return"][0], in_turn["return"][1])  # rows are their own policies


def test_a_program_compiled_elsewhere_serves_its_shapes_and_others_compile_here():
    # `Evaluator.load`: a helper process compiles the program (`program`), the run loads it through
    # `serialize_executable`; calls of its shapes use it (the same numbers), other shapes the jitted one
    from jax.experimental import serialize_executable

    env = TinyEnv()
    params = env.default_params()

    def keyed(policy_params, key, obs, state):  # random actions from a key each row's params change
        return random_policy(env)(None, jax.random.fold_in(key, policy_params), obs, state)

    def evaluator():
        return Evaluator(env, params, keyed, "10:13", key=3, num_steps=15, batched=True, in_turn=True)

    one_row = jnp.asarray([5], jnp.uint32)
    compiled, _ = evaluator().program(one_row)
    here = evaluator()
    here.load(serialize_executable.deserialize_and_load(*serialize_executable.serialize(compiled)))
    loaded = here(one_row)
    assert here.loaded_calls == 1
    jitted = evaluator()(one_row)
    leaves = zip(jax.tree.leaves(loaded), jax.tree.leaves(jitted), strict=True)
    assert all(np.array_equal(a, b) for a, b in leaves)
    two_rows = here(jnp.asarray([5, 6], jnp.uint32))  # not the loaded program's shapes: compiled here
    assert here.loaded_calls == 1 and two_rows["return"].shape == (2, 3, 3)
    assert np.array_equal(two_rows["return"][:1], loaded["return"])  # rows in turn: each its own numbers
    assert not np.array_equal(two_rows["return"][1], two_rows["return"][0])
