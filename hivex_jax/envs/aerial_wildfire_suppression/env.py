"""AerialWildfireSuppression-v0: aeroplanes drop water on a spreading wildfire (reference §2.5)."""

from __future__ import annotations

import math
from typing import ClassVar

import jax
import jax.numpy as jnp

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, StepOutput
from hivex_jax.core.rewards import assemble_rewards
from hivex_jax.envs.aerial_wildfire_suppression import dynamics, generator, heuristics, render, rewards
from hivex_jax.envs.aerial_wildfire_suppression.dynamics import (
    Events,
    Fire,
    Planes,
    in_pickup_zone,
    materialise_grid,
    tree_counts,
    weather_now,
)
from hivex_jax.envs.aerial_wildfire_suppression.observations import (
    LAYOUT,
    UNSEEN,
    VECTOR_SIZE,
    camera,
    camera_cells,
    camera_points,
    key_centres,
    materialise_small,
    update_closest_tree,
    vector_obs,
)
from hivex_jax.envs.aerial_wildfire_suppression.params import (
    BURNING,
    CROSSED_BORDER,
    DEFAULT_NUM_AGENTS,
    EXTINGUISHING_TREE,
    FIND_FIRE,
    FIND_VILLAGE,
    FIRE_OUT,
    HEALTHY,
    MIN_ISLAND_HALF_EXTENT,
    PICK_UP_WATER,
    PREPARING_TREE,
    REWARD_TERM_NAMES,
    STATIC_BOUNDS,
    SUPPORTED_AGENT_COUNTS,
    TASK_DROP_WATER,
    TASK_FIND_FIRE,
    TASK_FIND_VILLAGE,
    TASK_NAMES,
    TASK_PICK_UP_WATER,
    TERRAIN_BLOCK,
    TIME_STEP_BURNING,
    TOO_CLOSE_TO_VILLAGE,
    AerialWildfireParams,
)
from hivex_jax.envs.aerial_wildfire_suppression.types import AerialWildfireState

#: largest drop radius (m) the static drop windows hold; larger `drop_radius` values act as this
MAX_DROP_RADIUS = 130.0


def _half_window(radius_m: float, grid_size: int) -> int:
    """Static window half-width (cells) holding a disc of `radius_m` on the smallest allowed island."""
    return int(math.ceil(radius_m * grid_size / (2.0 * MIN_ISLAND_HALF_EXTENT))) + 1


