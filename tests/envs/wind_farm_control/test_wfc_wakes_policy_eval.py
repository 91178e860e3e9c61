"""`baselines.studies.wfc_wakes` (run by scripts/wfc_wakes_policy_eval.py): greedy / optimised / scripted /
trained farm power on the same held-out wind conditions, on a tiny trained run (2 turbines in a row along
the wind)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from baselines.config import from_dict
from baselines.run.runner import run_training
from baselines.studies import wfc_wakes
from hivex_jax.envs.wind_farm_control import wakes

WIND = {
    "farm_power_share": 1.0,
    "main_wind_direction_degrees": 0.0,
    "main_wind_direction_range_degrees": 10.0,
    "main_wind_swing_degrees": 0.0,
    "wind_noise_degrees": 0.0,
    "max_steps": 16,
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> str:
    """A 2-seed MAPPO run on a 2-turbine waked row, one update (enough to have a checkpoint)."""
    config = from_dict(
        {
            "algo": "mappo",
            "env_id": "WindFarmControl-v0",
            "num_agents": 2,
            "level": 2,
            "env_options": {"wake_model": "gauss"},
            "env_params": WIND,
            "train_worlds": "0:8",
            "test_worlds": "8:10",
            "num_seeds": 2,
            "num_envs": 2,
            "num_steps": 8,
            "total_env_steps": 16,
            "chunk_updates": 1,
            "update_epochs": 1,
            "num_minibatches": 1,
            "hidden_sizes": [8],
            "eval_every": 1000,
        }
    )
    run_dir = tmp_path_factory.mktemp("wakes_eval") / "run"
    run_training(config, run_dir, progress=False, outputs=False, log=lambda *a, **k: None)
    return str(run_dir)


def test_condition_params_give_each_episode_its_steady_wind():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=2, wake_model="gauss", **WIND)
    wind = (jnp.deg2rad(jnp.array([-4.0, 3.0])), jnp.array([6.5, 9.0]), jnp.array([0.05, 0.09]))
    stacked = wfc_wakes.condition_params(params, wind, 30)
    states = jax.jit(jax.vmap(env.reset, in_axes=(None, 0)))(jax.random.PRNGKey(0), stacked)[1]
    # every turbine sees exactly its condition's direction (no range draw, swing or noise)
    np.testing.assert_allclose(
        np.asarray(states.local_wind_angle), np.deg2rad([[-4.0] * 2, [3.0] * 2]), atol=1e-6
    )
    np.testing.assert_allclose(np.asarray(stacked.wind_speed), [6.5, 9.0])
    np.testing.assert_array_equal(np.asarray(stacked.max_steps), [30, 30])


def test_greedy_is_the_envs_power_with_rotors_facing_the_wind():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=2, wake_model="gauss", **WIND)
    params = env.variant_params(params, level=2)
    positions = wfc_wakes.farm_layout(env, params)
    assert float(positions[1, 0] - positions[0, 0]) == pytest.approx(5 * wakes.ROTOR_DIAMETER, rel=1e-5)
    wind = (jnp.deg2rad(jnp.array([-2.0, 4.0])), jnp.array([7.0, 9.5]), jnp.array([0.06, 0.08]))
    steady = wfc_wakes.steady_farm_mw(
        positions, jnp.zeros(2), wind, wakes.constants_from_params(params), "gauss"
    )
    waked_power = jax.jit(lambda *a: wakes.waked_power(*a, "gauss"))
    for c in range(2):  # the env's own power path: facing = where the wind comes from
        p = params.replace(wind_speed=wind[1][c], turbulence_intensity=wind[2][c])
        angle = jnp.full(2, wind[0][c])
        _, power = waked_power(positions, angle + jnp.pi, angle, p)
        assert float(steady[c]) == pytest.approx(float(jnp.sum(power)) / 1e6, rel=1e-5)
    # the downstream turbine is waked: the farm makes less than two lone turbines
    constants = wakes.constants_from_params(params)
    lone = np.array([2 * float(wakes.free_stream_power(v, constants)) / 1e6 for v in wind[1]])
    assert np.all(np.asarray(steady) < 0.95 * lone)


def test_layouts_that_change_per_world_are_refused():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=2, wake_model="gauss")
    with pytest.raises(ValueError, match="changes per world"):
        wfc_wakes.farm_layout(env, env.variant_params(params, level=8))


@pytest.mark.slow  # trains a tiny MAPPO run and compiles five programs (minutes on a loaded CPU)
def test_table_on_a_tiny_run(tiny_run):
    result = wfc_wakes.evaluate(
        [tiny_run], num_conditions=3, opt_seeds=2, opt_steps=60, episode_steps=100, measure_steps=10
    )
    rows = result["rows"]
    greedy = rows["greedy (yaw 0)"]
    assert greedy["gain_pct"] == 0.0 and len(greedy["per_seed_mw"]) == 1
    # wake steering pays on a waked 2-turbine row: the fitted upstream yaw beats greedy on held-out wind
    assert all(v > greedy["mean_mw"] for v in rows["optimised static yaw"]["per_seed_mw"])
    # ... by yawing the upstream turbine (index 0, at x < 0) while the last one (shading nothing) stays
    upstream, downstream = rows["optimised static yaw"]["yaw_deg_by_turbine"]
    assert abs(upstream) > 5.0 and abs(downstream) < 2.0
    assert greedy["yaw_deg_by_turbine"] == [0.0, 0.0]
    assert all(abs(y) < 2.4 for y in rows["scripted (in env)"]["yaw_deg_by_turbine"])
    assert rows["scripted (in env)"]["facing_away_pct"] == 0.0
    # the env's scripted controller ends facing the wind (within one 2.4 deg rotation step): greedy power
    assert rows["scripted (in env)"]["mean_mw"] == pytest.approx(greedy["mean_mw"], rel=3e-3)
    (trained,) = [r for name, r in rows.items() if name.startswith("mappo ")]
    assert len(trained["per_seed_mw"]) == 2  # one value per training seed
    assert all(0.0 <= v <= 2 * wakes.RATED_POWER_W / 1e6 for v in trained["per_seed_mw"])
    table = wfc_wakes.markdown(result)
    assert table.count("\n") == 1 + len(rows) and "optimised static yaw" in table
    with pytest.raises(ValueError, match="measure-steps"):
        wfc_wakes.evaluate([tiny_run], episode_steps=10, measure_steps=11)
