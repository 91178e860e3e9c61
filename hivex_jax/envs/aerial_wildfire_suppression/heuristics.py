"""The scripted controller of Aerial Wildfire Suppression, reading only the planes' vector observation."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hivex_jax.envs.aerial_wildfire_suppression.generator import island_half_extent
from hivex_jax.envs.aerial_wildfire_suppression.observations import LAYOUT, UNSEEN
from hivex_jax.envs.aerial_wildfire_suppression.params import AerialWildfireParams


def scripted_policy(obs: dict[str, jax.Array], params: AerialWildfireParams) -> dict[str, jax.Array]:
    """Stateless firefighting heuristic on the vector observation (the planes' own view only).

    Holding water: fly to the remembered fire and drop when it is within half the drop radius; with no
    fire known, circle the island (radius 350 m) so the camera sweeps it. Empty: fly to the nearest
    water outside the island. Near the border: turn back to the centre. Steering is proportional to the
    heading error (full deflection at 15 degrees, like HIVEX's LLM-guidance controller).
    """
    v = obs["vector"]
    e = params.border_half_extent
    half = island_half_extent(params)
    pos = v[:, LAYOUT["position"]] * e
    fwd = v[:, LAYOUT["forward"]]
    holding = v[:, LAYOUT["holding_water"]][:, 0] > 0.5
    target = v[:, LAYOUT["closest_tree"]] * e
    # A burning tree in memory (the slot holds UNSEEN until a tree has been seen).
    fire_known = (v[:, LAYOUT["closest_tree_burning"]][:, 0] > 0.5) & (
        v[:, LAYOUT["closest_tree"]][:, 0] > UNSEEN + 1e-3
    )

    # Water: straight out through the nearest coast, to the middle of the girdle.
    water_line = half + params.water_girdle_width / 2
    x_nearer = jnp.abs(pos[:, 0]) >= jnp.abs(pos[:, 1])
    sign = lambda x: jnp.where(x >= 0, 1.0, -1.0)  # noqa: E731
    water = jnp.where(
        x_nearer[:, None],
        jnp.stack([sign(pos[:, 0]) * water_line, pos[:, 1]], -1),
        jnp.stack([pos[:, 0], sign(pos[:, 1]) * water_line], -1),
    )
    # Patrol: a point 50 degrees further round a 350 m circle (counter-clockwise).
    ang = jnp.arctan2(pos[:, 1], pos[:, 0]) + jnp.deg2rad(50.0)
    patrol = 350.0 * jnp.stack([jnp.cos(ang), jnp.sin(ang)], -1)
    goal = jnp.where(holding[:, None], jnp.where(fire_known[:, None], target, patrol), water)
    near_border = jnp.max(jnp.abs(pos), axis=-1) > e - 45.0
    goal = jnp.where(near_border[:, None], 0.0, goal)

    to_goal = goal - pos
    desired = jnp.arctan2(to_goal[:, 1], to_goal[:, 0])
    current = jnp.arctan2(fwd[:, 1], fwd[:, 0])
    error = jnp.mod(desired - current + jnp.pi, 2 * jnp.pi) - jnp.pi
    steer = jnp.clip(-error / jnp.deg2rad(params.turn_rate_degrees), -1.0, 1.0)  # +1 turns right
    # Drop where the plane will be next step, if the fire is inside half the drop radius of it.
    ahead = pos + params.plane_speed * fwd
    close = jnp.sum((target - ahead) ** 2, axis=-1) <= (0.5 * params.drop_radius) ** 2
    drop = (holding & fire_known & close).astype(jnp.int32)
    return {"continuous": steer[:, None], "discrete": drop[:, None]}
