"""Vessel physics, the trash field and the respawn rule: closed-form cases and invariants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import dynamics, generator
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams

FAR = ((120.0, 120.0), (-120.0, 120.0), (-120.0, -120.0))
THRUST, DRAG, LATERAL = 0.04, 0.05, 0.3  # the defaults, per sub-step


def test_throttle_from_rest_matches_the_closed_form(opc):
    state = opc.scene([[0.0, 0.0], *FAR[1:]])
    _, new, *_ = opc.run(state, opc.act([1, 0, 0], [0, 0, 0]))
    # v_k = v_{k-1} (1 - d) + a  =>  v_k = (a / d) (1 - (1 - d)^k); position = sum over 5 sub-steps
    speeds = [THRUST / DRAG * (1 - (1 - DRAG) ** k) for k in range(1, 6)]
    assert float(new.velocities[0, 0]) == pytest.approx(speeds[-1], rel=1e-5)
    assert float(new.positions[0, 0]) == pytest.approx(sum(speeds), rel=1e-5)
    assert float(new.positions[0, 1]) == pytest.approx(0.0, abs=1e-6)
    # Bystanders without throttle stay put.
    np.testing.assert_allclose(np.asarray(new.positions[1:]), np.asarray(FAR[1:]))


def test_speed_rises_monotonically_to_the_top_speed_and_never_beyond(opc):
    state = opc.scene([[-150.0, 0.0], *FAR[1:]])
    speeds = []
    for _ in range(40):
        _, state, *_ = opc.run(state, opc.act([1, 0, 0], [0, 0, 0]))
        speeds.append(float(jnp.linalg.norm(state.velocities[0])))
    assert all(b > a for a, b in zip(speeds, speeds[1:], strict=False))
    top = THRUST / DRAG
    assert max(speeds) <= top + 1e-6 and speeds[-1] > 0.99 * top


def test_coasting_and_keel_drag(opc):
    # Vessel 0 coasts forward; vessel 1 faces east but slides north (sideways): keel drag 0.3.
    state = opc.scene(
        [[0.0, 0.0], [0.0, 50.0], FAR[2]],
        velocities=[[0.8, 0.0], [0.0, 0.8], [0.0, 0.0]],
    )
    _, new, *_ = opc.run(state, opc.act([0, 0, 0], [0, 0, 0]))
    assert float(new.velocities[0, 0]) == pytest.approx(0.8 * (1 - DRAG) ** 5, rel=1e-5)
    assert float(new.velocities[1, 1]) == pytest.approx(0.8 * (1 - LATERAL) ** 5, rel=1e-5)
    assert float(new.velocities[1, 0]) == pytest.approx(0.0, abs=1e-6)


def test_steering_turns_2_degrees_per_sub_step(opc):
    state = opc.scene([[0.0, 0.0], [50.0, 0.0], FAR[2]])
    _, new, *_ = opc.run(state, opc.act([0, 0, 0], [2, 1, 0]))  # left, right, no-op
    angles = np.degrees(np.arctan2(np.asarray(new.forward[:, 1]), np.asarray(new.forward[:, 0])))
    np.testing.assert_allclose(angles, [10.0, -10.0, 0.0], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(new.forward), axis=-1), 1.0, atol=1e-6)
    # A long turn keeps the heading a unit vector and comes back round after 36 decisions.
    for _ in range(35):
        _, new, *_ = opc.run(new, opc.act([0, 0, 0], [2, 1, 0]))
    np.testing.assert_allclose(np.asarray(new.forward[:2]), [[1.0, 0.0], [1.0, 0.0]], atol=1e-4)


def test_inactive_vessels_neither_move_nor_collect(opc):
    state = opc.scene(
        [[0.0, 0.0], *FAR[1:]],
        velocities=[[0.8, 0.0], [0.0, 0.0], [0.0, 0.0]],
        pebbles=[(0.0, 0.0), (2.0, 0.0)],
        alive=[False, True, True],
    )
    _, new, reward, term, _, info = opc.run(state, opc.act([1, 1, 1], [2, 0, 0]))
    np.testing.assert_array_equal(np.asarray(new.positions[0]), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(new.forward[0]), [1.0, 0.0])
    assert float(info["stats"]["pebbles_collected"][0]) == 0.0 and float(reward[0]) == 0.0
    assert bool(term[0]) and not bool(info["active"][0])
    assert float(new.pebble_x[0]) == 0.0  # the pebble under the wreck is still there


def test_reset_spawns_apart_inside_the_sea_at_rest(opc):
    for seed in range(12):
        _, state = opc.reset(hivex_jax.world_key(seed), opc.params)
        pos = np.asarray(state.positions)
        gaps = np.linalg.norm(pos[:, None] - pos[None], axis=-1)[[0, 0, 1], [1, 2, 2]]
        assert gaps.min() > 60.0  # ring of 40 m: 69 m between neighbours, minus jitter
        assert np.abs(pos).max() < 110.0
        assert np.all(np.asarray(state.velocities) == 0.0) and np.all(np.asarray(state.alive))
        np.testing.assert_allclose(np.linalg.norm(np.asarray(state.forward), axis=-1), 1.0, atol=1e-6)


def _rollout(opc, params, steps=100, worlds=3):
    """Random-action rollouts with the already compiled single-world step: (final states, collected)."""
    rng = np.random.default_rng(0)
    finals, collected = [], []
    for seed in range(worlds):
        _, state = opc.reset(hivex_jax.world_key(seed), params)
        total = 0.0
        for t in range(steps):
            action = opc.act(rng.integers(0, 2, 3), rng.integers(0, 3, 3))
            _, state, _, _, _, info = opc.run(state, action, params, key=t)
            total += float(jnp.sum(info["stats"]["pebbles_collected"]))
        finals.append(state)
        collected.append(total)
    return jax.tree.map(lambda *x: jnp.stack(x), *finals), np.asarray(collected)


def test_random_rollout_invariants(opc):
    """Per decision: speed <= top speed, unit headings, vessels out stay out and do not move, active
    vessels inside the sea and apart, collected counts monotone and equal to the summed statistic,
    every pebble afloat (respawn on)."""
    rng = np.random.default_rng(1)
    top, e, contact = THRUST / DRAG, 200.0, 2 * 2.5
    out_events = 0
    for seed in (7, 8):
        _, state = opc.reset(hivex_jax.world_key(seed), opc.params)
        summed = np.zeros(3)
        for t in range(150):
            throttle = (rng.uniform(size=3) < 0.8).astype(int)  # mostly full ahead: border crossings
            action = opc.act(throttle, rng.integers(0, 3, 3))
            _, new, reward, term, _, info = opc.run(state, action, key=t)
            was_alive, alive = np.asarray(state.alive), np.asarray(new.alive)
            pos, old_pos = np.asarray(new.positions), np.asarray(state.positions)
            assert np.all(np.linalg.norm(np.asarray(new.velocities), axis=-1) <= top + 1e-5)
            np.testing.assert_allclose(np.linalg.norm(np.asarray(new.forward), axis=-1), 1.0, atol=1e-5)
            assert np.all(alive <= was_alive) and np.array_equal(alive, was_alive & ~np.asarray(term))
            np.testing.assert_array_equal(pos[~was_alive], old_pos[~was_alive])
            assert np.all(np.abs(pos[alive]) <= e)
            assert np.all(np.abs(pos) <= e + top + 1e-4)  # a vessel stops on the sub-step it crossed
            gaps = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(3) * 1e9
            assert np.all(gaps[np.ix_(alive, alive)] >= contact)
            summed += np.asarray(info["stats"]["pebbles_collected"])
            np.testing.assert_allclose(np.asarray(new.collected_total), summed)
            assert np.all(np.asarray(new.collected_total) >= np.asarray(state.collected_total))
            assert np.all(np.asarray(reward)[~was_alive] == 0.0)
            assert bool(jnp.all(dynamics.pebbles_afloat(new.pebble_x)))
            out_events += int(np.sum(was_alive & ~alive))
            state = new
    assert out_events > 0  # the rollouts did exercise vessels leaving the episode


def test_respawn_keeps_the_pebble_count_and_pebbles_stay_in_the_sea(opc):
    states, collected = _rollout(opc, opc.params)
    afloat = np.asarray(jax.vmap(dynamics.pebbles_afloat)(states.pebble_x))
    assert afloat.all()
    e = float(opc.params.sea_half_extent)
    assert np.abs(np.asarray(states.pebble_x)).max() <= e and np.abs(np.asarray(states.pebble_z)).max() <= e
    assert float(collected.sum()) > 0  # something was collected and replaced


def test_without_respawn_collected_pebbles_are_gone(opc):
    states, collected = _rollout(opc, opc.params.replace(respawn_collected=jnp.int32(0)))
    afloat = np.asarray(jax.vmap(dynamics.pebbles_afloat)(states.pebble_x)).sum(-1)
    np.testing.assert_array_equal(afloat, opc.env.num_pebbles - np.asarray(collected))
    assert float(collected.sum()) > 0


@jax.jit
def _draw(key, params):
    """A world's trash map and 4096 pebble draws from it."""
    seed = generator.world_noise_seed(key)
    trash_map = generator.draw_trash_map(seed, params)
    u = generator.trash_draw_uniforms(seed, jnp.uint32(0), 4096)
    return trash_map, generator.sample_trash(u, trash_map, params)


