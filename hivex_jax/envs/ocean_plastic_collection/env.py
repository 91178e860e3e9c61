"""OceanPlasticCollection-v0: vessels collect floating plastic pebbles on a 400 x 400 sea (reference §2.4)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, StepOutput
from hivex_jax.core.rewards import Rewards, assemble_rewards
from hivex_jax.envs.ocean_plastic_collection import dynamics, generator, heuristics, render, rewards
from hivex_jax.envs.ocean_plastic_collection.observations import (
    APPROACH_CLIP,
    APPROACH_SIZE,
    BORDER_SIZE,
    LAYOUT,
    VECTOR_SIZE,
    VISUAL_SIZE,
    border_distances,
    closest_approach,
    extra_layout,
    local_frame,
    nearest_neighbour,
    observe,
)
from hivex_jax.envs.ocean_plastic_collection.params import (
    CLOSE_TO_OTHER_VESSEL,
    COLLECT_TRASH,
    COLLIDE_WITH_TRASH,
    COLLIDED_WITH_OTHER_VESSEL,
    CROSSED_BORDER,
    DEFAULT_NUM_AGENTS,
    DEFAULT_NUM_PEBBLES,
    DEFAULT_PHYSICS_SUBSTEPS,
    GLOBAL_LOWEST_TRASH_COLLECTED,
    MAX_AGENTS,
    NEARBY_TRASH_COUNT_DELTA,
    OBSTACLE_GRID,
    RESPAWN_SLOTS,
    REWARD_TERM_NAMES,
    STATIC_BOUNDS,
    TASK_NAMES,
    OceanPlasticParams,
)
from hivex_jax.envs.ocean_plastic_collection.types import OceanPlasticState

GLOBAL_TRASH_BINS = 8  # global_state carries an 8 x 8 histogram of the pebbles


class OceanPlasticCollection(Environment):
    """Ocean Plastic Collection.

    Static options: `num_agents` (3 in HIVEX; 1..16), `num_pebbles` (capacity of the pebble array,
    256), `physics_substeps` (5 = HIVEX's decision period), `render_size` (pixels), `obstacles` (False;
    True: worlds may carry a file's obstacle grid, docs/worlds.md; off, no obstacle code is compiled),
    `approach_features` (False; True, not in HIVEX: each frame's vector gains the nearest vessel's closest
    approach in the vessel's own frame, `observations.closest_approach`), `border_features` (False; True, not
    in HIVEX: each frame's vector gains the distances to the border ahead and nearest,
    `observations.border_distances`).
    """

    env_id = "OceanPlasticCollection-v0"
    reward_term_names = REWARD_TERM_NAMES
    task_ids = tuple(range(len(TASK_NAMES)))
    task_names = TASK_NAMES
    level_field = None
    level_values = ()
    params_type = OceanPlasticParams
    static_options: ClassVar[tuple[str, ...]] = (
        "num_agents",
        "num_pebbles",
        "physics_substeps",
        "render_size",
        "obstacles",
        "approach_features",
        "border_features",
    )
    discrete_branches = (2, 3)  # throttle {no-op, accelerate}, steer {no-op, right, left}
    #: the package's scripted controller, `scripted_policy(obs, params) -> action` (heuristics.py)
    scripted_policy = staticmethod(heuristics.scripted_policy)
    #: where the scripted controller's safety rules take over, `(obs, params) -> bool[A]` (the trainer's
    #: `teacher_where: safety`)
    scripted_safety_mask = staticmethod(heuristics.safety_mask)

    def __init__(
        self,
        num_agents: int = DEFAULT_NUM_AGENTS,
        num_pebbles: int = DEFAULT_NUM_PEBBLES,
        physics_substeps: int = DEFAULT_PHYSICS_SUBSTEPS,
        render_size: int = 256,
        obstacles: bool = False,
        approach_features: bool = False,
        border_features: bool = False,
    ):
        num_agents, num_pebbles, physics_substeps, render_size = check_static_options(
            self.env_id,
            STATIC_BOUNDS,
            num_agents=num_agents,
            num_pebbles=num_pebbles,
            physics_substeps=physics_substeps,
            render_size=render_size,
        )
        if not 1 <= num_agents <= MAX_AGENTS:
            raise ValueError(
                f"OceanPlasticCollection-v0: num_agents must be in 1..{MAX_AGENTS} (HIVEX uses 3); "
                f"got {num_agents}"
            )
        if num_pebbles < 1:
            raise ValueError(f"OceanPlasticCollection-v0: num_pebbles must be >= 1; got {num_pebbles}")
        if physics_substeps < 1:
            raise ValueError(
                f"OceanPlasticCollection-v0: physics_substeps must be >= 1; got {physics_substeps}"
            )
        self.num_agents = num_agents
        self.num_pebbles = num_pebbles
        self.physics_substeps = physics_substeps
        self.obstacles = bool(obstacles)
        self.render_size = render_size
        self.approach_features = bool(approach_features)
        self.border_features = bool(border_features)
        self.extra_size = APPROACH_SIZE * self.approach_features + BORDER_SIZE * self.border_features
        if self.extra_size:  # the scripted controller reads the standard 6 floats of each frame
            self.scripted_policy, self.scripted_safety_mask = heuristics.for_frame_width(
                VECTOR_SIZE + self.extra_size
            )

    def default_params(self) -> OceanPlasticParams:
        return OceanPlasticParams()

    # ----------------------------------------------------------------------------------- spaces
    def observation_space(self, params: OceanPlasticParams | None = None) -> spaces.Dict:
        a = self.num_agents
        bound = APPROACH_CLIP if self.extra_size else 2.0
        return spaces.Dict(
            {
                # positions stay within 1 + (one sub-step) / e_h: a vessel stops where it crossed
                # (the options' features are clipped to +-APPROACH_CLIP)
                "vector": spaces.Box(-bound, bound, (a, VECTOR_SIZE + self.extra_size), jnp.float32),
                "visual": spaces.Box(0, 255, (a, VISUAL_SIZE, VISUAL_SIZE, 1), jnp.uint8),
            }
        )

    def observation_layout(self) -> dict[str, slice]:
        return {**LAYOUT, **extra_layout(self.approach_features, self.border_features)}

    # --------------------------------------------------------------------------------- dynamics
    def reset_env(self, key: jax.Array, params: OceanPlasticParams):
        seed = generator.world_noise_seed(key)
        trash_map = generator.draw_trash_map(seed, params)
        pebble_x, pebble_z = generator.sample_trash(
            generator.trash_draw_uniforms(seed, jnp.uint32(generator.SALT_PEBBLES), self.num_pebbles),
            trash_map,
            params,
        )
        respawn_x, respawn_z = generator.sample_trash(
            generator.trash_draw_uniforms(seed, jnp.uint32(generator.SALT_RESPAWN), RESPAWN_SLOTS),
            trash_map,
            params,
        )
        positions, forward = generator.spawn_vessels(seed, self.num_agents, params)
        a = self.num_agents
        state = OceanPlasticState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            positions=positions,
            velocities=jnp.zeros((a, 2), jnp.float32),
            forward=forward,
            pebble_x=pebble_x,
            pebble_z=pebble_z,
            collected_total=jnp.zeros(a, jnp.float32),
            nearby_reference=jnp.zeros(a, jnp.float32),  # ntc_old = 0 (eq. 20-22)
            respawn_x=respawn_x,
            respawn_z=respawn_z,
            trash_map=trash_map,
            rng_seed=seed,
            # HIVEX's sea has none; None: the obstacle code is not compiled (it tripled the step time)
            obstacles=jnp.zeros((OBSTACLE_GRID, OBSTACLE_GRID), bool) if self.obstacles else None,
        )
        neighbours, _, extra = self._around(positions, state.velocities, forward, state.alive, params)
        ahead, starboard = local_frame(pebble_x, pebble_z, positions, forward)
        return observe(positions, forward, neighbours, ahead, starboard, params, extra), state

    def _around(self, positions, velocities, forward, present, params) -> tuple:
        """(nearest other present vessel's position f32[A, 2], its distance f32[A], the observation options'
        floats f32[A, E] (`extra_layout`) or None without them: then nothing more is computed)."""
        neighbours, distance = nearest_neighbour(positions, present)
        parts = []
        if self.approach_features:
            parts.append(closest_approach(positions, velocities, forward, present, self.physics_substeps))
        if self.border_features:
            parts.append(border_distances(positions, forward, params))
        return neighbours, distance, jnp.concatenate(parts, axis=-1) if parts else None

    def step_env(self, key, state: OceanPlasticState, action, params: OceanPlasticParams) -> StepOutput:
        positions, velocities, forward, crossed, collided = dynamics.move_vessels(
            state.positions,
            state.velocities,
            state.forward,
            state.alive,
            action["discrete"][:, 0],
            action["discrete"][:, 1],
            params,
            self.physics_substeps,
            state.obstacles,
        )
        pebbles = dynamics.collect_pebbles(state, positions, params)
        t = state.step + 1
        respawn_x, respawn_z = generator.respawn_queue(
            state.rng_seed, t, state.trash_map, state.obstacles, params
        )
        collected_total = state.collected_total + pebbles.count
        present = state.alive & ~crossed & ~collided
        neighbours, neighbour_distance, extra = self._around(positions, velocities, forward, present, params)
        ahead, starboard = local_frame(pebbles.afloat_x, pebbles.afloat_z, positions, forward)
        nearby = rewards.nearby_trash_count(ahead, starboard, params)
        nearby_delta, nearby_reference = rewards.nearby_trash_count_delta(
            nearby, state.nearby_reference, params
        )
        columns = {
            COLLECT_TRASH: rewards.collect_trash(pebbles.count, params),
            GLOBAL_LOWEST_TRASH_COLLECTED: rewards.global_lowest_trash_collected(
                collected_total, state.alive, params
            ),
            CROSSED_BORDER: rewards.crossed_border(crossed, params),
            COLLIDED_WITH_OTHER_VESSEL: rewards.collided_with_other_vessel(collided, params),
            CLOSE_TO_OTHER_VESSEL: rewards.close_to_other_vessel(neighbour_distance, params),
            NEARBY_TRASH_COUNT_DELTA: nearby_delta,
            COLLIDE_WITH_TRASH: rewards.collide_with_trash(pebbles.touched, params),
        }
        rewarded = assemble_rewards(columns, params.task_weights[params.task])
        new_state = state.replace(
            step=t,
            positions=positions,
            velocities=velocities,
            forward=forward,
            pebble_x=pebbles.pebble_x,
            pebble_z=pebbles.pebble_z,
            respawn_x=respawn_x,
            respawn_z=respawn_z,
            collected_total=collected_total,
            nearby_reference=nearby_reference,
        )
        return StepOutput(
            obs=observe(positions, forward, neighbours, ahead, starboard, params, extra),
            state=new_state,
            reward=rewarded.reward,
            terminated=crossed | collided,
            info={
                **rewarded.info(),
                "stats": self._statistics(rewarded, state.alive, pebbles, crossed, collided),
                "nearby_trash_count": nearby,
            },
        )

    @staticmethod
    def _statistics(rewarded: Rewards, alive, pebbles: dynamics.Collection, crossed, collided) -> dict:
        """HIVEX's logged statistics (task weight applied, as in the reference logs) and the counts
        behind them."""
        active = alive.astype(jnp.float32)
        return {
            "local_reward": rewarded.terms[:, COLLECT_TRASH] * active,
            "global_reward": rewarded.terms[:, GLOBAL_LOWEST_TRASH_COLLECTED] * active,
            "pebbles_collected": pebbles.count,
            "vessel_collisions": collided.astype(jnp.float32),
            "border_crossings": crossed.astype(jnp.float32),
            "trash_contacts": pebbles.touched.astype(jnp.float32),
            "close_to_other_vessel_steps": (rewarded.raw[:, CLOSE_TO_OTHER_VESSEL] != 0).astype(jnp.float32)
            * active,
        }

    # ----------------------------------------------------------------------------------- extras
    def global_state(self, state: OceanPlasticState, params: OceanPlasticParams) -> jax.Array:
        """f32[8A + 1 + 64]: every vessel's position, forward, velocity, alive flag and collected count,
        the time left, and log(1 + pebble count) on an 8 x 8 grid over the sea."""
        e = params.sea_half_extent
        top_speed = params.thrust / params.forward_drag
        b = GLOBAL_TRASH_BINS
        column = jnp.clip(jnp.floor((state.pebble_x / e + 1.0) * 0.5 * b).astype(jnp.int32), 0, b - 1)
        row = jnp.clip(jnp.floor((state.pebble_z / e + 1.0) * 0.5 * b).astype(jnp.int32), 0, b - 1)
        index = jnp.where(dynamics.pebbles_afloat(state.pebble_x), row * b + column, b * b)
        histogram = jnp.zeros(b * b + 1, jnp.float32).at[index].add(1.0)[: b * b]
        time_left = 1.0 - state.step.astype(jnp.float32) / params.max_steps
        parts = [
            (state.positions / e).reshape(-1),
            state.forward.reshape(-1),
            (state.velocities / top_speed).reshape(-1),
            state.alive.astype(jnp.float32),
            state.collected_total / 100.0,
            time_left[None],
            jnp.log1p(histogram),
        ]
        return jnp.concatenate(parts).astype(jnp.float32)

    def render(self, state: OceanPlasticState, params: OceanPlasticParams) -> jax.Array:
        return render.render_sea(state, params, self.render_size)
