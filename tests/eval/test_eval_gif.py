"""GIFs play at the requested speed (frame delays read back with Pillow) and loop; DBR's drones are big
enough to see on its 128-px picture."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from hivex_jax.eval.gif import write_gif

pytestmark = pytest.mark.timeout(120)


def _delays_ms(path) -> list[int]:
    with Image.open(path) as gif:
        delays = []
        for i in range(gif.n_frames):
            gif.seek(i)
            delays.append(gif.info["duration"])
        return delays


@pytest.mark.parametrize(("fps", "delay_ms"), [(10, 100), (4, 250), (20, 50)])
def test_gif_frames_last_one_over_fps_and_loop_forever(tmp_path, fps, delay_ms):
    frames = np.zeros((3, 8, 8, 3), np.uint8)
    frames[1] += 120  # distinct frames: a GIF writer merges identical neighbours (adding their delays)
    frames[2] += 240
    path = write_gif(tmp_path / "a.gif", frames, fps=fps)
    assert _delays_ms(path) == [delay_ms] * 3
    with Image.open(path) as gif:
        assert gif.info["loop"] == 0  # 0 = forever


def test_gif_refuses_a_speed_that_is_not_positive(tmp_path):
    with pytest.raises(ValueError, match="fps"):
        write_gif(tmp_path / "a.gif", np.zeros((2, 4, 4, 3), np.uint8), fps=0)


def test_dbr_drones_are_at_least_7_pixels_across_with_an_outline():
    import hivex_jax

    env, params = hivex_jax.make("DroneBasedReforestation-v0")
    raw = env.unwrapped
    _, state = jax.jit(raw.reset)(hivex_jax.world_key(6000), params)
    e = float(params.arena_half_extent)
    # drones far apart, at known spots; "away": the same drones off the picture
    spots = jnp.asarray([[-0.5 * e, 0.0, 0.5 * e], [0.5 * e, 0.0, 0.5 * e], [0.0, 0.0, -0.5 * e]])
    spots = spots[: raw.num_agents].at[:, 1].set(state.position[: raw.num_agents, 1])
    here = np.asarray(raw.render(state.replace(position=spots), params)).astype(int)
    away = np.asarray(raw.render(state.replace(position=spots.at[:, 0].add(10 * e)), params)).astype(int)
    size = here.shape[0]
    changed = np.abs(here - away).sum(-1) > 0
    # the first drone's column through its centre and row through its centre
    col = int((spots[0, 0] / e + 1) * 0.5 * size)
    row = int((1 - spots[0, 2] / e) * 0.5 * size)
    across = changed[row, col - 10 : col + 11].sum()
    assert across >= 7, f"drone {across} px across on a {size}-px picture"
    # the rim is darker than the fill: an outline separates the drone from the ground
    rim = here[row, col - 10 : col + 11][changed[row, col - 10 : col + 11]]
    assert rim[0].sum() < 100 and rim[len(rim) // 2].sum() > 200
