"""AerialWildfireSuppression-v0 dynamics: the pick-up zone and refills, the fire model against procgen,
and fire and flight invariants over a random rollout."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from aws_helpers import PARAMS, RESET, SAMPLE, STEP, G, action, base_state, calm

import hivex_jax
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import (
    block_spread_probabilities,
    dryness,
    ignition_probability_fast,
)
from hivex_jax.envs.aerial_wildfire_suppression.generator import cell_centres, cell_size
from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BARE,
    BURNING,
    BURNT,
    HEALTHY,
    LAKE,
    VILLAGE,
    WET,
)
from hivex_jax.procgen import fire


def test_pickup_zone_switches():
    from hivex_jax.envs.aerial_wildfire_suppression.dynamics import in_pickup_zone

    pos = jnp.asarray([[700.0, 0.0], [0.0, 0.0], [760.0, 0.0], [-650.0, 640.0]])
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, PARAMS)), [True, False, False, True])
    literal = PARAMS.replace(pickup_zone_mode=jnp.int32(1))  # eq. 50 as printed: "or" inside the border
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, literal)), [True, False, True, True])
    wide = PARAMS.replace(water_girdle_width=jnp.float32(300.0))  # contradiction 13: island 900 x 900
    np.testing.assert_array_equal(np.asarray(in_pickup_zone(pos, wide)), [True, False, False, True])
    assert bool(in_pickup_zone(jnp.asarray([[500.0, 0.0]]), wide)[0])


def test_refill_of_an_empty_tank_only_with_the_switch():
    s = base_state().replace(position=jnp.asarray([[700.0, 0.0], [0.0, 300.0], [-400.0, -300.0]]))
    s = s.replace(heading=jnp.asarray([jnp.pi / 2] * 3), in_zone=jnp.asarray([True, False, False]))
    p = calm().replace(pickup_requires_empty_tank=jnp.int32(1))
    _, s1, _, _, _, info = STEP(jax.random.PRNGKey(0), s, action(), p)  # plane 0 stays over the water
    assert float(info["stats"]["water_pickup"][0]) == 1.0 and bool(s1.holding[0])  # empty tank refilled
    _, _, _, _, _, info2 = STEP(jax.random.PRNGKey(0), s1, action(), p)
    assert float(info2["stats"]["water_pickup"][0]) == 0.0  # already full
    _, _, _, _, _, info3 = STEP(jax.random.PRNGKey(0), s, action(), calm())
    assert float(info3["stats"]["water_pickup"][0]) == 0.0  # default: only entering the water counts


def test_fast_ignition_equals_procgen_fire_on_planar_ground():
    p = PARAMS.replace(diagonal_spread_weight=jnp.float32(1.0))
    grad = jnp.asarray([0.15, -0.08])
    b = G // 4
    slope = jnp.broadcast_to(grad, (b, b, 2))
    now = {
        "wind": jnp.asarray([0.6, 0.8]),
        "wind_speed": jnp.float32(0.7),
        "temperature": 25.0,
        "humidity": 40.0,
    }
    block_p = block_spread_probabilities(slope, now, p)
    burning = jax.random.uniform(jax.random.PRNGKey(0), (G, G)) < 0.2
    xs, zs = cell_centres(p, G)
    heights = grad[0] * xs[None, :] + grad[1] * zs[:, None]
    expected = fire.ignition_probability(
        burning,
        heights,
        now["wind"] * now["wind_speed"],
        p.spread_probability,
        p.wind_spread_factor,
        p.slope_spread_factor,
        cell_size(p, G),
    )
    np.testing.assert_allclose(
        np.asarray(ignition_probability_fast(burning, block_p)), np.asarray(expected), atol=1e-6
    )


def test_spread_is_faster_downwind_uphill_and_in_hot_dry_weather():
    from hivex_jax.envs.aerial_wildfire_suppression.dynamics import SPREAD_DIRECTIONS

    east = int(np.argmax(SPREAD_DIRECTIONS[:, 0]))  # spreading towards +x
    west = int(np.argmin(SPREAD_DIRECTIONS[:, 0]))
    flat = jnp.zeros((2, 2, 2))
    base = {"temperature": 25.0, "humidity": 40.0, "wind_speed": jnp.float32(1.0)}
    p = block_spread_probabilities(flat, {**base, "wind": jnp.asarray([1.0, 0.0])}, PARAMS)
    assert float(p[0, 0, east]) > float(p[0, 0, west])  # downwind
    uphill_east = jnp.broadcast_to(jnp.asarray([0.3, 0.0]), (2, 2, 2))
    p = block_spread_probabilities(
        uphill_east, {**base, "wind_speed": jnp.float32(0.0), "wind": jnp.zeros(2)}, PARAMS
    )
    assert float(p[0, 0, east]) > float(p[0, 0, west])  # uphill
    assert float(dryness(40.0, 15.0, PARAMS)) > 1.0 > float(dryness(15.0, 70.0, PARAMS))


def test_fire_invariants_over_a_random_rollout():
    p = PARAMS.replace(spread_probability=jnp.float32(0.2), wet_duration=jnp.float32(5.0))
    _, s = RESET(hivex_jax.world_key(11), p)
    states = [s]
    for k in jax.random.split(jax.random.PRNGKey(0), 60):
        k1, k2 = jax.random.split(k)
        a = SAMPLE(k1)
        a = {"continuous": a["continuous"] * 0.2, "discrete": a["discrete"]}
        _, new, *_ = STEP(k2, states[-1], a, p)
        states.append(new.replace(alive=jnp.ones(3, bool), holding=jnp.ones(3, bool)))  # keep dropping
    cells = np.stack([np.asarray(x.cells) for x in states[1:]])
    pos = np.stack([np.asarray(x.position) for x in states[1:]])
    heading = np.stack([np.asarray(x.heading) for x in states[1:]])
    cells = np.concatenate([np.asarray(s.cells)[None], np.asarray(cells)])
    fixed = np.isin(cells[0], [BARE, LAKE, VILLAGE])
    assert np.all(cells[:, fixed] == cells[0, fixed][None])  # no tree ever appears or vanishes
    burnt = cells == BURNT
    assert np.all(burnt[1:] >= burnt[:-1])  # burnt stays burnt
    assert np.all(np.diff(burnt.sum(axis=(1, 2))) >= 0)
    prev, new = cells[:-1], cells[1:]
    assert not np.any((prev == WET) & (new == BURNING))  # wet trees do not ignite
    assert not np.any((prev == BURNT) & (new != BURNT))
    ignited = (prev == HEALTHY) & (new == BURNING)
    padded = np.pad(prev == BURNING, ((0, 0), (1, 1), (1, 1)))
    neighbour_fire = np.zeros_like(ignited)
    for dr, dc in fire.NEIGHBOUR_OFFSETS:
        neighbour_fire |= padded[:, 1 + dr : 1 + dr + G, 1 + dc : 1 + dc + G]
    assert ignited.sum() > 0 and not np.any(ignited & ~neighbour_fire)  # fire only spreads to neighbours
    assert np.any((prev == WET) & (new == HEALTHY))  # wet trees dry
    steps = np.linalg.norm(
        np.diff(np.concatenate([np.asarray(s.position)[None], np.asarray(pos)]), axis=0), axis=-1
    )
    np.testing.assert_allclose(steps, 10.0, rtol=1e-4)  # planes always fly forward at their speed
    turn = np.diff(
        np.unwrap(np.concatenate([np.asarray(s.heading)[None], np.asarray(heading)]), axis=0), axis=0
    )
    assert np.all(np.abs(turn) <= np.deg2rad(15.0) * 0.2 + 1e-5)
