"""World fields beyond the generated ones: AWS height maps, WFC wind-direction
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


# ------------------------------------------------------------------------- DBR: gridded terrain
@pytest.mark.slow  # a DBR reset compile (~15 s on the shared CPU)
def test_dbr_flat_terrain_image_gives_flat_ground(tmp_path):
    from hivex_jax.envs.drone_based_reforestation import generator

    env, params = hivex_jax.make("DroneBasedReforestation-v0", num_agents=2, terrain_grid=True)
    env = getattr(env, "unwrapped", env)
    Image.fromarray(np.full((30, 50), 128, np.uint8)).save(tmp_path / "terrain_grid.png")  # any size
    world = load_world(tmp_path / "terrain_grid.png", env, params)
    assert bool(world["terrain_grid_given"])
    _, state = jax.jit(FileWorlds(env, [world], params).reset_world)(world_key(6000), params, 0)
    shape = 128 / 255
    amplitude = float(generator.level_amplitude(params))  # level 1: the logged 1.18 x 40 m
    np.testing.assert_allclose(np.asarray(state.ground), amplitude * shape, rtol=1e-5)  # spawn ground
    station_y = amplitude * shape + float(params.station_hover_height)
    np.testing.assert_allclose(float(state.world.station[1]), station_y, rtol=1e-5)
    points = jax.random.uniform(jax.random.PRNGKey(0), (50, 2), minval=-200.0, maxval=200.0)
    np.testing.assert_allclose(
        np.asarray(generator.terrain_shape(state.world, points, params)), shape, rtol=1e-6
    )


def test_dbr_terrain_grid_needs_the_static_option(tmp_path):
    env, params = hivex_jax.make("DroneBasedReforestation-v0")
    Image.fromarray(np.full((8, 8), 128, np.uint8)).save(tmp_path / "terrain_grid.png")
    with pytest.raises(UserError, match="terrain_grid=True") as err:
        load_world(tmp_path / "terrain_grid.png", getattr(env, "unwrapped", env), params)
    assert "\n" not in str(err.value) and "terrain_grid.png" in str(err.value)


def test_dbr_raised_block_in_the_grid_stops_the_drone():
    from hivex_jax.envs.drone_based_reforestation import generator
    from hivex_jax.envs.drone_based_reforestation.dynamics import fly

    params = hivex_jax.make("DroneBasedReforestation-v0")[1]
    amplitude = float(generator.level_amplitude(params))  # level 1: the logged 1.18 x 40 m
    # a raised block (shape 1) on cells 35-37 (x 18.75..37.5 m) of an otherwise flat 0.5 grid; the
    # analytic terrain of the same world is flat 0.5 (no waves: tanh(0) = 0)
    grid = np.full((generator.TERRAIN_GRID, generator.TERRAIN_GRID), 0.5, np.float32)
    grid[:, 35:38] = 1.0
    flat = generator.World(
        terrain_waves=jnp.zeros((generator.TERRAIN_WAVES, 2)),
        terrain_phases=jnp.zeros(generator.TERRAIN_WAVES),
        forest_centres=jnp.zeros((1, 2)),
        forest_radii=jnp.full(1, generator.ABSENT_RADIUS),
        station_xz=jnp.zeros(2),
        station=jnp.zeros(3),
        terrain_grid=jnp.asarray(grid),
        terrain_gridded=jnp.asarray(True),
    )
    ground = amplitude * 0.5
    start = jnp.asarray([[0.0, ground + 3.0, 0.0], [0.0, ground + 3.0, 50.0]])  # 3 m above, heading +x
    zeros = jnp.zeros(2)
    controls = jnp.asarray([[1.0, 0.0, 0.0]] * 2)  # full throttle, no steering or climbing

    # everything as arguments and a rolled loop: constants folded through unrolled substeps compile slowly
    flight = jax.jit(lambda world, *args: fly(world, params, *args, 90, unroll=False))
    args = (start, zeros, zeros, zeros, jnp.full(2, ground), jnp.full(2, 0.5), controls, jnp.ones(2, bool))
    blocked = flight(flat.replace(terrain_gridded=jnp.asarray(True)), *args)
    free = flight(flat.replace(terrain_gridded=jnp.asarray(False)), *args)
    # the rise starts at cell 34's centre (x = 15.6 m): the drone stops before it, speed zeroed
    assert np.all(np.asarray(blocked[0][:, 0]) < 18.75) and np.all(np.asarray(blocked[2]) == 0.0)
    assert np.all(np.asarray(free[0][:, 0]) > 40.0)  # analytic: flat, it flies on past the block (9 s)


# ----------------------------------------------------------------------------- OPC: obstacles
def test_opc_vessel_stops_at_an_obstacle_edge_and_no_trash_lies_on_it(tmp_path):
    from hivex_jax.envs.ocean_plastic_collection import dynamics, generator
    from hivex_jax.envs.ocean_plastic_collection.params import PARKED

    env, params = hivex_jax.make("OceanPlasticCollection-v0", obstacles=True)
    env = getattr(env, "unwrapped", env)
    # an island: columns 16-19 of 32 (x in [0, 50) m over the +-200 m sea), drawn at twice the size
    pixels = np.zeros((64, 64), np.uint8)
    pixels[:, 32:40] = 255
    Image.fromarray(pixels).save(tmp_path / "obstacles.png")
    obstacles = load_world(tmp_path / "obstacles.png", env, params)["obstacles"] > 0.5
    assert obstacles.sum() == 32 * 4 and obstacles[:, 16:20].all()
    plain = hivex_jax.make("OceanPlasticCollection-v0")[0]
    with pytest.raises(UserError, match="obstacles=True") as err:  # the env made without the option
        load_world(tmp_path / "obstacles.png", getattr(plain, "unwrapped", plain), params)
    assert "\n" not in str(err.value) and "obstacles.png" in str(err.value)

    @jax.jit
    def drive(obstacles, params):
        """A vessel at (-50, 10) heading +x at full throttle for 150 sub-steps (one per call: fast
        to compile)."""

        def decision(carry, _):
            pos, vel, fwd = carry
            one = jnp.ones(1, jnp.int32)
            pos, vel, fwd, crossed, collided = dynamics.move_vessels(
                pos, vel, fwd, jnp.ones(1, bool), one, 0 * one, params, 1, obstacles
            )
            return (pos, vel, fwd), crossed | collided

        start = (jnp.asarray([[-50.0, 10.0]]), jnp.zeros((1, 2)), jnp.asarray([[1.0, 0.0]]))
        (pos, vel, _), out = jax.lax.scan(decision, start, None, length=150)
        return pos[0], vel[0], jnp.any(out)

    pos, vel, out = drive(jnp.asarray(obstacles), params)
    assert -0.9 < float(pos[0]) < 0.0 and float(pos[1]) == 10.0  # at the edge: within a sub-step (0.8 m)
    assert np.all(np.asarray(vel) == 0.0) and not bool(out)  # stopped, not out of the episode
    pos, _, out = drive(jnp.zeros_like(jnp.asarray(obstacles)), params)
    assert float(pos[0]) > 50.0 and not bool(out)  # open sea: it drives across

    x, z = np.meshgrid(np.linspace(-195, 195, 40), np.linspace(-195, 195, 40))
    px, pz = generator.park_on_obstacles(
        jnp.asarray(x.ravel()), jnp.asarray(z.ravel()), jnp.asarray(obstacles), params
    )
    on_island = (x.ravel() >= 0) & (x.ravel() < 50)
    np.testing.assert_array_equal(np.asarray(px) == PARKED, on_island)
    np.testing.assert_array_equal(np.asarray(px)[~on_island], x.ravel()[~on_island])


def test_bad_schedule_files_get_one_line_errors_naming_the_file(wfc, tmp_path):
    env, params = wfc
    np.save(tmp_path / "wind_direction_schedule.npy", np.zeros((4, 2)))
    with pytest.raises(UserError, match="expected a 1-D series") as err:
        load_world(tmp_path / "wind_direction_schedule.npy", env, params)
    assert "\n" not in str(err.value) and "wind_direction_schedule.npy" in str(err.value)
    np.save(tmp_path / "wind_direction_schedule.npy", np.full(3, 500.0))
    with pytest.raises(UserError, match=r"within \[-100, 100\]"):
        load_world(tmp_path / "wind_direction_schedule.npy", env, params)
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "wind_direction_schedule.png")
    with pytest.raises(UserError, match="takes a .npy"):
        load_world(tmp_path / "wind_direction_schedule.png", env, params)
