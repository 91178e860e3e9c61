"""DroneBasedReforestation-v0: drones carry seeds from a station to the forest's edge (reference §2.3)."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.envs.drone_based_reforestation import generator, heuristics, render, rewards
from hivex_jax.envs.drone_based_reforestation.dynamics import battery_drain, fly
from hivex_jax.envs.drone_based_reforestation.generator import World
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
    LANDSCAPE_DRONE_HEIGHT,
    PICK_UP,
    RETURN_FURTHEST,
    REWARD_TERM_NAMES,
    RUNNING_BACK,
    STATIC_BOUNDS,
    STATION_ALWAYS,
    STATION_TERMS,
    SUPPORTED_AGENT_COUNTS,
    SUPPORTED_CAMERA_SIZES,
    TASK_NAMES,
    DroneParams,
)
from hivex_jax.procgen.terrain import disc_union_distance

FAR = 1.0e4  # distance reported when there is no tree of a kind


@struct.dataclass
class DroneState(EnvState):
    world: World
    position: jax.Array  # f32[A, 3] (x, y, z), y up
    yaw: jax.Array  # f32[A], rad; forward = (cos, sin) in (x, z)
    speed: jax.Array  # f32[A], m/s forward
    climb_rate: jax.Array  # f32[A], m/s
    ground: jax.Array  # f32[A], ground / lake-surface height under the drone
    shape_below: jax.Array  # f32[A], terrain shape under the drone (< water_level: over a lake)
    energy: jax.Array  # f32[A] in [0, 1]
    holding_seed: jax.Array  # bool[A]
    at_station: jax.Array  # bool[A], within the charging radius after the last decision
    pick_up_earned: jax.Array  # bool[A], the next pick-up pays (first seed, or after a valid drop)
    grounded: jax.Array  # bool[A], battery empty and out_of_energy_ends_episode == 0
    found_tree: jax.Array  # bool[A], Find Close Tree already paid
    run_back_active: jax.Array  # bool[A], returning after a drop
    run_back_quality: jax.Array  # f32[A], r_bm of the last drop
    run_back_start: jax.Array  # f32[A], increments to the station at the drop
    run_back_best: jax.Array  # f32[A], fewest increments reached since
    best_potential: jax.Array  # f32[A], highest reforestation potential found
    best_height: jax.Array  # f32[A], highest point found
    trip_distance: jax.Array  # f32[A], furthest from the station since the last return (m)
    furthest_distance: jax.Array  # f32[A], furthest from the station this episode (m)
    planted: jax.Array  # f32[P, 2], dropped seeds (ring buffer, newest overwrite oldest)
    planted_count: jax.Array  # i32[], seeds dropped on land so far


class Distances(NamedTuple):
    """f32[A] distances (m) after this step's flight; `xz` f32[A, 2], `on_land` bool[A]."""

    xz: jax.Array
    on_land: jax.Array
    forest: jax.Array  # to the closest existing forest
    planted: jax.Array  # to the closest planted seed (FAR if none)
    trees: jax.Array  # to the closest tree that counts for a drop
    station: jax.Array  # horizontal, to the station
    station_3d: jax.Array


class SeedAndBattery(NamedTuple):
    """This step's seed drop, station visit and battery, per drone."""

    dropping: jax.Array
    seed_reward: jax.Array  # r_s of the drop (0 without one)
    distance_reward: jax.Array  # r_d of the drop
    planted: jax.Array  # f32[P, 2]
    planted_count: jax.Array  # i32[]
    at_station: jax.Array
    arrival: jax.Array
    pick_up: jax.Array
    pick_up_paid: jax.Array
    pick_up_earned: jax.Array
    holding: jax.Array
    charging: jax.Array
    energy: jax.Array
    out_of_energy: jax.Array
    drop_success: jax.Array


class RunningBack(NamedTuple):
    """Incremental Running Back: this step's reward and the return being tracked."""

    reward: jax.Array
    active: jax.Array
    quality: jax.Array
    start: jax.Array
    best: jax.Array


