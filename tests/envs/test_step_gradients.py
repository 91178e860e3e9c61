"""docs/api.md, "Gradients": which reward terms and next-state fields have a gradient through `env.step`,
w.r.t. which float inputs (state leaves, params, the continuous action), and that none is NaN or infinite.

Each env as `make` builds it is probed at steps 0, 20 and 60 of the scripted controller's episodes on
worlds 0 and 1, with the scripted action: reverse-mode gradients of every raw reward term and of every
next-state float leaf (random-weighted sums, so nothing cancels) w.r.t. every float input. An input
"reaches" an output when its gradient is nonzero in at least one probe. The table's claims are asserted:
what it names reaches, and what it calls flat (events, counts, the fire) never does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.eval import find_scripted_policy

WORLDS = (0, 1)
STEPS = (0, 20, 60)
MOTION = {
    "DroneBasedReforestation-v0": {"position", "yaw", "speed", "climb_rate", "action.continuous"},
    "OceanPlasticCollection-v0": {"positions", "velocities", "forward"},
    "AerialWildfireSuppression-v0": {"position", "heading", "target", "action.continuous"},
}

#: (make kwargs, {output: inputs that must reach it}, {output: inputs that must not}); "term *" = every term
CLAIMS = {
    "WindFarmControl-v0": (
        {},
        {
            "term generate_energy": {
                "facing_angle",
                "local_wind_angle",
                "performance",
                "params.motor_acceleration",
                "params.drag_coefficient",
            },
            "term avoid_damage": {"facing_angle", "local_wind_angle"},
            "next facing_angle": {"facing_angle"},
            "next performance": {"performance", "facing_angle", "local_wind_angle"},
        },
        {"term *": {"positions"}, "next local_wind_angle": {"facing_angle", "performance"}},
    ),
    "WindFarmControl-v0 gauss": (
        {"wake_model": "gauss"},
        {
            "term generate_energy": {
                "positions",
                "facing_angle",
                "params.wind_speed",
                "params.turbulence_intensity",
                "params.air_density",
            }
        },
        {},
    ),
    "WildfireResourceManagement-v0": (
        {},
        {
            "term self": {"allocation", "params.resource_budget"},
            "term neighbourhood": {
                "allocation",
                "distance",
                "params.distance_threshold",
                "params.performance_scale",
                "params.performance_exponent",
                "params.performance_distance_scale",
                "params.neighbour_resource_scale",
            },
            "term collective": {
                "distance",
                "params.distance_threshold",
                "params.performance_scale",
                "params.performance_exponent",
                "params.performance_distance_scale",
            },
            "next allocation": {"allocation"},
        },
        {
            "term *": {
                "flammability",
                "wind_angle",
                "wind_speed",
                "params.spread_rate",
                "params.resource_suppression",
                "params.wind_factor",
                "params.slope_factor",
                "params.temperature_factor",
                "params.humidity_factor",
                "params.burn_duration",
            }
        },
    ),
    "DroneBasedReforestation-v0": (
        {},
        {
            "term high_fertility_location_delta": {"position", "action.continuous"},
            "term high_landscape_point_delta": {"position", "action.continuous"},
            "term far_distance_explored_delta": {"position", "speed", "action.continuous"},
            "term incremental_running_back": {"run_back_quality"},
            "next position": {
                "position",
                "speed",
                "climb_rate",
                "action.continuous",
                "params.max_speed",
                "params.response_seconds",
            },
            "next yaw": {"yaw", "action.continuous", "params.max_yaw_rate_degrees"},
            "next climb_rate": {"climb_rate", "action.continuous", "params.max_climb_rate"},
        },
        {
            f"term {t}": MOTION["DroneBasedReforestation-v0"]
            for t in (
                "drop_seed",
                "pick_up_seed",
                "group_up",
                "find_close_tree",
                "drop_seed_success",
                "return_furthest_distance",
            )
        },
    ),
    "OceanPlasticCollection-v0": (
        {},
        {
            "term global_lowest_trash_collected": {"collected_total"},
            "term nearby_trash_count_delta": {"nearby_reference"},
            "next positions": {
                "positions",
                "velocities",
                "forward",
                "params.thrust",
                "params.turn_rate_degrees",
            },
            "next velocities": {"velocities", "forward"},
            "next forward": {"forward", "params.turn_rate_degrees"},
        },
        {"term *": MOTION["OceanPlasticCollection-v0"]},
    ),
    "AerialWildfireSuppression-v0": (
        {},
        {
            "next position": {
                "position",
                "heading",
                "action.continuous",
                "params.plane_speed",
                "params.turn_rate_degrees",
            },
            "next heading": {"heading", "action.continuous", "params.turn_rate_degrees"},
        },
        {"term *": MOTION["AerialWildfireSuppression-v0"]},
    ),
}


def float_part(tree):
    """(names, float leaves, rebuild(float leaves) -> tree); names without the wrappers' `.env_state`."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    leaves = [x for _, x in with_paths]
    index = [i for i, x in enumerate(leaves) if jnp.issubdtype(jnp.result_type(x), jnp.floating)]

    def rebuild(floats):
        out = list(leaves)
        for i, x in zip(index, floats, strict=True):
            out[i] = x
        return jax.tree.unflatten(treedef, out)

    names = [jax.tree_util.keystr(with_paths[i][0]).replace(".env_state", "").lstrip(".") for i in index]
    return names, [leaves[i] for i in index], rebuild


