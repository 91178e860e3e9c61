"""Wind Farm Control with wakes: wake steering through the JAX wake model, and farm power of
greedy yaw, an optimised static yaw and trained runs on the same held-out wind conditions.

`conditions`, `farm_power` and `optimise` fit one static yaw per turbine by Adam through the wake model
(`scripts/wfc_wake_steering.py`); `evaluate` scores every controller on the same held-out conditions
(`scripts/wfc_wakes_policy_eval.py`, whose docstring says what each row is).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from baselines.run.evaluation import load_run
from hivex_jax.envs.wind_farm_control import wakes

D = wakes.ROTOR_DIAMETER
K = wakes.WakeConstants()
MAX_YAW = jnp.deg2rad(30.0)


def conditions(key, n, spread_deg):
    """(wind angle rad, speed, TI) f32[n] each: the wind blows along +x within +-spread."""
    k1, k2, k3 = jax.random.split(key, 3)
    angle = jnp.deg2rad(jax.random.uniform(k1, (n,), minval=-spread_deg, maxval=spread_deg))
    return (
        angle,
        jax.random.uniform(k2, (n,), minval=6.0, maxval=10.0),
        jax.random.uniform(k3, (n,), minval=0.05, maxval=0.10),
    )


def farm_power(positions, yaw, wind, model):
    """Mean farm power (MW) f32[] over the conditions `wind`."""
    angle, speed, ti = wind
    one = lambda a, s, t: jnp.sum(wakes.solve_farm(positions, yaw, a, s, t, K, model).power)  # noqa: E731
    return jnp.mean(jax.vmap(one)(angle, speed, ti)) / 1e6


OPT = optax.adam(0.05)


@jax.jit(static_argnames="model")
def update(raw, opt_state, positions, wind, model):
    """One Adam step on the yaw parameters (compiled once per layout shape)."""
    loss, g = jax.value_and_grad(lambda r: -farm_power(positions, MAX_YAW * jnp.tanh(r), wind, model))(raw)
    upd, opt_state = OPT.update(g, opt_state)
    return optax.apply_updates(raw, upd), opt_state, loss


def optimise(positions, wind, steps, model, key):
    """Static yaw f32[A] (rad) maximising mean farm power on the training conditions."""
    raw = 0.01 * jax.random.normal(key, (positions.shape[0],))
    opt_state = OPT.init(raw)
    for _ in range(steps):
        raw, opt_state, _ = update(raw, opt_state, positions, wind, model)
    return MAX_YAW * jnp.tanh(raw)


#: two-sided 95 % t quantiles by sample size (n - 1 degrees of freedom)
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}


def ci95(values: np.ndarray) -> float:
    """Half-width of the 95 % t confidence interval of the mean (0 for one value)."""
    values = np.asarray(values, np.float64)
    if values.size < 2:
        return 0.0
    return T95.get(values.size, 1.96) * float(np.std(values, ddof=1)) / np.sqrt(values.size)


def farm_layout(env: Any, env_params: Any) -> jax.Array:
    """Turbine positions f32[A, 2] of the run's layout; refuses layouts that change per world."""
    reset = jax.jit(lambda k: env.reset(k, env_params)[1].positions)  # one compile, not op by op
    a, b = reset(jax.random.PRNGKey(0)), reset(jax.random.PRNGKey(1))
    if not np.allclose(np.asarray(a), np.asarray(b)):
        raise ValueError("the run's layout changes per world (pattern 7 Field or 8 Random): use a fixed one")
    return a


def condition_params(env_params: Any, wind: tuple[jax.Array, ...], num_steps: int) -> Any:
    """EnvParams stacked over conditions [C]: a steady, uniform wind (no swing, no noise) per condition."""
    angle, speed, ti = wind
    n = angle.shape[0]

    def full(value):
        return jnp.full((n,), value, jnp.float32)

    stacked = jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *jnp.shape(x))), env_params)
    return stacked.replace(
        main_wind_direction_degrees=jnp.rad2deg(angle).astype(jnp.float32),
        main_wind_direction_range_degrees=full(0.0),
        main_wind_swing_degrees=full(0.0),
        wind_noise_degrees=full(0.0),
        wind_speed=speed.astype(jnp.float32),
        turbulence_intensity=ti.astype(jnp.float32),
        max_steps=jnp.full((n,), num_steps, jnp.int32),
    )


