"""DroneBasedReforestation-v0: drones carry seeds from a station to the forest's edge (reference §2.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, StepOutput
from hivex_jax.core.rewards import assemble_rewards
from hivex_jax.envs.drone_based_reforestation import dynamics, generator, heuristics, render, rewards
from hivex_jax.envs.drone_based_reforestation.observations import LAYOUT, VECTOR_SIZE, camera, vector_obs
from hivex_jax.envs.drone_based_reforestation.params import (
    DEFAULT_NUM_AGENTS,
    DEPLETE_HOLDING,
    DEPLETE_NO_SEED,
    DROP_SEED,
    DROP_SUCCESS,
    FAR_DISTANCE_DELTA,
    FERTILITY_DELTA,
    FIND_CLOSE_TREE,
    GROUP_UP,
    LANDSCAPE_DELTA,
    PICK_UP,
    RETURN_FURTHEST,
    REWARD_TERM_NAMES,
    RUNNING_BACK,
    STATIC_BOUNDS,
    SUPPORTED_AGENT_COUNTS,
    SUPPORTED_CAMERA_SIZES,
    TASK_NAMES,
    DroneParams,
)
from hivex_jax.envs.drone_based_reforestation.types import DroneState


class DroneBasedReforestation(Environment):
    """Drone-Based Reforestation. Static options: `num_agents` (1, 2, 3, 6, 9, 12), `camera_size`
    (16 or 32), `physics_substeps` (5), `max_forest_patches` (16), `max_planted_trees` (32),
    `render_size`, `terrain_grid` (False; True: worlds may carry a gridded terrain from a file,
    docs/worlds.md; grid lookups in flight and camera)."""

    env_id = "DroneBasedReforestation-v0"
    reward_term_names = REWARD_TERM_NAMES
    task_ids = tuple(range(len(TASK_NAMES)))
    task_names = TASK_NAMES
    level_field = "terrain_level"
    level_values = tuple(range(1, 11))
    params_type = DroneParams
    static_options: ClassVar[tuple[str, ...]] = (
        "num_agents",
        "camera_size",
        "physics_substeps",
        "max_forest_patches",
        "max_planted_trees",
        "render_size",
        "terrain_grid",
    )
    continuous_dims = 3  # throttle, steer, up/down
    discrete_branches = (2,)  # 0 no-op, 1 drop seed
    #: the package's scripted controller, `scripted_policy(obs, params) -> action` (heuristics.py)
    scripted_policy = staticmethod(heuristics.scripted_policy)

    def __init__(
        self,
        num_agents: int = DEFAULT_NUM_AGENTS,
        camera_size: int = 16,
        physics_substeps: int = 5,
        max_forest_patches: int = 16,
        max_planted_trees: int = 32,
        render_size: int = 128,
        terrain_grid: bool = False,
    ):
        num_agents, camera_size, physics_substeps, max_forest_patches, max_planted_trees, render_size = (
            check_static_options(
                self.env_id,
                STATIC_BOUNDS,
                num_agents=num_agents,
                camera_size=camera_size,
                physics_substeps=physics_substeps,
                max_forest_patches=max_forest_patches,
                max_planted_trees=max_planted_trees,
                render_size=render_size,
            )
        )
        if num_agents not in SUPPORTED_AGENT_COUNTS:
            raise ValueError(
                f"DroneBasedReforestation-v0: num_agents must be one of {SUPPORTED_AGENT_COUNTS} "
                f"(HIVEX's scalability counts); got {num_agents}"
            )
        if camera_size not in SUPPORTED_CAMERA_SIZES:
            raise ValueError(
                f"DroneBasedReforestation-v0: camera_size must be one of {SUPPORTED_CAMERA_SIZES}; "
                f"got {camera_size}"
            )
        if physics_substeps < 1 or max_forest_patches < 1 or max_planted_trees < 1:
            raise ValueError("physics_substeps, max_forest_patches and max_planted_trees must be >= 1")
        if max_forest_patches > generator.FOREST_CANDIDATES:
            raise ValueError(f"max_forest_patches must be <= {generator.FOREST_CANDIDATES}")
        self.num_agents = num_agents
        self.camera_size = camera_size
        self.physics_substeps = physics_substeps
        self.max_forest_patches = max_forest_patches
        self.max_planted_trees = max_planted_trees
        self.render_size = render_size
        self.terrain_grid = bool(terrain_grid)

    def default_params(self) -> DroneParams:
        return DroneParams()

    # ----------------------------------------------------------------------------------- spaces
    def observation_space(self, params: DroneParams | None = None) -> spaces.Dict:
        a, s = self.num_agents, self.camera_size
        return spaces.Dict(
            {
                "vector": spaces.Box(-3.0, 3.0, (a, VECTOR_SIZE), jnp.float32),
                "visual": spaces.Box(0, 255, (a, s, s, 1), jnp.uint8),
            }
        )

    def observation_layout(self) -> dict[str, slice]:
        return dict(LAYOUT)

    # ------------------------------------------------------------------------------- reset/obs
    def _observe(self, state: DroneState, params: DroneParams, seeds: bool = True) -> dict[str, jax.Array]:
        """Vector and camera observations; `seeds=False` skips planted seeds (none exist at reset)."""
        station = state.world.station
        vector = vector_obs(
            state.position, state.yaw, state.ground, state.holding_seed, state.energy, station, params
        )
        planted_present = dynamics.planted_present(state.planted_count, self.max_planted_trees)
        visual = camera(
            state.world,
            params,
            state.position,
            state.yaw,
            state.ground,
            state.planted if seeds else None,
            planted_present if seeds else None,
            self.camera_size,
        )
        return {"vector": vector, "visual": visual}

    def reset_env(self, key: jax.Array, params: DroneParams):
        a = self.num_agents
        world = generator.generate_world(key, params, self.max_forest_patches, self.terrain_grid)
        yaw = 2.0 * jnp.pi * generator.spawn_uniforms(key, a)[0]
        start = generator.spawn_drones(key, world, params, a)
        zeros = jnp.zeros(a, jnp.float32)
        false = jnp.zeros(a, bool)
        state = DroneState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            world=world,
            position=start["position"],
            yaw=yaw,
            speed=zeros,
            climb_rate=zeros,
            ground=start["ground"],
            shape_below=start["shape_below"],
            energy=jnp.ones(a, jnp.float32),
            holding_seed=jnp.broadcast_to(params.spawn_holding_seed == 1, (a,)),
            at_station=start["at_station"],
            pick_up_earned=jnp.ones(a, bool),
            grounded=false,
            found_tree=false,
            run_back_active=false,
            run_back_quality=zeros,
            run_back_start=zeros,
            run_back_best=zeros,
            best_potential=zeros,
            best_height=zeros,
            trip_distance=zeros,
            furthest_distance=zeros,
            planted=jnp.zeros((self.max_planted_trees, 2), jnp.float32),
            planted_count=jnp.int32(0),
        )
        return self._observe(state, params, seeds=False), state

    # ---------------------------------------------------------------------------------- step
    def step_env(self, key, state: DroneState, action, params: DroneParams) -> StepOutput:
        movable = state.alive & ~state.grounded
        weights = params.task_weights[params.task]
        position, yaw, speed, climb_rate, ground, shape_here = dynamics.fly(
            state.world,
            params,
            state.position,
            state.yaw,
            state.speed,
            state.climb_rate,
            state.ground,
            state.shape_below,
            action["continuous"],
            movable,
            self.physics_substeps,
        )
        near = dynamics.distances(state, position, shape_here, params)
        drop_action = action["discrete"][:, 0]
        seed = dynamics.seed_and_battery(
            state, drop_action, movable, near, weights, params, self.physics_substeps
        )
        run_back = dynamics.running_back(state, movable, seed, near, params)
        explore = dynamics.exploration(state, movable, position, ground, seed, near, params)
        rewarded = assemble_rewards(
            self._reward_columns(state, movable, position, near, seed, run_back, explore, params), weights
        )
        # Per-drone endings: success of the subtasks that pay for it, and an empty battery.
        ends = (
            (explore.found & (weights[FIND_CLOSE_TREE] != 0.0))
            | (seed.drop_success & (weights[DROP_SUCCESS] != 0.0))
            | (seed.out_of_energy & (params.out_of_energy_ends_episode == 1))
        )
        grounded = state.grounded | (seed.out_of_energy & ~ends)
        new_state = state.replace(
            step=state.step + 1,
            position=position,
            yaw=yaw,
            speed=jnp.where(grounded, 0.0, speed),
            climb_rate=jnp.where(grounded, 0.0, climb_rate),
            ground=ground,
            shape_below=shape_here,
            grounded=grounded,
            found_tree=state.found_tree | explore.found,
            **self._carried(seed, run_back, explore),
        )
        info = {**rewarded.info(), "stats": self._statistics(near, seed, explore, weights, params)}
        return StepOutput(
            obs=self._observe(new_state, params),
            state=new_state,
            reward=rewarded.reward,
            terminated=ends,
            info=info,
        )

    @staticmethod
    def _carried(
        seed: dynamics.SeedAndBattery, run_back: dynamics.RunningBack, explore: dynamics.Exploration
    ) -> dict[str, jax.Array]:
        """The state fields the step's seed, Running Back and exploration parts carry to the next step."""
        return {
            "energy": seed.energy,
            "holding_seed": seed.holding,
            "at_station": seed.at_station,
            "pick_up_earned": seed.pick_up_earned,
            "run_back_active": run_back.active,
            "run_back_quality": run_back.quality,
            "run_back_start": run_back.start,
            "run_back_best": run_back.best,
            "best_potential": explore.best_potential,
            "best_height": explore.best_height,
            "trip_distance": explore.trip_max,
            "furthest_distance": explore.furthest,
            "planted": seed.planted,
            "planted_count": seed.planted_count,
        }

    def _reward_columns(
        self, state, movable, position, near, seed, run_back, explore, params: DroneParams
    ) -> dict[int, jax.Array]:
        """The unweighted reward terms, `{column: f32[A]}`."""
        pen_holding, pen_no_seed = rewards.energy_penalties(state.holding_seed, params, self.physics_substeps)
        columns = {
            DROP_SEED: seed.seed_reward + seed.distance_reward,
            DEPLETE_HOLDING: jnp.where(movable, pen_holding, 0.0),
            DEPLETE_NO_SEED: jnp.where(movable, pen_no_seed, 0.0),
            PICK_UP: seed.pick_up_paid.astype(jnp.float32),
            RUNNING_BACK: run_back.reward,
            GROUP_UP: rewards.group_up_reward(position, movable, params),
            FERTILITY_DELTA: explore.fertility_delta,
            LANDSCAPE_DELTA: explore.landscape_delta,
            FAR_DISTANCE_DELTA: explore.trip_delta / params.far_distance_divisor,
            FIND_CLOSE_TREE: jnp.where(explore.found, params.find_tree_reward, 0.0),
            DROP_SUCCESS: jnp.where(seed.drop_success, params.drop_success_reward, 0.0),
            RETURN_FURTHEST: explore.return_reward,
        }
        return columns

    def _statistics(self, near, seed, explore, weights, params: DroneParams) -> dict[str, jax.Array]:
        """HIVEX's logged statistics (per-step increments; reference §6.12), task weight applied; extras."""
        f32 = lambda x: x.astype(jnp.float32)  # noqa: E731
        on_drop = lambda x: jnp.where(seed.dropping, x, 0.0)  # noqa: E731
        return {
            "tree_drop_count": f32(seed.dropping),
            "recharge_energy_count": f32(seed.charging),
            "save_location_count": jnp.zeros(self.num_agents, jnp.float32),
            "out_of_energy_count": f32(seed.out_of_energy),
            "cumulative_distance_until_tree_drop": on_drop(near.station),
            "cumulative_tree_drop_reward": seed.seed_reward * weights[DROP_SEED],
            "cumulative_distance_reward": seed.distance_reward * weights[DROP_SEED],
            "cumulative_normalized_distance_until_tree_drop": on_drop(
                near.station / (2.0 * params.arena_half_extent)
            ),
            "cumulative_distance_to_existing_trees": on_drop(near.forest),
            "highest_potential_soil_found": explore.fertility_delta,
            "highest_point_on_terrain_found": explore.landscape_delta,
            "furthest_distance_explored": explore.furthest_delta,
            # extra
            "seed_pick_up_count": f32(seed.pick_up),
            "close_tree_found": f32(explore.found),
        }

    # ----------------------------------------------------------------------------------- extras
    def global_state(self, state: DroneState, params: DroneParams) -> jax.Array:
        """f32[A*10 + A*6 + 3]: every drone's vector obs; per drone alive, returning, drop quality, best
        potential, trip distance / e_w, grounded; station (x, z) / e_w and the time left."""
        station = state.world.station
        vec = vector_obs(
            state.position, state.yaw, state.ground, state.holding_seed, state.energy, station, params
        )
        extras = jnp.stack(
            [
                state.alive.astype(jnp.float32),
                state.run_back_active.astype(jnp.float32),
                state.run_back_quality,
                state.best_potential,
                state.trip_distance / params.arena_half_extent,
                state.grounded.astype(jnp.float32),
            ],
            axis=-1,
        )
        time_left = 1.0 - state.step.astype(jnp.float32) / params.max_steps
        return jnp.concatenate(
            [
                vec.reshape(-1),
                extras.reshape(-1),
                station[jnp.asarray([0, 2])] / params.arena_half_extent,
                time_left[None],
            ]
        ).astype(jnp.float32)

    def render(self, state: DroneState, params: DroneParams) -> jax.Array:
        return render.render_world(state, params, self.render_size)