def weighted_sum(x, salt: int):
    weights = jax.random.uniform(jax.random.PRNGKey(salt), jnp.shape(x), minval=0.5, maxval=1.5)
    return jnp.sum(jnp.asarray(x, jnp.float32) * weights)


def reach(env_id: str, options: dict):
    """({output: inputs that reach it in some probe}, [(output, input) with a non-finite gradient])."""
    env, params = hivex_jax.make(env_id, **options)
    policy = find_scripted_policy(env)
    act = jax.jit(lambda obs: policy(obs, params))
    step = jax.jit(lambda k, s, a: env.step(k, s, a, params))

    @jax.jit
    def jacobian(key, state, action, params):
        _, state_floats, state_of = float_part(state)
        _, param_floats, params_of = float_part(params)

        def outputs(state_floats, param_floats, continuous):
            a = {"continuous": continuous, "discrete": action["discrete"]}
            _, nxt, _, _, _, info = env.step(key, state_of(state_floats), a, params_of(param_floats))
            terms = info["raw_reward_terms"]
            outs = [weighted_sum(terms[:, k], k) for k in range(terms.shape[1])]
            outs += [weighted_sum(x, 100 + i) for i, x in enumerate(float_part(nxt)[1])]
            return jnp.stack(outs)

        return jax.jacrev(outputs, argnums=(0, 1, 2))(state_floats, param_floats, action["continuous"])

    reached: dict[str, set[str]] = {}
    bad = []
    for world in WORLDS:
        obs, state = env.reset(hivex_jax.world_key(world), params)
        for t in range(max(STEPS) + 1):
            action = act(obs)
            if t in STEPS:
                d_state, d_params, d_action = jacobian(jax.random.PRNGKey(t), state, action, params)
                state_names, param_names = float_part(state)[0], float_part(params)[0]
                outs = [f"term {n}" for n in env.reward_term_names] + [f"next {n}" for n in state_names]
                inputs = list(zip(state_names, d_state, strict=True))
                inputs += [(f"params.{n}", g) for n, g in zip(param_names, d_params, strict=True)]
                if env.continuous_dims:
                    inputs.append(("action.continuous", d_action))
                for name, grad in inputs:
                    rows = np.asarray(grad).reshape(len(outs), -1)
                    for out, row in zip(outs, rows, strict=True):
                        if not np.all(np.isfinite(row)):
                            bad.append((out, name))
                        elif np.any(row != 0):
                            reached.setdefault(out, set()).add(name)
            obs, state, *_ = step(jax.random.PRNGKey(1000 + t), state, action)
    terms = [f"term {n}" for n in env.reward_term_names]
    return reached, bad, terms


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CLAIMS))
def test_step_gradients_are_finite_and_reach_what_the_gradients_table_says(case):
    env_id = case.split()[0]
    options, must, must_not = CLAIMS[case]
    reached, bad, terms = reach(env_id, options)
    assert not bad, f"{case}: non-finite gradients {bad[:5]}"
    for out, inputs in must.items():
        missing = inputs - reached.get(out, set())
        assert not missing, f"{case}: {out} has no gradient w.r.t. {sorted(missing)}"
    for out, inputs in must_not.items():
        for o in terms if out == "term *" else [out]:
            leaked = inputs & reached.get(o, set())
            assert not leaked, f"{case}: {o} has a gradient w.r.t. {sorted(leaked)}, documented flat"
