"""World files people edit: every exported file is the one source of its field (an edit changes the
world), a field given twice or a file named after no field is refused in one line, and `--png` previews
are contrast-stretched with a legend (and not read back)."""

import numpy as np
import pytest
from PIL import Image

import hivex_jax
from hivex_jax.core.errors import UserError
from hivex_jax.worlds import field_specs, load_world, save_world, world_of_seed

pytestmark = pytest.mark.timeout(300)

ENVS = [
    "WindFarmControl-v0",
    "WildfireResourceManagement-v0",
    "DroneBasedReforestation-v0",
    "OceanPlasticCollection-v0",
    "AerialWildfireSuppression-v0",
]


@pytest.fixture(scope="module")
def wrm():
    env, params = hivex_jax.make("WildfireResourceManagement-v0")
    return env.unwrapped, params, world_of_seed(env, params, 6000)


@pytest.mark.parametrize("env_id", ENVS)
def test_png_export_gives_each_field_one_file_and_previews_with_a_legend(env_id, tmp_path):
    env, params = hivex_jax.make(env_id)
    env = getattr(env, "unwrapped", env)
    world = world_of_seed(env, params, 6000)
    save_world(world, tmp_path, env, seed=6000, images=True)
    files = [f for f in tmp_path.iterdir() if f.is_file() and f.name != "world.json"]
    stems = [f.stem for f in files]
    assert sorted(stems) == sorted(world) and len(set(stems)) == len(stems)  # one file per field
    previews = sorted(p.name for p in (tmp_path / "preview").glob("*.png"))
    assert previews, f"{env_id}: --png wrote no preview"
    legend = (tmp_path / "preview" / "legend.txt").read_text()
    for name in previews:
        line = next(line for line in legend.splitlines() if line.startswith(f"{name}:"))
        pixels = np.asarray(Image.open(tmp_path / "preview" / name))
        assert min(pixels.shape) >= 256  # big enough to see (OPC's 8 x 8 background too)
        constant = "(the field is constant)" in line
        assert pixels.max() == (0 if constant else 255)  # stretched to white (or dots)
    loaded = load_world(tmp_path, env, params)  # the preview folder is not read
    assert sorted(loaded) == sorted(world)
    specs = field_specs(env)
    for name, values in world.items():  # read back: codes and .npy exact, 16-bit grids to 1/65535
        lo, hi = specs[name].image_range or specs[name].value_range or (0.0, 0.0)
        np.testing.assert_allclose(loaded[name], values, atol=(hi - lo) / 65535 + 1e-6, rtol=1e-6)


def test_wrm_fire_preview_is_stretched_and_its_legend_says_what_grey_means(wrm, tmp_path):
    env, params, world = wrm
    save_world(world, tmp_path, env, images=True)
    preview = np.asarray(Image.open(tmp_path / "preview" / "fire.png"))
    codes = np.unique(world["fire"])
    assert preview.min() == 0 and preview.max() == 255  # was grey 0..6 of 255: black
    assert (
        f"fire.png: black = {codes.min()}, white = {codes.max()}"
        in (tmp_path / "preview" / "legend.txt").read_text()
    )


def test_editing_the_exported_pngs_changes_the_world(wrm, tmp_path):
    env, params, world = wrm
    save_world(world, tmp_path, env, images=True)
    fire = np.asarray(Image.open(tmp_path / "fire.png")).copy()
    row, col = np.argwhere(fire == 0)[0]  # a forest cell
    fire[row, col] = 1  # set it burning
    Image.fromarray(fire).save(tmp_path / "fire.png")
    heights = np.asarray(Image.open(tmp_path / "heights.png")).copy()
    heights[:4, :4] = 65535  # a 130 m peak in the north-west corner
    Image.fromarray(heights).save(tmp_path / "heights.png")
    loaded = load_world(tmp_path, env, params)
    assert loaded["fire"][row, col] == 1 and world["fire"][row, col] == 0
    np.testing.assert_allclose(loaded["heights"][:4, :4], 130.0)


def test_a_field_given_twice_is_refused_naming_both_files(wrm, tmp_path):
    env, params, world = wrm
    save_world(world, tmp_path, env, images=True)
    np.save(tmp_path / "fire.npy", world["fire"])
    with pytest.raises(UserError, match=r"fire.npy and fire.png both give field 'fire': keep one"):
        load_world(tmp_path, env, params)


def test_a_single_file_named_after_another_field_is_refused_with_the_field_names(wrm, tmp_path):
    env, params, world = wrm
    save_world(world, tmp_path / "w", env, images=True)
    edited = tmp_path / "fire_edited.png"
    Image.open(tmp_path / "w" / "fire.png").save(edited)
    with pytest.raises(UserError, match="mentions field 'fire'.*heights, flammability, fire") as err:
        load_world(edited, env, params)
    assert "\n" not in str(err.value)
    inside = tmp_path / "w" / "island.png"  # in an exported world folder every file names its field
    Image.open(tmp_path / "w" / "heights.png").save(inside)
    with pytest.raises(UserError, match="is a world folder"):
        load_world(inside, env, params)


def test_a_preview_is_refused_as_a_world_file(wrm, tmp_path):
    env, params, world = wrm
    save_world(world, tmp_path, env, images=True)
    with pytest.raises(UserError, match="contrast-stretched preview"):
        load_world(tmp_path / "preview" / "heights.png", env, params)


def test_a_users_own_png_still_is_the_primary_field(wrm, tmp_path):
    env, params, _ = wrm
    Image.fromarray(np.full((16, 16), 255, np.uint8)).save(tmp_path / "island.png")
    assert sorted(load_world(tmp_path / "island.png", env, params)) == ["heights"]


def test_world_export_png_on_wind_farm_control_says_what_it_wrote(tmp_path, capsys):
    from hivex_jax.worlds.cli import main

    out = tmp_path / "w"
    assert main(["export", "--env", "WindFarmControl-v0", "--world", "6000", "--out", str(out), "--png"]) == 0
    said = capsys.readouterr().out
    assert "no grid or codes field" in said and "preview" in said
    assert (out / "preview" / "positions.png").is_file()