class AerialWildfireSuppression(Environment):
    """Aerial Wildfire Suppression.

    Static options: `num_agents` (1, 2, 3, 6, 9, 12), `grid_size` (island cells per side, a multiple of
    4; 96 gives 12.5 m trees), `camera_size` (42), `camera_channels` (3; 1 = contradiction 15's figure),
    `vector_size` (8; 9 = contradiction 16's printed sample, a trailing 0), `local_radius_m` (largest
    find-fire / village-danger distance the static sensing windows hold), `render_size`.
    """

    env_id = "AerialWildfireSuppression-v0"
    reward_term_names = REWARD_TERM_NAMES
    task_ids = tuple(range(len(TASK_NAMES)))
    task_names = TASK_NAMES
    level_field = "terrain_level"
    level_values = tuple(range(1, 11))
    params_type = AerialWildfireParams
    static_options: ClassVar[tuple[str, ...]] = (
        "num_agents",
        "grid_size",
        "camera_size",
        "camera_channels",
        "vector_size",
        "local_radius_m",
        "render_size",
    )
    continuous_dims = 1
    discrete_branches = (2,)
    #: the package's scripted controller, `scripted_policy(obs, params) -> action` (heuristics.py)
    scripted_policy = staticmethod(heuristics.scripted_policy)

    def __init__(
        self,
        num_agents: int = DEFAULT_NUM_AGENTS,
        grid_size: int = 96,
        camera_size: int = 42,
        camera_channels: int = 3,
        vector_size: int = VECTOR_SIZE,
        local_radius_m: float = 160.0,
        render_size: int = 256,
    ):
        num_agents, grid_size, camera_size, camera_channels, vector_size, local_radius_m, render_size = (
            check_static_options(
                self.env_id,
                STATIC_BOUNDS,
                num_agents=num_agents,
                grid_size=grid_size,
                camera_size=camera_size,
                camera_channels=camera_channels,
                vector_size=vector_size,
                local_radius_m=local_radius_m,
                render_size=render_size,
            )
        )
        if num_agents not in SUPPORTED_AGENT_COUNTS:
            raise ValueError(
                f"AerialWildfireSuppression-v0: num_agents must be one of {SUPPORTED_AGENT_COUNTS} "
                f"(HIVEX's scalability counts); got {num_agents}"
            )
        if grid_size % TERRAIN_BLOCK or not 32 <= grid_size <= 252:
            # <= 252: tree counts are packed into 16-bit halves of one int32 reduction.
            raise ValueError(f"grid_size must be a multiple of {TERRAIN_BLOCK} in [32, 252]; got {grid_size}")
        if camera_channels not in (1, 3):
            raise ValueError(f"camera_channels must be 3 (README) or 1 (figure); got {camera_channels}")
        if vector_size not in (VECTOR_SIZE, VECTOR_SIZE + 1):
            raise ValueError(f"vector_size must be 8 (README) or 9 (printed sample); got {vector_size}")
        self.num_agents = num_agents
        self.grid_size = grid_size
        self.camera_size = camera_size
        self.camera_channels = camera_channels
        self.vector_size = vector_size
        self.local_radius_m = float(local_radius_m)
        self.render_size = render_size
        self.blocks = grid_size // TERRAIN_BLOCK
        self._sense_half = _half_window(self.local_radius_m, grid_size)
        self._drop_half = _half_window(MAX_DROP_RADIUS, grid_size)

    def default_params(self) -> AerialWildfireParams:
        return AerialWildfireParams()

    # ----------------------------------------------------------------------------------- spaces
    def observation_space(self, params: AerialWildfireParams | None = None) -> spaces.Dict:
        a, s = self.num_agents, self.camera_size
        return spaces.Dict(
            {
                "vector": spaces.Box(-1.0, 1.0, (a, self.vector_size), jnp.float32),
                "visual": spaces.Box(0, 255, (a, s, s, self.camera_channels), jnp.uint8),
            }
        )

    def observation_layout(self) -> dict[str, slice]:
        return dict(LAYOUT)

    # --------------------------------------------------------------------------------- dynamics
    def reset_env(self, key: jax.Array, params: AerialWildfireParams):
        draws = generator.WorldDraws(key, generator.draws_needed(self.num_agents, self.blocks))
        # Computed once (not per cell of the forest raster, into which XLA would fuse the fBm sums).
        lattice = materialise_small(generator.elevation_lattice(draws, self.blocks))
        village = generator.village_position(draws, params)
        cells = generator.forest_cells(lattice, village, draws.take_bits(), params, self.grid_size)
        slope = generator.block_slope(lattice, params, self.grid_size)
        return self._new_episode(draws, cells, slope, village, params)

    def reset_episode(self, key: jax.Array, state: AerialWildfireState, params: AerialWildfireParams):
        """A new episode on `state`'s world: same terrain, lakes, village and forest (regrown), new
        ignition, weather and planes. About one elementwise pass over the grid instead of a world's
        generation: the cheap reset path of `SameWorldAutoReset`. Returns `(obs, state)`."""
        params = self.clamp_params(params)  # like reset: params inside their documented bounds
        draws = generator.WorldDraws(key, generator.episode_draws_needed(self.num_agents))
        cells = generator.regrow(state.cells)
        return self._new_episode(draws, cells, state.slope, state.village, params)

    def _new_episode(self, draws, cells, slope, village, params: AerialWildfireParams):
        """Ignite the forest, draw the weather and spawn the planes: `(obs, state)` at step 0."""
        cells, _ = generator.ignite(draws, cells, village, params)
        cells = materialise_grid(cells, draws.bits[0].astype(jnp.int32))
        weather = generator.draw_weather(draws, params)
        position, heading = generator.spawn_planes(draws, self.num_agents, params)
        counts = tree_counts(cells)
        a = self.num_agents
        state = AerialWildfireState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            cells=cells,
            slope=slope,
            village=village,
            weather=weather,
            position=position,
            heading=heading,
            holding=jnp.ones(a, bool),  # planes start holding water [C]
            in_zone=in_pickup_zone(position, params),
            target=jnp.tile(jnp.asarray([[UNSEEN, UNSEEN, 0.0]], jnp.float32), (a, 1)),
            found_fire=jnp.zeros(a, bool),
            found_village=jnp.zeros(a, bool),
            burning_count=counts[1],
            num_trees=counts[0] + counts[1],
            fire_out_paid=jnp.asarray(False),
            village_penalty_paid=jnp.asarray(False),
        )
        return self._observe(state, params, zero_forward=params.forward_zero_at_reset > 0)[0], state

    def _observe(
        self, state: AerialWildfireState, params: AerialWildfireParams, zero_forward: jax.Array | bool = False
    ):
        """(obs, camera codes, sampled cell centres) of `state`."""
        x, z = camera_points(state.position, state.heading, self.camera_size, params)
        code, key = camera_cells(state.cells, x, z, params)
        centre_x, centre_z = key_centres(key, self.grid_size, params)
        vector = vector_obs(
            state.position, state.heading, state.holding, state.target, params, self.vector_size, zero_forward
        )
        return {"vector": vector, "visual": camera(code, self.camera_channels)}, code, (centre_x, centre_z)

    def step_env(self, key, state: AerialWildfireState, action, params: AerialWildfireParams) -> StepOutput:
        planes = dynamics.move_planes(state, action, params)
        fire = dynamics.advance_fire(key, state, planes, params, self._drop_half, self.grid_size)
        events = dynamics.events(state, planes, fire, params, self._sense_half)
        rewarded = assemble_rewards(
            self._reward_columns(planes, fire, events, params), params.task_weights[params.task]
        )
        new_state = state.replace(
            step=state.step + 1,
            cells=fire.cells,
            position=planes.position,
            heading=planes.heading,
            holding=planes.holding,
            in_zone=planes.in_zone,
            found_fire=state.found_fire | events.fire_near,
            found_village=state.found_village | events.village_near,
            burning_count=fire.counts[1],
            fire_out_paid=state.fire_out_paid | events.fire_out,
            village_penalty_paid=state.village_penalty_paid | events.village,
        )
        obs, new_state = self._observe_after_step(state, new_state, params)
        info = {**rewarded.info(), **self._statistics(state, planes, fire, events, rewarded.terms)}
        return StepOutput(
            obs=obs,
            state=new_state,
            reward=rewarded.reward,
            terminated=self._terminated(planes, events, params),
            info=info,
        )

    def _reward_columns(self, planes: Planes, fire: Fire, events: Events, params) -> dict[int, jax.Array]:
        """The unweighted reward terms, `{column: f32[A]}`."""
        a = self.num_agents
        columns = {
            CROSSED_BORDER: rewards.crossed_border(planes.crashed, params),
            PICK_UP_WATER: rewards.pick_up_water(planes.picked_up, params),
            FIRE_OUT: rewards.fire_out(events.fire_out, a, params),
            TOO_CLOSE_TO_VILLAGE: rewards.too_close_to_village(events.village, a, params),
            TIME_STEP_BURNING: rewards.time_step_burning(
                rewards.burning_condition(fire.counts, params), a, params
            ),
            FIND_FIRE: rewards.find_fire(events.find_fire, params),
            FIND_VILLAGE: rewards.find_village(events.find_village, params),
            EXTINGUISHING_TREE: rewards.extinguishing_trees(fire.extinguished, params),
            PREPARING_TREE: rewards.preparing_trees(fire.prepared, params),
        }
        return columns

    def _terminated(self, planes: Planes, events: Events, params: AerialWildfireParams) -> jax.Array:
        """bool[A]: a crash, the subtask's goal (subtasks 5-8 end per plane) or, if so set, the fire out."""
        task = params.task
        goal = jnp.where(task == TASK_PICK_UP_WATER, planes.picked_up, False)
        goal = goal | jnp.where(task == TASK_DROP_WATER, planes.dropping, False)
        goal = goal | jnp.where(task == TASK_FIND_FIRE, events.find_fire, False)
        goal = goal | jnp.where(task == TASK_FIND_VILLAGE, events.find_village, False)
        return planes.crashed | goal | ((params.end_episode_on_fire_out > 0) & events.fire_out)

    def _observe_after_step(self, state: AerialWildfireState, new_state: AerialWildfireState, params):
        """(obs, state) after a step: the closest-tree memory updated from what the cameras now see."""
        obs, code, centre = self._observe(new_state, params)
        target = update_closest_tree(
            state.target, code, *centre, new_state.position, new_state.heading, state.alive, params
        )
        obs["vector"] = obs["vector"].at[:, LAYOUT["closest_tree"].start : VECTOR_SIZE].set(target)
        return obs, new_state.replace(target=target)

    def _statistics(self, state, planes: Planes, fire: Fire, events: Events, terms: jax.Array) -> dict:
        """`stats` (HIVEX's logged statistics, per-step increments of active planes) and the fire's size."""
        a = self.num_agents
        burning_f = fire.counts[1].astype(jnp.float32)
        stats = {
            # HIVEX's logged statistics (per-step increments; task weights applied to "... Reward").
            "water_pickup": planes.picked_up.astype(jnp.float32),
            "water_drop": planes.dropping.astype(jnp.float32),
            "preparing_trees": fire.prepared,
            "preparing_trees_reward": terms[:, PREPARING_TREE],
            "extinguishing_trees": fire.extinguished,
            "extinguishing_trees_reward": terms[:, EXTINGUISHING_TREE],
            "fire_out": jnp.broadcast_to(events.fire_out.astype(jnp.float32), (a,)),
            "fire_too_close_to_city": jnp.broadcast_to(events.village.astype(jnp.float32), (a,)),
            "crash_count": planes.crashed.astype(jnp.float32),
            # Burning trees summed over the episode's steps (tree-steps of fire).
            "burning_tree_steps": jnp.broadcast_to(burning_f, (a,)),
        }
        alive_f = state.alive.astype(jnp.float32)
        return {
            "stats": jax.tree.map(lambda x: x * alive_f, stats),
            "burning_trees": burning_f,  # the fire's size over time
            "tree_counts": {  # the island's trees by state
                "unburnt": fire.counts[0].astype(jnp.float32),
                "burning": burning_f,
                "burnt": (state.num_trees - fire.counts[0] - fire.counts[1]).astype(jnp.float32),
            },
        }

    # ----------------------------------------------------------------------------------- extras
    def global_state(self, state: AerialWildfireState, params: AerialWildfireParams) -> jax.Array:
        """f32[A*9 + 11 + 2*B*B]: every plane's vector obs and alive flag, weather, village, time left,
        tree-state fractions, and per-terrain-block fractions of burning and healthy trees."""
        vector = vector_obs(state.position, state.heading, state.holding, state.target, params, VECTOR_SIZE)
        now = weather_now(state.weather, state.step.astype(jnp.float32), params)
        counts = tree_counts(state.cells)
        burnt = state.num_trees - counts[0] - counts[1]
        fractions = jnp.stack([counts[0], counts[1], burnt]).astype(jnp.float32) / jnp.maximum(
            state.num_trees, 1
        ).astype(jnp.float32)
        g, b = self.grid_size, self.blocks
        blocks = state.cells.reshape(b, g // b, b, g // b)
        burning = jnp.mean(blocks == BURNING, axis=(1, 3))
        healthy = jnp.mean(blocks == HEALTHY, axis=(1, 3))
        e = params.border_half_extent
        scalars = jnp.concatenate(
            [
                now["wind"] * now["wind_speed"],
                jnp.stack([now["wind_speed"], now["temperature"] / 50.0, now["humidity"] / 100.0]),
                state.village / e,
                (1.0 - state.step.astype(jnp.float32) / params.max_steps)[None],
                fractions,
            ]
        )
        return jnp.concatenate(
            [
                vector.reshape(-1),
                state.alive.astype(jnp.float32),
                scalars,
                burning.reshape(-1),
                healthy.reshape(-1),
            ]
        ).astype(jnp.float32)

    def render(self, state: AerialWildfireState, params: AerialWildfireParams) -> jax.Array:
        return render.render_world(state, params, self.render_size)
