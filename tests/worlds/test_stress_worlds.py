"""Stress worlds: each is what its docs say (hand-derived bounds) and a pure function of the seed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.core.seeding import world_key
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.worlds.stress import StressWorlds, stress_names

SEEDS = (9000, 9001, 9002)


def _stress_states(env_id: str):
    """`{name: [state per seed]}` and the params, one compiled reset per env (switch over names)."""
    env, params = hivex_jax.make(env_id)
    raw = getattr(env, "unwrapped", env)
    wrapped = StressWorlds(raw)
    reset = jax.jit(wrapped.reset_stress)
    states = {
        name: [reset(world_key(s), params, i)[1] for s in SEEDS] for i, name in enumerate(wrapped.names)
    }
    plain = [jax.jit(raw.reset)(world_key(s), params)[1] for s in SEEDS]
    return raw, raw.clamp_params(params), states, plain, reset


@pytest.fixture(scope="module", params=BUNDLED_ENV_IDS)
def stressed(request):
    return _stress_states(request.param)


def test_stress_worlds_are_pure_functions_of_the_seed(stressed):
    raw, params, states, _, reset = stressed
    assert len(states) >= 2
    for i, (name, per_seed) in enumerate(states.items()):
        again = reset(world_key(SEEDS[0]), params, i)[1]
        for a, b in zip(jax.tree.leaves(per_seed[0]), jax.tree.leaves(again), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
        differ = any(
            not np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(jax.tree.leaves(per_seed[0]), jax.tree.leaves(per_seed[1]), strict=True)
        )
        assert differ, f"{name}: seeds {SEEDS[0]} and {SEEDS[1]} give the same world"


def test_stress_worlds_are_what_they_say(stressed):
    raw, p, states, plain, _ = stressed
    check = CHECKS[raw.env_id]
    for name, per_seed in states.items():
        for state, base in zip(per_seed, plain, strict=True):
            check[name](raw, p, state, base)


# --------------------------------------------------------------------------- per env, per stress world
def _wfc_aligned(env, p, s, base):
    d = np.asarray(jnp.stack([jnp.cos(s.main_wind_angle), jnp.sin(s.main_wind_angle)]))
    pos = np.asarray(s.positions)
    rel = pos - pos[0]
    np.testing.assert_allclose(rel[:, 0] * d[1] - rel[:, 1] * d[0], 0.0, atol=1e-3)  # on the wind line
    gaps = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    np.testing.assert_allclose(gaps, float(p.turbine_spacing), rtol=1e-5)


def _wfc_storm(env, p, s, base):
    np.testing.assert_allclose(s.wind_noise.angular_speeds, 8.0 * base.wind_noise.angular_speeds, rtol=1e-6)
    np.testing.assert_allclose(s.wind_noise.wave_vectors, 3.0 * base.wind_noise.wave_vectors, rtol=1e-6)


def _wrm_fronts(env, p, s, base):
    from hivex_jax.envs.wildfire_resource_management.generator import BURNING, FUEL

    r = env.fire_resolution
    h = r // 2
    quadrants = [(slice(0, h), slice(0, h)), (slice(0, h), slice(h, r)), (slice(h, r), slice(0, h))]
    quadrants.append((slice(h, r), slice(h, r)))
    fire, fuel = np.asarray(s.fire), np.asarray(base.fire) == FUEL
    for rows, cols in quadrants:
        if fuel[rows, cols].sum() > 20:  # a quadrant with forest well inside it burns somewhere in it
            assert (fire[rows, cols] == BURNING).any()
    assert (fire == BURNING).sum() > (np.asarray(base.fire) == BURNING).sum()
    assert bool(np.asarray(s.fire_found).any())  # derived state recomputed: towers see the new fires


def _wrm_drought(env, p, s, base):
    np.testing.assert_allclose(
        s.flammability, np.minimum(2.0 * np.asarray(base.flammability), 1.0), rtol=1e-6
    )
    np.testing.assert_allclose(s.wind_speed, 1.5 * float(base.wind_speed), rtol=1e-6)


def _dbr_far(env, p, s, base):
    from hivex_jax.envs.drone_based_reforestation.stress import forest_edge_distance

    w, b = s.world, base.world

    from hivex_jax.envs.drone_based_reforestation.generator import ABSENT_RADIUS

    c = 0.8 * float(p.arena_half_extent)
    np.testing.assert_allclose(np.abs(np.asarray(w.station_xz)), c, rtol=1e-6)  # a corner
    present = np.asarray(w.forest_radii) != ABSENT_RADIUS
    edge = np.linalg.norm(np.asarray(w.forest_centres) - np.asarray(w.station_xz), axis=1) - np.asarray(
        w.forest_radii
    )
    # every patch left is at least half the arena's half-extent away, or it is the one farthest patch
    assert present.sum() >= 1
    assert (edge[present] >= 0.5 * float(p.arena_half_extent) - 1e-3).all() or present.sum() == 1
    assert set(np.flatnonzero(present)) <= set(np.flatnonzero(np.asarray(b.forest_radii) != ABSENT_RADIUS))
    assert float(forest_edge_distance(w.station_xz[None], w.forest_centres, w.forest_radii)[0]) > 0
    xz = np.asarray(s.position)[:, [0, 2]]
    ring = np.linalg.norm(xz - np.asarray(w.station)[[0, 2]], axis=1)
    np.testing.assert_allclose(ring, float(p.spawn_ring_radius), rtol=1e-4)  # drones spawned there


def _dbr_lone(env, p, s, base):
    from hivex_jax.envs.drone_based_reforestation.generator import ABSENT_RADIUS

    radii = np.asarray(s.world.forest_radii)
    assert (radii != ABSENT_RADIUS).sum() == 1
    assert radii.max() == np.asarray(base.world.forest_radii).max()


def _opc_fronts(env, p, s, base):
    e = float(p.sea_half_extent)
    edge = np.maximum(np.abs(np.asarray(s.pebble_x)), np.abs(np.asarray(s.pebble_z)))
    # hot spots at 0.85 e with offsets within 3 radii (<= 90 m); border cells' tents reach >= 125 m
    assert edge.min() >= 0.85 * e - 3 * float(p.hotspot_radius_max) - 1e-3


def _opc_far(env, p, s, base):
    start = np.asarray(s.positions).mean(axis=0)
    assert (np.sign(np.asarray(s.pebble_x)) == -np.sign(start[0])).all()
    assert (np.sign(np.asarray(s.pebble_z)) == -np.sign(start[1])).all()


def _aws_village(env, p, s, base):
    from hivex_jax.envs.aerial_wildfire_suppression import generator
    from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, HEALTHY

    xs, zs = (np.asarray(a) for a in generator.cell_centres(p, env.grid_size))
    d = np.hypot(xs[None, :] - float(s.village[0]), zs[:, None] - float(s.village[1]))
    near = d <= float(p.village_radius) + 100.0
    cells, before = np.asarray(s.cells), np.asarray(base.cells)
    assert (cells[near & (before == HEALTHY)] == BURNING).all()
    assert int(s.burning_count) == int((cells == BURNING).sum())


def _aws_far(env, p, s, base):
    from hivex_jax.envs.aerial_wildfire_suppression.params import BURNING, HEALTHY

    band = int(round(0.15 * env.grid_size))  # the northern rows (row 0 = north)
    cells, before = np.asarray(s.cells), np.asarray(base.cells)
    top = before[:band] == HEALTHY
    assert (cells[:band][top] == BURNING).all()
    assert int(s.burning_count) == int((cells == BURNING).sum())


CHECKS = {
    "WindFarmControl-v0": {"aligned_rows": _wfc_aligned, "storm": _wfc_storm},
    "WildfireResourceManagement-v0": {"four_fronts": _wrm_fronts, "drought": _wrm_drought},
    "DroneBasedReforestation-v0": {"far_from_forest": _dbr_far, "lone_forest": _dbr_lone},
    "OceanPlasticCollection-v0": {"trash_fronts": _opc_fronts, "far_corner": _opc_far},
    "AerialWildfireSuppression-v0": {"fire_at_village": _aws_village, "far_side_fire": _aws_far},
}


def test_stress_worlds_wrap_under_frame_stacking():
    env, params = hivex_jax.make("OceanPlasticCollection-v0", stress_worlds="far_corner")
    assert stress_names(env) == ("trash_fronts", "far_corner")
    obs, state = jax.jit(env.reset)(world_key(9000), params)
    assert obs["vector"].shape[-1] == 2 * env.unwrapped.observation_space(params)["vector"].shape[-1]
