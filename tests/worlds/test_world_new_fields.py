"""World fields beyond the generated ones (issue 19 item 1): AWS height maps, WFC wind-direction
schedules, DBR gridded terrain, OPC obstacles. Hand-computed cases per field."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.core.seeding import world_key
from hivex_jax.worlds import FileWorlds, load_world


# --------------------------------------------------------------------------- AWS: heights -> slope
@pytest.fixture(scope="module")
def aws():
    env, params = hivex_jax.make("AerialWildfireSuppression-v0", grid_size=32, num_agents=1)  # fast compile
    return getattr(env, "unwrapped", env), params


def test_aws_tilted_plane_image_gives_a_constant_slope(aws, tmp_path):
    env, params = aws
    g = env.grid_size
    # grey = column index: height col / 255 * 200 m, rising eastward by 200 / 255 m per cell
    pixels = np.tile(np.arange(g, dtype=np.uint8), (g, 1))
    Image.fromarray(pixels).save(tmp_path / "heights.png")
    world = load_world(tmp_path / "heights.png", env, params)
    assert set(world) == {"slope"}  # converted at import
    cell = 2.0 * (750.0 - 150.0) / g  # island side / cells (default border and water girdle)
    want = np.zeros((g // 4, g // 4, 2), np.float32)
    want[..., 0] = 200.0 / 255.0 / cell
    np.testing.assert_allclose(world["slope"], want, rtol=1e-5, atol=1e-7)


def test_aws_generated_heights_give_back_the_generated_slope(aws, tmp_path):
    from hivex_jax.envs.aerial_wildfire_suppression import generator

    env, params = aws
    key = world_key(6000)

    @jax.jit
    def generated_terrain(key):
        """Cell heights and block slopes as `reset_env` makes them."""
        draws = generator.WorldDraws(key, generator.draws_needed(env.num_agents, env.blocks))
        lattice = generator.elevation_lattice(draws, env.blocks)
        scale = params.terrain_level * params.relief_per_level
        heights = generator.upsample_bilinear(lattice * scale, 4)
        return heights, generator.block_slope(lattice, env.clamp_params(params), env.grid_size)

    heights, generated = (np.asarray(x) for x in generated_terrain(key))
    np.save(tmp_path / "heights.npy", heights)
    world = load_world(tmp_path, env, params)
    np.testing.assert_allclose(world["slope"], np.asarray(generated), rtol=1e-4, atol=1e-6)
    assert np.abs(world["slope"]).max() > 1e-3  # a non-flat world: the test can tell
    # a tilted world imports and steps (slope in the state, fire spread uses it)
    np.save(tmp_path / "heights.npy", heights + np.linspace(0, 50, env.grid_size)[None, :])
    world = load_world(tmp_path, env, params)
    _, state = jax.jit(FileWorlds(env, [world], params).reset_world)(key, params, 0)
    np.testing.assert_allclose(np.asarray(state.slope), world["slope"])
    np.save(tmp_path / "slope.npy", world["slope"])
    with pytest.raises(UserError, match="both 'heights' and 'slope'"):
        load_world(tmp_path, env, params)


# ------------------------------------------------------------------ WFC: wind-direction schedule
@pytest.fixture(scope="module")
def wfc():
    env, params = hivex_jax.make("WindFarmControl-v0", num_agents=1)
    raw = getattr(env, "unwrapped", env)
    # 126 steps: knot k of 64 sits at step 2k; no noise, so each turbine's wind is the farm's direction
    return raw, params.replace(max_steps=jnp.int32(126), wind_noise_degrees=jnp.float32(0.0))


def _wind_over_steps(env, params, worlds, steps):
    """f32[world, steps + 1] turbine 0's wind angle after reset and each no-op step, per file world."""
    wrapped = FileWorlds(env, worlds, params)
    noop = {"discrete": jnp.zeros((env.num_agents, 1), jnp.int32)}

    def episode(index):
        _, state = wrapped.reset_world(world_key(6000), params, index)

        def one(state, key):
            _, state, *_ = env.step(key, state, noop, params)
            return state, state.local_wind_angle[0]

        _, winds = jax.lax.scan(one, state, jax.random.split(jax.random.PRNGKey(0), steps))
        return jnp.concatenate([state.local_wind_angle[:1], winds])

    return np.asarray(jax.jit(jax.vmap(episode))(jnp.arange(-1, len(worlds))))


def test_wfc_wind_schedule_sets_the_farm_wind_direction(wfc, tmp_path):
    env, params = wfc
    worlds = []
    for name, series in (("constant", [0.7]), ("ramp", [0.5, 2.0]), ("knots", np.arange(64.0) ** 2 / 1000)):
        (tmp_path / name).mkdir()
        np.save(tmp_path / name / "wind_direction_schedule.npy", np.asarray(series))
        worlds.append(load_world(tmp_path / name, env, params))
    assert worlds[0]["wind_direction_schedule"].shape == (64,) and bool(worlds[0]["wind_schedule_given"])
    generated, constant, ramp, knots = _wind_over_steps(env, params, worlds, steps=5)
    t = np.arange(6.0)
    np.testing.assert_allclose(constant, 0.7, atol=1e-6)
    np.testing.assert_allclose(ramp, 0.5 + 1.5 * t / 126, atol=1e-6)  # a line resampled is the line
    # knot k at step 2k: odd steps halfway between knots (t = 3: knots 1 and 2, (1 + 4) / 2 / 1000)
    want = [0.0, 0.0005, 0.001, 0.0025, 0.004, 0.0065]
    np.testing.assert_allclose(knots, want, atol=1e-6)
    assert np.ptp(generated) > 1e-4  # the generated wind swings: the schedule is what held it still
