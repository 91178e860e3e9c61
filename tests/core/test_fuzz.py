"""Fuzz: hostile actions (NaN, +-inf, +-1e30, discrete choices -5..49) mixed with random ones, on every
registered env, every task and params at their min and max bounds, through `AutoReset`. Obs, rewards,
info and every float leaf of the state must stay finite and each env's invariants must hold.

One compilation per env: the tasks and the two bound settings are stacked params, vmapped with the worlds.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.wrappers import AutoReset

HOSTILE_FLOATS = (jnp.nan, jnp.inf, -jnp.inf, 1e30, -1e30)
HOSTILE_FRACTION = 0.5  # share of action components replaced by a hostile value
TOLERANCE = 1e-4  # float slack of the geometric invariants


def hostile_action(key: jax.Array, env) -> dict[str, jax.Array]:
    """A uniform random action with about half its components replaced by hostile values."""
    k_sample, k_pick_c, k_bad_c, k_pick_d, k_bad_d = jax.random.split(key, 5)
    action = env.action_space().sample(k_sample)
    c, d = action["continuous"], action["discrete"]
    bad_c = jnp.asarray(HOSTILE_FLOATS, jnp.float32)[jax.random.randint(k_bad_c, c.shape, 0, 5)]
    c = jnp.where(jax.random.uniform(k_pick_c, c.shape) < HOSTILE_FRACTION, bad_c, c)
    bad_d = jax.random.randint(k_bad_d, d.shape, -5, 50)
    d = jnp.where(jax.random.uniform(k_pick_d, d.shape) < HOSTILE_FRACTION, bad_d, d)
    return {"continuous": c, "discrete": d}


def params_at_bound(env, params, side: int):
    """`params` with every field at its lower (side 0) or upper (side 1) bound."""
    changes = {}
    for name, bound in env.param_bounds.items():
        x = jnp.asarray(getattr(params, name))
        changes[name] = jnp.full(x.shape, bound[side], x.dtype)
    return params.replace(**changes)


def param_sets(env, params) -> tuple[list[str], list]:
    """Names and params: every task with the other fields at their defaults, then all-min and all-max."""
    names = [f"task {t}" for t in env.task_ids] + ["all fields at min", "all fields at max"]
    sets = [env.variant_params(params, task=t) for t in env.task_ids]
    sets += [params_at_bound(env, params, 0), params_at_bound(env, params, 1)]
    return names, sets


# ------------------------------------------------------------------------------- invariants
def _inside(position: jax.Array, half_extent: jax.Array) -> jax.Array:
    return jnp.max(jnp.abs(position), axis=-1) <= half_extent + TOLERANCE


#: Signed statistics: rewards (WRM's collective_performance is its task-weighted reward term) and WRM's
#: per-step change of the resources handed out.
SIGNED_STATS = ("reward", "collective_performance", "individual_resource_count")


def _nonnegative_stats(info: dict) -> jax.Array:
    """Every count or amount HIVEX logs is >= 0 (the signed ones aside)."""
    stats = {k: v for k, v in info.get("stats", {}).items() if not any(s in k for s in SIGNED_STATS)}
    return jnp.all(jnp.asarray([jnp.all(v >= 0) for v in stats.values()] or [True]))


def invariants(env_id: str, state, params, info: dict) -> dict[str, jax.Array]:
    """Named boolean scalars that must hold after every step (state after any auto-reset)."""
    out = {"stats non-negative": _nonnegative_stats(info), "step >= 0": state.step >= 0}
    if env_id == "AerialWildfireSuppression-v0":
        out["planes inside the border or out"] = jnp.all(
            _inside(state.position, params.border_half_extent) | ~state.alive
        )
        out["0 <= burning <= trees"] = (state.burning_count >= 0) & (state.burning_count <= state.num_trees)
        out["cell codes valid"] = jnp.all(state.cells <= 6)  # VILLAGE is the largest stored code
        out["tree counts non-negative"] = jnp.all(jnp.stack(jax.tree.leaves(info["tree_counts"])) >= 0)
    elif env_id == "DroneBasedReforestation-v0":
        out["energy in [0, 1]"] = jnp.all((state.energy >= 0) & (state.energy <= 1))
        out["drones inside the arena"] = jnp.all(_inside(state.position[:, (0, 2)], params.arena_half_extent))
        out["height <= ceiling"] = jnp.all(state.position[:, 1] <= params.flight_ceiling + TOLERANCE)
        out["planted count >= 0"] = state.planted_count >= 0
    elif env_id == "OceanPlasticCollection-v0":
        out["vessels inside the sea or out"] = jnp.all(
            _inside(state.positions, params.sea_half_extent) | ~state.alive
        )
        out["collected >= 0"] = jnp.all(state.collected_total >= 0)
        out["headings are unit vectors"] = jnp.all(
            jnp.abs(jnp.linalg.norm(state.forward, axis=-1) - 1) < 1e-3
        )
        out["nearby trash count >= 0"] = jnp.all(info["nearby_trash_count"] >= 0)
    elif env_id == "WildfireResourceManagement-v0":
        out["allocation >= 0"] = jnp.all(state.allocation >= 0)
        out["allocation within budget"] = jnp.all(
            jnp.sum(state.allocation, -1) <= params.resource_budget * (1 + TOLERANCE)
        )
        out["distance >= 0"] = jnp.all(state.distance >= 0)
        performance = info["stats"]["individual_performance"]
        collective = info["raw_reward_terms"][:, 2]  # unweighted: the root mean square of performances
        out["performance in [0, 1]"] = jnp.all((performance >= 0) & (performance <= 1 + TOLERANCE))
        out["collective performance in [0, 1]"] = jnp.all((collective >= 0) & (collective <= 1 + TOLERANCE))
    elif env_id == "WindFarmControl-v0":
        raw = info["raw_reward_terms"]  # generate_energy and avoid_damage, both in [0, 1]
        out["raw reward terms in [0, 1]"] = jnp.all((raw >= 0) & (raw <= 1 + TOLERANCE))
        m = info["stats"]["misalignment_degrees"]
        out["misalignment in [0, 180]"] = jnp.all((m >= 0) & (m <= 180 + TOLERANCE))
    return out


def _nonfinite(tree) -> jax.Array:
    """Number of non-finite values over the float leaves of `tree`."""
    leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(jnp.result_type(x), jnp.floating)]
    return sum((jnp.sum(~jnp.isfinite(x)) for x in leaves), jnp.int32(0))


def fuzz(env_id: str, num_worlds: int, num_steps: int, seed: int = 0) -> dict:
    """Run the fuzz rollouts of `env_id`; per param set: non-finite counts and failed-invariant counts."""
    env, params = hivex_jax.make(env_id)
    names, sets = param_sets(env, params)
    num_sets = len(sets)
    worlds = max(num_worlds, num_sets)
    set_of_world = np.arange(worlds) % num_sets
    batched = jax.tree.map(lambda x: x[set_of_world], hivex_jax.stack_params(sets))
    wrapped = AutoReset(env)
    inner_state = getattr(env, "inner_state", lambda s: s)  # registered envs may come wrapped (FrameStack)
    inv_names = list(jax.eval_shape(lambda: _invariants_after_one_step(env_id, env, params)))

    def one_world(world_seed, p, key):
        obs, state = wrapped.reset(hivex_jax.world_key(world_seed), p)
        zero = jnp.int32(0)
        counts = {"obs": _nonfinite(obs), "state": _nonfinite(state), "reward": zero, "info": zero}
        failed = {k: zero for k in inv_names}

        def body(carry, t):
            state, counts, failed = carry
            k_act, k_step = jax.random.split(jax.random.fold_in(key, t))
            action = hostile_action(k_act, env)
            obs, state, reward, terminated, truncated, info = wrapped.step(k_step, state, action, p)
            counts = {
                "obs": counts["obs"] + _nonfinite(obs),
                "state": counts["state"] + _nonfinite(state),
                "reward": counts["reward"] + _nonfinite(reward),
                "info": counts["info"] + _nonfinite(info),
            }
            checks = invariants(env_id, inner_state(state), p, info)
            failed = {k: failed[k] + (~checks[k]).astype(jnp.int32) for k in failed}
            return (state, counts, failed), None

        (_, counts, failed), _ = jax.lax.scan(body, (state, counts, failed), jnp.arange(num_steps))
        return counts, failed

    run = jax.jit(jax.vmap(one_world, in_axes=(0, 0, None)))
    counts, failed = run(jnp.arange(worlds, dtype=jnp.uint32), batched, jax.random.PRNGKey(seed))
    counts, failed = jax.tree.map(np.asarray, (counts, failed))
    report = {}
    for i, name in enumerate(names):
        rows = set_of_world == i
        report[name] = {
            **{f"non-finite {k}": int(v[rows].sum()) for k, v in counts.items()},
            **{f"failed: {k}": int(v[rows].sum()) for k, v in failed.items()},
        }
    return report


def _invariants_after_one_step(env_id: str, env, params) -> dict:
    """The invariants after a reset and a no-op step (traced for their names only)."""
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key, params)
    _, state, _, _, _, info = env.step(key, state, env.action_space().noop(), params)
    return invariants(env_id, getattr(env, "inner_state", lambda s: s)(state), params, info)


def _assert_clean(env_id: str, report: dict) -> None:
    bad = {name: {k: v for k, v in r.items() if v} for name, r in report.items()}
    bad = {name: r for name, r in bad.items() if r}
    assert not bad, f"{env_id}: hostile actions broke the env: {bad}"


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_hostile_actions_and_bound_params_keep_every_world_finite(env_id):
    _assert_clean(env_id, fuzz(env_id, num_worlds=8, num_steps=64))


@pytest.mark.slow
@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_fuzz_long(env_id):
    """The long setting: 64 worlds x 1000 steps."""
    _assert_clean(env_id, fuzz(env_id, num_worlds=64, num_steps=1000, seed=1))


def test_params_at_bounds_cover_every_field():
    """The fuzz's min / max settings really move every field (a table entry per field, every env)."""
    for env_id in BUNDLED_ENV_IDS:
        env, params = hivex_jax.make(env_id)
        fields = {f.name for f in dataclasses.fields(params)}
        assert set(env.param_bounds) == fields, env_id