@functools.partial(jax.jit, static_argnames="model")
def steady_farm_mw(positions, yaw, wind, constants, model: str) -> jax.Array:
    """Steady farm power f32[C] (MW) of a static yaw f32[A] (rad) on each condition."""
    angle, speed, ti = wind

    def one(a, s, t):
        return jnp.sum(wakes.solve_farm(positions, yaw, a, s, t, constants, model).power) / 1e6

    return jax.vmap(one)(angle, speed, ti)


def env_farm_mw(
    env, stacked_params, policy, num_steps: int, measure_steps: int, key
) -> tuple[jax.Array, jax.Array]:
    """(farm power f32[C] MW, yaw offset f32[C, A] deg): `policy(key, obs, params) -> action` stepped in
    the env on each condition, means over the last `measure_steps` steps (power summed over turbines)."""

    def episode(params, k):
        k_reset, k_run = jax.random.split(k)
        obs, state = env.reset(k_reset, params)

        def body(carry, t):
            obs, state = carry
            k_act, k_env = jax.random.split(jax.random.fold_in(k_run, t))
            obs, state, _, _, _, info = env.step(k_env, state, policy(k_act, obs, params), params)
            yaw = jnp.rad2deg(wakes.signed_yaw_offset(state.facing_angle, state.local_wind_angle))
            return (obs, state), (jnp.sum(info["stats"]["power_mw"]), yaw)

        _, (power, yaw) = jax.lax.scan(body, (obs, state), jnp.arange(num_steps))
        return jnp.mean(power[num_steps - measure_steps :]), jnp.mean(yaw[num_steps - measure_steps :], 0)

    n = stacked_params.wind_speed.shape[0]
    return jax.vmap(episode)(stacked_params, jax.random.split(key, n))


