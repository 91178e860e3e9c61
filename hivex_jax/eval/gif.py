"""Episode pictures: render every `stride` steps inside one compiled scan, write an animated GIF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import rollout_key, rollout_step_keys, world_key
from hivex_jax.eval.rollout import Policy


def episode_frames(
    env: Any,
    env_params: Any,
    policy: Policy,
    policy_params: Any = None,
    world_seed: int = 6000,
    key: jax.Array | int = 0,
    stride: int = 50,
    num_frames: int = 100,
) -> np.ndarray:
    """uint8[F, H, W, 3]: the reset frame, then one frame every `stride` steps (F <= `num_frames`).
    After the episode ends the last state is held (no auto-reset)."""
    key = jax.random.PRNGKey(key) if isinstance(key, int) else key
    key = rollout_key(key, world_seed)

    @jax.jit
    def run(policy_params):
        obs, state = env.reset(world_key(jnp.uint32(world_seed)), env_params)

        def one_step(carry, t):
            obs, state, finished = carry
            k_act, k_env = rollout_step_keys(key, t)
            action = policy(policy_params, k_act, obs, state)
            new_obs, new_state, _, _, _, info = env.step(k_env, state, action, env_params)
            hold = lambda new, old: jax.tree.map(lambda a, b: jnp.where(finished, b, a), new, old)  # noqa: E731
            return (hold(new_obs, obs), hold(new_state, state), finished | info["done"]), None

        def one_frame(carry, f):
            carry, _ = jax.lax.scan(one_step, carry, f * stride + jnp.arange(stride))
            return carry, env.render(carry[1], env_params)

        first = env.render(state, env_params)
        _, frames = jax.lax.scan(one_frame, (obs, state, jnp.zeros((), bool)), jnp.arange(num_frames - 1))
        return jnp.concatenate([first[None], frames], axis=0)

    return np.asarray(run(policy_params))


def write_gif(path: str | Path, frames: np.ndarray, fps: float = 20) -> Path:
    """Write uint8[F, H, W, 3] frames as a GIF that loops forever at `fps` frames per second.

    A GIF stores each frame's delay in hundredths of a second, so 1000 / fps is rounded to 10 ms (fps 30
    plays at 33.3); browsers play delays under 20 ms as 100 ms, so above 50 fps they play slower."""
    from PIL import Image

    if not fps > 0:
        raise ValueError(f"fps {fps}; expected > 0")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pictures = [Image.fromarray(frame) for frame in np.asarray(frames, np.uint8)]
    # Pillow takes the delay in milliseconds (GIF stores hundredths: 1000 / fps is rounded to 10 ms);
    # imageio's pillow plugin does too, so its `duration=1 / fps` wrote delays of 0 (any speed).
    delay_ms = max(10, int(round(100.0 / fps)) * 10)
    pictures[0].save(path, save_all=True, append_images=pictures[1:], duration=delay_ms, loop=0)
    return path