class Exploration(NamedTuple):
    """The exploration terms' increments and running maxima, and Find Close Tree."""

    fertility_delta: jax.Array
    best_potential: jax.Array
    landscape_delta: jax.Array
    best_height: jax.Array
    trip_delta: jax.Array
    return_reward: jax.Array
    trip_max: jax.Array
    furthest_delta: jax.Array
    furthest: jax.Array
    found: jax.Array


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
        p_cap = self.max_planted_trees
        planted_present = jnp.arange(p_cap) < jnp.minimum(state.planted_count, p_cap)
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
        position, yaw, speed, climb_rate, ground, shape_here = fly(
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
        near = self._distances(state, position, shape_here, params)
        seed = self._seed_and_battery(state, action, movable, near, weights, params)
        run_back = self._running_back(state, movable, seed, near, params)
        explore = self._exploration(state, movable, position, ground, seed, near, params)
        raw = self._reward_terms(state, movable, position, near, seed, run_back, explore, params)
        terms = raw * weights

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
            energy=seed.energy,
            holding_seed=seed.holding,
            at_station=seed.at_station,
            pick_up_earned=seed.pick_up_earned,
            grounded=grounded,
            found_tree=state.found_tree | explore.found,
            run_back_active=run_back.active,
            run_back_quality=run_back.quality,
            run_back_start=run_back.start,
            run_back_best=run_back.best,
            best_potential=explore.best_potential,
            best_height=explore.best_height,
            trip_distance=explore.trip_max,
            furthest_distance=explore.furthest,
            planted=seed.planted,
            planted_count=seed.planted_count,
        )
        info = {
            "reward_terms": terms,
            "raw_reward_terms": raw,
            "stats": self._statistics(near, seed, explore, weights, params),
        }
        return StepOutput(
            obs=self._observe(new_state, params),
            state=new_state,
            reward=jnp.sum(terms, axis=-1),
            terminated=ends,
            info=info,
        )

    def _distances(self, state: DroneState, position, shape_here, params: DroneParams) -> Distances:
        """Distances after the flight to the forest, the planted seeds and the station."""
        p_cap = self.max_planted_trees
        station = state.world.station
        xz = position[:, (0, 2)]
        forest_d = disc_union_distance(xz, state.world.forest_centres, state.world.forest_radii)
        planted_present = jnp.arange(p_cap) < jnp.minimum(state.planted_count, p_cap)
        to_planted = jnp.sqrt(jnp.sum((xz[:, None, :] - state.planted[None]) ** 2, axis=-1))
        planted_d = jnp.min(jnp.where(planted_present[None, :], to_planted, FAR), axis=-1)
        return Distances(
            xz=xz,
            on_land=shape_here >= params.water_level,
            forest=forest_d,
            planted=planted_d,
            trees=jnp.where(params.drop_counts_new_trees == 1, jnp.minimum(forest_d, planted_d), forest_d),
            station=jnp.sqrt(jnp.sum((xz - station[jnp.asarray([0, 2])]) ** 2, axis=-1)),
            station_3d=jnp.sqrt(jnp.sum((position - station) ** 2, axis=-1)),
        )

    def _seed_and_battery(
        self, state: DroneState, action, movable, near: Distances, weights, params: DroneParams
    ) -> SeedAndBattery:
        """Drop a seed (planted if on land), pick one up and recharge at the station, drain the battery."""
        p_cap = self.max_planted_trees
        holding0 = state.holding_seed
        # Seeds are not dropped on the station pad (a drop/pick-up loop there would farm pick-ups).
        dropping = (
            movable & holding0 & (action["discrete"][:, 0] == 1) & (near.station_3d > params.charge_radius)
        )
        seed_r, distance_r = rewards.drop_seed_reward(
            near.trees, near.planted, near.station, near.on_land, params
        )
        seed_r = jnp.where(dropping, seed_r, 0.0)
        distance_r = jnp.where(dropping, distance_r, 0.0)
        holding1 = holding0 & ~dropping
        plant = dropping & near.on_land
        slot = (state.planted_count + jnp.cumsum(plant) - 1) % p_cap
        planted = state.planted.at[jnp.where(plant, slot, p_cap)].set(near.xz, mode="drop")

        # The station (seed pick-up and recharge) works in the tasks that use it (HIVEX logs no recharge
        # and no drop in tasks 1, 4 and 5: there drones fly the whole episode without a seed).
        station_on = (params.station_mode == STATION_ALWAYS) | jnp.any(
            weights[jnp.asarray(STATION_TERMS)] != 0.0
        )
        at_station = movable & station_on & (near.station_3d <= params.charge_radius)
        pick_up = at_station & ~holding1
        drained = state.energy - jnp.where(
            movable, battery_drain(holding0, params, self.physics_substeps), 0.0
        )
        energy = jnp.clip(drained + jnp.where(at_station, params.recharge_per_decision, 0.0), 0.0, 1.0)
        # Empty below half a substep's drain: the f32 sum of 400 drains of 0.0025 must empty a battery
        # exactly on the 400th decision, whatever the rounding.
        out_of_energy = movable & (energy < 0.5 * params.battery_drain_no_seed)
        return SeedAndBattery(
            dropping=dropping,
            seed_reward=seed_r,
            distance_reward=distance_r,
            planted=planted,
            planted_count=state.planted_count + jnp.sum(plant, dtype=jnp.int32),
            at_station=at_station,
            arrival=at_station & ~state.at_station,
            pick_up=pick_up,
            pick_up_paid=pick_up & (state.pick_up_earned | (params.pick_up_requires_planting == 0)),
            pick_up_earned=(state.pick_up_earned & ~pick_up) | (dropping & (seed_r > 0.0)),
            holding=holding1 | pick_up,
            charging=at_station & (state.energy < 1.0),
            energy=jnp.where(out_of_energy, 0.0, energy),
            out_of_energy=out_of_energy,
            drop_success=dropping & ((params.drop_success_requires_valid == 0) | (seed_r > 0.0)),
        )

    def _running_back(
        self, state: DroneState, movable, seed: SeedAndBattery, near: Distances, params: DroneParams
    ) -> RunningBack:
        """Incremental Running Back: pay the return of the previous drop; a valid drop starts a new one."""
        rb_reward, rb_best = rewards.running_back_reward(
            state.run_back_active & movable,
            state.run_back_quality,
            state.run_back_start,
            state.run_back_best,
            near.station_3d,
            params,
        )
        new_run = seed.dropping & (seed.seed_reward > 0.0)
        start_inc = jnp.floor(near.station_3d / params.running_back_increment)
        quality = rewards.drop_quality(seed.seed_reward, seed.distance_reward, params)
        return RunningBack(
            reward=jnp.where(seed.dropping, 0.0, rb_reward),
            active=jnp.where(new_run, True, state.run_back_active) & ~seed.at_station,
            quality=jnp.where(new_run, quality, state.run_back_quality),
            start=jnp.where(new_run, start_inc, state.run_back_start),
            best=jnp.where(new_run, start_inc, rb_best),
        )

    def _exploration(
        self, state: DroneState, movable, position, ground, seed: SeedAndBattery, near: Distances, params
    ) -> Exploration:
        """The exploration terms' running maxima (potential, height, distances) and Find Close Tree."""
        valid_here = rewards.valid_location(near.trees, near.planted, near.on_land, params)
        potential = jnp.where(valid_here, rewards.reforestation_potential(near.trees, params), 0.0)
        fertility_delta, best_potential = rewards.running_max_delta(potential, state.best_potential, movable)
        height = jnp.where(params.landscape_height_mode == LANDSCAPE_DRONE_HEIGHT, position[:, 1], ground)
        landscape_delta, best_height = rewards.running_max_delta(height, state.best_height, movable)
        trip_delta, trip_max = rewards.running_max_delta(near.station, state.trip_distance, movable)
        furthest_delta, furthest = rewards.running_max_delta(near.station, state.furthest_distance, movable)
        return Exploration(
            fertility_delta=fertility_delta,
            best_potential=best_potential,
            landscape_delta=landscape_delta,
            best_height=best_height,
            trip_delta=trip_delta,
            return_reward=jnp.where(seed.arrival, trip_max / params.far_distance_divisor, 0.0),
            trip_max=jnp.where(seed.arrival, near.station, trip_max),
            furthest_delta=furthest_delta,
            furthest=furthest,
            found=movable & ~state.found_tree & rewards.finds_close_tree(near.forest, params),
        )

    def _reward_terms(
        self, state, movable, position, near, seed, run_back, explore, params: DroneParams
    ) -> jax.Array:
        """f32[A, K]: the unweighted reward terms, columns in REWARD_TERM_NAMES order."""
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
        return jnp.stack([columns[k] for k in range(len(REWARD_TERM_NAMES))], axis=-1).astype(jnp.float32)

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
