"""Dynamics invariants: resource budget, support conservation, neighbour links, fire spread and burn-out,
the fire sighting, termination, and what the terrain level does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.wildfire_resource_management import dynamics, generator
from hivex_jax.envs.wildfire_resource_management.dynamics import ADD, NOOP, REMOVE
from hivex_jax.envs.wildfire_resource_management.generator import BURNING, BURNT, FUEL, GRASS
from hivex_jax.envs.wildfire_resource_management.params import WildfireParams
from hivex_jax.procgen.fire import ignition_probability

P = WildfireParams()


def test_neighbours_are_the_three_nearest_with_documented_ties():
    nb = generator.neighbour_table()
    # corners: two edge towers and the centre; edges: two corners and the centre; centre: tie among
    # 1, 3, 5, 7 broken by the lower index -> 1, 3, 5
    np.testing.assert_array_equal(nb[0], [1, 3, 4])
    np.testing.assert_array_equal(nb[8], [5, 7, 4])
    np.testing.assert_array_equal(nb[1], [0, 2, 4])
    np.testing.assert_array_equal(nb[4], [1, 3, 5])
    units = generator.tower_grid_units()
    for i in range(9):
        d = np.linalg.norm(units - units[i], axis=1)
        d[i] = np.inf
        assert np.max(d[nb[i]]) <= np.min(np.delete(d, np.append(nb[i], i)))  # truly the 3 nearest
    assert generator.in_degree().sum() == 27 and generator.in_degree()[4] == 8


def test_allocation_order_budget_and_removal():
    alloc = jnp.asarray([[0.0, 0.0, 0.0, 0.0], [0.5, 0.3, 0.2, 0.0], [0.05, 0.0, 0.0, 0.0]])
    act = jnp.asarray([[ADD, ADD, ADD, ADD], [ADD, REMOVE, ADD, ADD], [REMOVE, NOOP, NOOP, NOOP]])
    got = np.asarray(dynamics.allocate(alloc, act, P))
    np.testing.assert_allclose(got[0], [0.1, 0.1, 0.1, 0.1])
    # tower 1 is full: the removal frees 0.1, granted to the first add in branch order (self)
    np.testing.assert_allclose(got[1], [0.6, 0.2, 0.2, 0.0], atol=1e-6)
    np.testing.assert_allclose(got[2], [0.0, 0.0, 0.0, 0.0])  # never below zero


def test_allocation_invariants_under_random_actions():
    params = P.replace(resource_step=jnp.float32(0.15))
    target = jnp.asarray(np.eye(9, dtype=np.float32)[generator.branch_targets()])

    def body(alloc, key):
        act = jax.random.randint(key, (9, 4), 0, 3)
        new = dynamics.allocate(alloc, act, params)
        return new, (new, dynamics.received_support(new, target))

    _, (allocs, support) = jax.lax.scan(body, jnp.zeros((9, 4)), jax.random.split(jax.random.PRNGKey(0), 300))
    allocs, support = np.asarray(allocs), np.asarray(support)
    assert allocs.min() >= 0.0 and allocs.sum(-1).max() <= 1.0 + 1e-5
    assert allocs.sum(-1).max() > 0.8  # the budget does get used
    np.testing.assert_allclose(support.sum(-1), allocs.sum((-2, -1)), rtol=1e-5)  # conservation
    # what tower 4 holds: its own share plus what corners/edges that list it send
    t = allocs[-1]
    nb = generator.neighbour_table()
    expected = t[4, 0] + sum(t[i, 1 + list(nb[i]).index(4)] for i in range(9) if 4 in nb[i])
    assert support[-1, 4] == pytest.approx(expected, rel=1e-5)


def test_hazard_matches_shared_ignition_probability_for_small_rates():
    """Our factorised hazard form is procgen.fire's model (same wind and slope factors): for small
    rates 1 - exp(-sum lambda) and 1 - prod(1 - p) agree to first order."""
    rng = np.random.default_rng(0)
    burning = jnp.asarray(rng.random((16, 16)) < 0.3, jnp.float32)
    heights = jnp.asarray(rng.random((16, 16)) * 20.0, jnp.float32)
    params = P.replace(diagonal_weight=jnp.float32(1.0), wind_factor=jnp.float32(0.1))
    angle, speed = jnp.float32(0.7), jnp.float32(5.0)
    rate, cell = 1e-3, 37.5
    flam = jnp.full((16, 16), rate)
    weights = dynamics.direction_weights(angle, speed, params)
    hazard = jax.jit(dynamics.ignition_hazard, static_argnums=5)
    ours = -jnp.expm1(-hazard(burning, heights, flam, weights, params.slope_factor, cell, 10.0))
    wind = speed * jnp.stack([jnp.cos(angle), jnp.sin(angle)])
    shared = jax.jit(ignition_probability, static_argnums=6)(
        burning, heights, wind, rate, params.wind_factor, params.slope_factor, cell
    )
    np.testing.assert_allclose(ours, shared, rtol=3e-3, atol=1e-7)


SIZE = 32


def _flat_world():
    fire = jnp.full((SIZE, SIZE), FUEL, jnp.uint8).at[SIZE // 2, SIZE // 2].set(BURNING)
    return fire, jnp.zeros((SIZE, SIZE)), jnp.full((SIZE, SIZE), 0.3)


@jax.jit
def _burn_with(fire, heights, flam, weights, params, suppression):
    """12 fire steps (one compiled program shared by the tests)."""

    def body(f, t):
        new = dynamics.spread_fire(f, heights, flam, weights, 1.0, suppression, jnp.uint32(7), t, params)
        return new, None

    return jax.lax.scan(body, fire, jnp.arange(12))[0]


def _burn(fire, heights, flam, weights, params, suppression=None):
    suppression = jnp.ones_like(heights) if suppression is None else suppression
    return _burn_with(fire, heights, flam, weights, params, suppression)


def _centroid(fire):
    rows, cols = np.nonzero(np.asarray(fire) != FUEL)
    return cols.mean(), rows.mean()


def test_wind_pushes_the_fire_downwind_and_slope_uphill():
    fire, heights, flam = _flat_world()
    params = P.replace(burn_duration=jnp.float32(1e9))
    calm = dynamics.direction_weights(jnp.float32(0.0), jnp.float32(0.0), params)
    base_col, base_row = _centroid(_burn(fire, heights, flam, calm, params))
    east = dynamics.direction_weights(jnp.float32(0.0), jnp.float32(8.0), params)  # blows towards +x
    col, row = _centroid(_burn(fire, heights, flam, east, params))
    assert col > base_col + 1.5 and abs(row - base_row) < 1.0
    north_up = jnp.broadcast_to(jnp.linspace(300.0, 0.0, SIZE)[:, None], (SIZE, SIZE))  # row 0 highest
    col, row = _centroid(_burn(fire, north_up, flam, calm, params))
    assert row < base_row - 1.5 and abs(col - base_col) < 1.0


def test_fire_phases_only_move_forward_and_burn_out():
    fire, heights, flam = _flat_world()
    fire = fire.at[:, :4].set(GRASS)  # bare ground never burns
    weights = dynamics.direction_weights(jnp.float32(1.0), jnp.float32(3.0), P)

    def body(f, t):
        new = dynamics.spread_fire(f, heights, flam, weights, 1.0, 1.0, jnp.uint32(3), t, P)
        return new, new

    _, history = jax.lax.scan(body, fire, jnp.arange(150))
    h = np.concatenate([np.asarray(fire)[None], np.asarray(history)])
    before, after = h[:-1], h[1:]
    changed = before != after
    ok = ((before == FUEL) & (after == BURNING)) | ((before == BURNING) & (after == BURNT))
    assert np.all(ok[changed])  # fuel -> burning -> burnt, nothing else
    assert np.all(h[:, :, :4] == GRASS)
    burnt = (h == BURNT).sum((1, 2))
    assert np.all(np.diff(burnt) >= 0) and burnt[-1] > 100
    assert (h[-1] == BURNING).sum() == 0  # the fire ends


def test_resource_suppression_slows_the_fire_only_when_enabled(env):
    fire, heights, flam = _flat_world()
    weights = dynamics.direction_weights(jnp.float32(0.0), jnp.float32(0.0), P)
    support = jnp.full((9,), 2.0)
    suppress = jax.jit(dynamics.region_suppression, static_argnums=1)
    off = suppress(support, 32, P)
    assert bool(jnp.all(off == 1.0))
    on_params = P.replace(resource_suppression=jnp.float32(2.0))
    on = suppress(support.at[4].set(0.0), 32, on_params)
    assert float(on[16, 16]) == 1.0 and float(on[0, 0]) == 5.0  # centre region holds nothing
    free = (_burn(fire, heights, flam, weights, P) != FUEL).sum()
    held = suppress(support, SIZE, on_params)
    slowed = (_burn(fire, heights, flam, weights, P, held) != FUEL).sum()
    assert int(slowed) < int(free)


def test_nearest_fire_matches_brute_force(fns, params):
    nearest_fire = jax.jit(dynamics.nearest_fire)
    _, state = fns.reset(hivex_jax.world_key(3), params)
    rng = np.random.default_rng(0)
    c = ((np.arange(32) + 0.5) / 32 * 2 - 1) * 600.0
    xx, zz = np.meshgrid(c, -c)
    for density in (0.002, 0.02, 0.2):
        burning = rng.random((32, 32)) < density
        pos, dist, found = nearest_fire(jnp.asarray(burning), state.heights, state.tower_xyz, params)
        for t in range(9):
            tx, ty, tz = np.asarray(state.tower_xyz[t])
            d2 = np.where(burning, (xx - tx) ** 2 + (zz - tz) ** 2, np.inf)
            if not np.isfinite(d2).any():
                assert not bool(found[t]) and float(dist[t]) == dynamics.NO_FIRE_DISTANCE
                continue
            got = (float(pos[t, 0]) - tx) ** 2 + (float(pos[t, 2]) - tz) ** 2
            assert got == pytest.approx(d2.min(), rel=1e-3)
            r, col = (
                int(round((600.0 - float(pos[t, 2])) / 37.5 - 0.5)),
                int(round((float(pos[t, 0]) + 600.0) / 37.5 - 0.5)),
            )
            assert burning[r, col] and float(pos[t, 1]) == pytest.approx(float(state.heights[r, col]))
            assert float(dist[t]) == pytest.approx(np.sqrt(got + (float(pos[t, 1]) - ty) ** 2), rel=1e-4)
    near = params.replace(observation_radius=jnp.float32(50.0))
    _, _, found = nearest_fire(
        jnp.asarray(rng.random((32, 32)) < 0.002), state.heights, state.tower_xyz, near
    )
    assert not bool(jnp.all(found))


def test_fire_ignores_actions_and_step_keys_and_the_episode_ends_with_it(env, fns, params):
    _, s0 = fns.reset(hivex_jax.world_key(6001), params)
    space = env.action_space(params)
    s_a, s_b = s0, s0
    for t in range(40):
        act_a = space.sample(jax.random.PRNGKey(t))
        act_b = {"continuous": act_a["continuous"], "discrete": jnp.ones((9, 4), jnp.int32)}
        _, s_a, *_ = fns.step(jax.random.PRNGKey(1000 + t), s_a, act_a, params)
        _, s_b, *_ = fns.step(jax.random.PRNGKey(t), s_b, act_b, params)
    assert bool(jnp.all(s_a.fire == s_b.fire))
    assert not bool(jnp.all(s_a.allocation == s_b.allocation))
    # Put the fire out: every tower terminates on the next step, together.
    out = s_a.replace(fire=jnp.where(s_a.fire == BURNING, BURNT, s_a.fire).astype(jnp.uint8))
    obs, _, _, term, trunc, info = fns.step(jax.random.PRNGKey(0), out, space.noop(), params)
    assert bool(jnp.all(term)) and not bool(jnp.any(trunc)) and bool(info["done"])
    assert bool(jnp.all(obs["vector"][:, :3] == -1.0))  # nothing to see: the sentinel
    # The time limit truncates instead.
    _, _, _, term, trunc, _ = fns.step(
        jax.random.PRNGKey(0), s_a, space.noop(), params.replace(max_steps=jnp.int32(41))
    )
    assert bool(jnp.all(trunc)) and not bool(jnp.any(term))


def test_terrain_level_scales_elevation(fns, params):
    low = fns.reset(hivex_jax.world_key(5), params.replace(terrain_level=jnp.int32(1)))[1]
    high = fns.reset(hivex_jax.world_key(5), params.replace(terrain_level=jnp.int32(10)))[1]
    land = np.asarray(low.heights) > 0
    np.testing.assert_allclose(
        np.asarray(high.heights - 1.0)[land], 10 * np.asarray(low.heights - 1.0)[land], rtol=1e-4, atol=1e-4
    )
    assert float(high.heights.max()) > 60.0
    assert bool(jnp.all(low.fire == high.fire))  # same island, forest and ignition; only the relief grows