def test_trash_concentrates_in_the_hot_spots():
    params = OceanPlasticParams()
    inside, area_share = [], []
    for seed in range(6):
        trash_map, (x, z) = _draw(hivex_jax.world_key(seed), params)
        used = int(params.num_hotspots)
        cx, cz = np.asarray(trash_map.hotspot_x)[:used], np.asarray(trash_map.hotspot_z)[:used]
        r = 2.0 * np.asarray(trash_map.hotspot_radii)[:used]
        d = np.hypot(np.asarray(x)[:, None] - cx, np.asarray(z)[:, None] - cz)
        inside.append(np.mean(np.any(d < r, axis=-1)))
        area_share.append(min(np.sum(np.pi * r**2) / (2 * float(params.sea_half_extent)) ** 2, 1.0))
        assert np.abs(np.asarray(x)).max() <= 200.0 and np.abs(np.asarray(z)).max() <= 200.0
    # 70 % of the trash is drawn from the spots and ~86 % of a spot's draws fall within 2 radii.
    assert np.mean(inside) > 0.55
    assert np.mean(inside) > 2.5 * np.mean(area_share)


def test_background_follows_the_lattice_weights():
    params = OceanPlasticParams(num_hotspots=jnp.int32(0))
    trash_map, (x, z) = _draw(hivex_jax.world_key(3), params)
    density = jax.jit(generator.trash_density)
    # The map's density where pebbles landed is higher on average than where uniform points land.
    seen = float(jnp.mean(density(jnp.stack([x, z], -1), trash_map, params)))
    uniform = jax.random.uniform(jax.random.PRNGKey(0), (4096, 2), minval=-200.0, maxval=200.0)
    base = float(jnp.mean(density(uniform, trash_map, params)))
    assert seen > 1.2 * base