def evaluate(
    run_dirs: list[str],
    num_conditions: int = 64,
    spread_deg: float = 5.0,
    held_out_key: int = 1000,
    opt_seeds: int = 10,
    opt_steps: int = 300,
    episode_steps: int = 200,
    measure_steps: int = 100,
) -> dict[str, Any]:
    """Rows {name: {"per_seed_mw": [...], "mean_mw", "ci95_mw", "gain_pct", "gain_ci95_pct",
    "yaw_deg_by_turbine": [...] (median), "facing_away_pct"}} and the setup; turbines in the env's order."""
    if not 0 < measure_steps <= episode_steps:
        raise ValueError(f"--measure-steps must be in 1..{episode_steps}; got {measure_steps}")
    loaded = [load_run(r) for r in run_dirs]
    first = loaded[0][1].train
    env, env_params = first.env, first.env_params
    model = env.wake_model
    if model == "none":
        raise ValueError(f"{run_dirs[0]}: trained without wakes (env_options wake_model is 'none')")
    positions = farm_layout(env, env_params)
    constants = wakes.constants_from_params(env_params)
    wind = conditions(jax.random.PRNGKey(held_out_key), num_conditions, spread_deg)
    stacked = condition_params(env_params, wind, episode_steps)
    key = jax.random.PRNGKey(held_out_key + 1)  # initial facings: the same for every policy

    per_seed: dict[str, list[float]] = {}
    # per-turbine yaw offsets (deg) [..., A] over seeds (and conditions, for the env-stepped rows)
    yaw_deg: dict[str, np.ndarray] = {}
    greedy = steady_farm_mw(positions, jnp.zeros(positions.shape[0]), wind, constants, model)
    per_seed["greedy (yaw 0)"] = [float(jnp.mean(greedy))]
    yaw_deg["greedy (yaw 0)"] = np.zeros((1, positions.shape[0]))
    optimised, optimised_yaw = [], []
    for seed in range(opt_seeds):  # the keys wfc_wake_steering.study uses for its training conditions
        k_train, _, k_init = jax.random.split(jax.random.PRNGKey(seed), 3)
        yaw = optimise(positions, conditions(k_train, 32, spread_deg), opt_steps, model, k_init)
        optimised.append(float(jnp.mean(steady_farm_mw(positions, yaw, wind, constants, model))))
        optimised_yaw.append(np.rad2deg(np.asarray(yaw)))
    per_seed["optimised static yaw"] = optimised
    yaw_deg["optimised static yaw"] = np.stack(optimised_yaw)

    scripted = env.scripted_policy
    run_env = jax.jit(
        lambda policy_params, p: env_farm_mw(env, p, policy_params, episode_steps, measure_steps, key),
        static_argnums=0,
    )
    power, yaw = run_env(lambda k, obs, p: scripted(obs, p), stacked)
    per_seed["scripted (in env)"] = [float(jnp.mean(power))]
    yaw_deg["scripted (in env)"] = np.asarray(yaw)
    for run_dir, (config, population, state) in zip(run_dirs, loaded, strict=True):
        train = population.train
        if train.env.wake_model != model or not np.allclose(
            np.asarray(farm_layout(train.env, train.env_params)), np.asarray(positions)
        ):
            raise ValueError(f"{run_dir}: another layout or wake model than {run_dirs[0]}")

        def trained(policy_params, p, train=train):
            return env_farm_mw(
                env,
                p,
                lambda k, obs, _: train.act(policy_params, obs, k, True),
                episode_steps,
                measure_steps,
                key,
            )

        powers, yaws = jax.jit(jax.vmap(trained, in_axes=(0, None)))(state.params, stacked)
        name = f"{config.algo} {Path(run_dir).name}"
        per_seed[name] = [float(x) for x in jnp.mean(powers, axis=1)]
        yaw_deg[name] = np.asarray(yaws).reshape(-1, positions.shape[0])

    base = per_seed["greedy (yaw 0)"][0]
    n = positions.shape[0]
    rows = {}
    for name, values in per_seed.items():
        v = np.asarray(values)
        gains = 100 * (v / base - 1)
        rows[name] = {
            "per_seed_mw": values,
            "mean_mw": float(v.mean()),
            "ci95_mw": ci95(v),
            "gain_pct": float(gains.mean()),
            "gain_ci95_pct": ci95(gains),
            # the median: a turbine left facing away (|yaw| > 90 deg, no power) would swamp a mean
            "yaw_deg_by_turbine": [round(float(x), 2) for x in np.median(yaw_deg[name].reshape(-1, n), 0)],
            "facing_away_pct": float(100 * np.mean(np.abs(yaw_deg[name]) > 90.0)),
        }
    setup = {
        "runs": run_dirs,
        "num_agents": int(env.num_agents),
        "pattern": int(env_params.pattern),
        "wake_model": model,
        "conditions": num_conditions,
        "spread_deg": spread_deg,
        "held_out_key": held_out_key,
        "opt_seeds": opt_seeds,
        "opt_steps": opt_steps,
        "episode_steps": episode_steps,
        "measure_steps": measure_steps,
    }
    return {"setup": setup, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown table."""
    lines = [
        "| controller | seeds | farm power MW (held-out mean) | gain over greedy | median yaw by turbine (°) "
        "| turbines facing away |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in result["rows"].items():
        yaws = ", ".join(f"{y:+.1f}" for y in r["yaw_deg_by_turbine"])
        lines.append(
            f"| {name} | {len(r['per_seed_mw'])} | {r['mean_mw']:.3f} ± {r['ci95_mw']:.3f} "
            f"| {r['gain_pct']:+.2f} ± {r['gain_ci95_pct']:.2f} % | {yaws} | {r['facing_away_pct']:.1f} % |"
        )
    return "\n".join(lines)
