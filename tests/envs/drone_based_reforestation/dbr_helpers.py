"""Helpers for the Drone-Based Reforestation tests: hand-made states on a flat world (so rewards can be
computed by hand) and constant actions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.envs.drone_based_reforestation.generator import station_point


def flat_state(
    env,
    params,
    base_state,
    xz,
    height_above_ground=10.0,
    yaw=None,
    holding=None,
    energy=None,
    forest=((60.0, 0.0, 20.0),),
    planted=(),
):
    """A state on flat ground (shape 0.5 everywhere: height = amplitude / 2), station at the origin,
    forest discs `forest` = ((x, z, radius), ...), drones at `xz` f32[A, 2]."""
    a = env.num_agents
    w = base_state.world
    n = w.forest_radii.shape[0]
    centres = np.zeros((n, 2), np.float32)
    radii = np.full((n,), -1.0e4, np.float32)
    for i, (x, z, r) in enumerate(forest):
        centres[i] = (x, z)
        radii[i] = r
    world = w.replace(
        terrain_waves=jnp.zeros_like(w.terrain_waves),
        terrain_phases=jnp.zeros_like(w.terrain_phases),
        forest_centres=jnp.asarray(centres),
        forest_radii=jnp.asarray(radii),
        station_xz=jnp.zeros(2),
    )
    world = world.replace(station=station_point(world, params))
    ground = float(world.station[1] - params.station_hover_height)
    xz = jnp.asarray(xz, jnp.float32).reshape(a, 2)
    y = jnp.broadcast_to(jnp.asarray(ground + height_above_ground, jnp.float32), (a,))
    position = jnp.stack([xz[:, 0], y, xz[:, 1]], -1)
    p_cap = base_state.planted.shape[0]
    planted_arr = np.zeros((p_cap, 2), np.float32)
    for i, q in enumerate(planted):
        planted_arr[i] = q
    station_3d = jnp.linalg.norm(position - world.station, axis=-1)
    return base_state.replace(
        step=jnp.int32(0),
        alive=jnp.ones(a, bool),
        world=world,
        position=position,
        yaw=jnp.zeros(a) if yaw is None else jnp.asarray(yaw, jnp.float32) * jnp.ones(a),
        speed=jnp.zeros(a),
        climb_rate=jnp.zeros(a),
        ground=jnp.full((a,), ground, jnp.float32),
        shape_below=jnp.full((a,), 0.5, jnp.float32),
        energy=jnp.ones(a) if energy is None else jnp.asarray(energy, jnp.float32) * jnp.ones(a),
        holding_seed=jnp.zeros(a, bool) if holding is None else jnp.asarray(holding) & jnp.ones(a, bool),
        at_station=station_3d <= params.charge_radius,
        pick_up_earned=jnp.ones(a, bool),
        grounded=jnp.zeros(a, bool),
        found_tree=jnp.zeros(a, bool),
        run_back_active=jnp.zeros(a, bool),
        run_back_quality=jnp.zeros(a),
        run_back_start=jnp.zeros(a),
        run_back_best=jnp.zeros(a),
        best_potential=jnp.zeros(a),
        best_height=jnp.zeros(a),
        trip_distance=jnp.zeros(a),
        furthest_distance=jnp.zeros(a),
        planted=jnp.asarray(planted_arr),
        planted_count=jnp.int32(len(planted)),
    )


def action(env, throttle=0.0, steer=0.0, climb=0.0, drop=0):
    """The same action for every drone (arrays broadcast per agent)."""
    a = env.num_agents
    cont = jnp.stack(
        [jnp.broadcast_to(jnp.asarray(v, jnp.float32), (a,)) for v in (throttle, steer, climb)], -1
    )
    return {"continuous": cont, "discrete": jnp.broadcast_to(jnp.asarray(drop, jnp.int32), (a,))[:, None]}


KEY = jax.random.PRNGKey(0)
