"""DroneBasedReforestation-v0: drones carry seeds from a station to the forest's edge (reference §2.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.envs.drone_based_reforestation import generator, render, rewards
from hivex_jax.envs.drone_based_reforestation.dynamics import battery_drain, fly
from hivex_jax.envs.drone_based_reforestation.generator import World, ground_height, terrain_shape
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
    STATION_ALWAYS,
    STATION_TERMS,
    SUPPORTED_AGENT_COUNTS,
    SUPPORTED_CAMERA_SIZES,
    TASK_NAMES,
    TASK_PICK_UP_SEED,
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


class DroneBasedReforestation(Environment):
    """Drone-Based Reforestation. Static options: `num_agents` (1, 2, 3, 6, 9, 12), `camera_size`
    (16 or 32), `physics_substeps` (5), `max_forest_patches` (16), `max_planted_trees` (32),
    `render_size`."""

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
    )
    continuous_dims = 3  # throttle, steer, up/down
    discrete_branches = (2,)  # 0 no-op, 1 drop seed

    def __init__(
        self,
        num_agents: int = DEFAULT_NUM_AGENTS,
        camera_size: int = 16,
        physics_substeps: int = 5,
        max_forest_patches: int = 16,
        max_planted_trees: int = 32,
        render_size: int = 128,
    ):
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
        world = generator.generate_world(key, params, self.max_forest_patches)
        station = world.station
        u = generator.spawn_uniforms(key, a)
        yaw = 2.0 * jnp.pi * u[0]
        # Default start: a small ring around the station point (inside the charging radius).
        ring = 2.0 * jnp.pi * (jnp.arange(a) / a + u[1])
        ring_xz = station[jnp.asarray([0, 2])] + params.spawn_ring_radius * jnp.stack(
            [jnp.cos(ring), jnp.sin(ring)], -1
        )
        # Pick-up Seed at Base: a random start within random_spawn_radius of the station.
        r = params.random_spawn_radius * jnp.sqrt(u[2])
        ang = 2.0 * jnp.pi * u[3]
        far_xz = station[jnp.asarray([0, 2])] + r[:, None] * jnp.stack([jnp.cos(ang), jnp.sin(ang)], -1)
        random_start = params.task == TASK_PICK_UP_SEED
        e = params.arena_half_extent
        xz = jnp.clip(jnp.where(random_start, far_xz, ring_xz), -e, e)
        shape_below = terrain_shape(world, xz, params)
        ground = ground_height(shape_below, params)
        y = jnp.where(random_start, ground + params.random_spawn_height, station[1])
        y = jnp.clip(y, ground + params.ground_clearance, params.flight_ceiling)
        position = jnp.stack([xz[:, 0], y, xz[:, 1]], axis=-1)
        zeros = jnp.zeros(a, jnp.float32)
        false = jnp.zeros(a, bool)
        station_3d = jnp.linalg.norm(position - station, axis=-1)
        state = DroneState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            world=world,
            position=position,
            yaw=yaw,
            speed=zeros,
            climb_rate=zeros,
            ground=ground,
            shape_below=shape_below,
            energy=jnp.ones(a, jnp.float32),
            holding_seed=jnp.broadcast_to(params.spawn_holding_seed == 1, (a,)),
            at_station=station_3d <= params.charge_radius,
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
        world = state.world
        n_sub = self.physics_substeps
        p_cap = self.max_planted_trees
        movable = state.alive & ~state.grounded
        station = world.station
        weights = params.task_weights[params.task]

        position, yaw, speed, climb_rate, ground, shape_here = fly(
            world,
            params,
            state.position,
            state.yaw,
            state.speed,
            state.climb_rate,
            state.ground,
            state.shape_below,
            action["continuous"],
            movable,
            n_sub,
        )
        xz = position[:, (0, 2)]
        on_land = shape_here >= params.water_level
        forest_d = disc_union_distance(xz, world.forest_centres, world.forest_radii)
        planted_present = jnp.arange(p_cap) < jnp.minimum(state.planted_count, p_cap)
        to_planted = jnp.sqrt(jnp.sum((xz[:, None, :] - state.planted[None]) ** 2, axis=-1))
        planted_d = jnp.min(jnp.where(planted_present[None, :], to_planted, FAR), axis=-1)
        trees_d = jnp.where(params.drop_counts_new_trees == 1, jnp.minimum(forest_d, planted_d), forest_d)
        station_d = jnp.sqrt(jnp.sum((xz - station[jnp.asarray([0, 2])]) ** 2, axis=-1))
        station_3d = jnp.sqrt(jnp.sum((position - station) ** 2, axis=-1))

        # --- drop a seed
        holding0 = state.holding_seed
        # Seeds are not dropped on the station pad (a drop/pick-up loop there would farm pick-ups).
        dropping = movable & holding0 & (action["discrete"][:, 0] == 1) & (station_3d > params.charge_radius)
        seed_r, distance_r = rewards.drop_seed_reward(trees_d, planted_d, station_d, on_land, params)
        seed_r = jnp.where(dropping, seed_r, 0.0)
        distance_r = jnp.where(dropping, distance_r, 0.0)
        holding1 = holding0 & ~dropping
        plant = dropping & on_land
        slot = (state.planted_count + jnp.cumsum(plant) - 1) % p_cap
        planted = state.planted.at[jnp.where(plant, slot, p_cap)].set(xz, mode="drop")
        planted_count = state.planted_count + jnp.sum(plant, dtype=jnp.int32)

        # --- station: seed pick-up and recharge, in the tasks that use it (HIVEX logs no recharge and no
        # drop in tasks 1, 4 and 5: there drones fly the whole episode without a seed)
        station_on = (params.station_mode == STATION_ALWAYS) | jnp.any(
            weights[jnp.asarray(STATION_TERMS)] != 0.0
        )
        at_station = movable & station_on & (station_3d <= params.charge_radius)
        arrival = at_station & ~state.at_station
        pick_up = at_station & ~holding1
        holding = holding1 | pick_up
        pick_up_paid = pick_up & (state.pick_up_earned | (params.pick_up_requires_planting == 0))
        pick_up_earned = (state.pick_up_earned & ~pick_up) | (dropping & (seed_r > 0.0))
        charging = at_station & (state.energy < 1.0)
        drained = state.energy - jnp.where(movable, battery_drain(holding0, params, n_sub), 0.0)
        energy = jnp.clip(drained + jnp.where(at_station, params.recharge_per_decision, 0.0), 0.0, 1.0)
        # Empty below half a substep's drain: the f32 sum of 400 drains of 0.0025 must empty a battery
        # exactly on the 400th decision, whatever the rounding.
        out_of_energy = movable & (energy < 0.5 * params.battery_drain_no_seed)
        energy = jnp.where(out_of_energy, 0.0, energy)
        pen_holding, pen_no_seed = rewards.energy_penalties(holding0, params, n_sub)

        # --- Incremental Running Back: pay the return of the previous drop; a valid drop starts a new one
        rb_reward, rb_best = rewards.running_back_reward(
            state.run_back_active & movable,
            state.run_back_quality,
            state.run_back_start,
            state.run_back_best,
            station_3d,
            params,
        )
        rb_reward = jnp.where(dropping, 0.0, rb_reward)
        new_run = dropping & (seed_r > 0.0)
        start_inc = jnp.floor(station_3d / params.running_back_increment)
        run_active = jnp.where(new_run, True, state.run_back_active) & ~at_station
        run_quality = jnp.where(
            new_run, rewards.drop_quality(seed_r, distance_r, params), state.run_back_quality
        )
        run_start = jnp.where(new_run, start_inc, state.run_back_start)
        run_best = jnp.where(new_run, start_inc, rb_best)

        # --- exploration terms (running maxima)
        valid_here = rewards.valid_location(trees_d, planted_d, on_land, params)
        potential = jnp.where(valid_here, rewards.reforestation_potential(trees_d, params), 0.0)
        fertility_delta, best_potential = rewards.running_max_delta(potential, state.best_potential, movable)
        height = jnp.where(params.landscape_height_mode == LANDSCAPE_DRONE_HEIGHT, position[:, 1], ground)
        landscape_delta, best_height = rewards.running_max_delta(height, state.best_height, movable)
        trip_delta, trip_max = rewards.running_max_delta(station_d, state.trip_distance, movable)
        furthest_delta, furthest = rewards.running_max_delta(station_d, state.furthest_distance, movable)
        return_reward = jnp.where(arrival, trip_max / params.far_distance_divisor, 0.0)
        trip_max = jnp.where(arrival, station_d, trip_max)

        # --- Find Close Tree (once) and the Drop Seed subtask's success
        found = movable & ~state.found_tree & rewards.finds_close_tree(forest_d, params)
        drop_success = dropping & ((params.drop_success_requires_valid == 0) | (seed_r > 0.0))

        columns = {
            DROP_SEED: seed_r + distance_r,
            DEPLETE_HOLDING: jnp.where(movable, pen_holding, 0.0),
            DEPLETE_NO_SEED: jnp.where(movable, pen_no_seed, 0.0),
            PICK_UP: pick_up_paid.astype(jnp.float32),
            RUNNING_BACK: rb_reward,
            GROUP_UP: rewards.group_up_reward(position, movable, params),
            FERTILITY_DELTA: fertility_delta,
            LANDSCAPE_DELTA: landscape_delta,
            FAR_DISTANCE_DELTA: trip_delta / params.far_distance_divisor,
            FIND_CLOSE_TREE: jnp.where(found, params.find_tree_reward, 0.0),
            DROP_SUCCESS: jnp.where(drop_success, params.drop_success_reward, 0.0),
            RETURN_FURTHEST: return_reward,
        }
        raw = jnp.stack([columns[k] for k in range(len(REWARD_TERM_NAMES))], axis=-1).astype(jnp.float32)
        terms = raw * weights

        # --- per-drone endings: success of the subtasks that pay for it, and an empty battery
        ends = (
            (found & (weights[FIND_CLOSE_TREE] != 0.0))
            | (drop_success & (weights[DROP_SUCCESS] != 0.0))
            | (out_of_energy & (params.out_of_energy_ends_episode == 1))
        )
        grounded = state.grounded | (out_of_energy & ~ends)

        new_state = state.replace(
            step=state.step + 1,
            position=position,
            yaw=yaw,
            speed=jnp.where(grounded, 0.0, speed),
            climb_rate=jnp.where(grounded, 0.0, climb_rate),
            ground=ground,
            shape_below=shape_here,
            energy=energy,
            holding_seed=holding,
            at_station=at_station,
            pick_up_earned=pick_up_earned,
            grounded=grounded,
            found_tree=state.found_tree | found,
            run_back_active=run_active,
            run_back_quality=run_quality,
            run_back_start=run_start,
            run_back_best=run_best,
            best_potential=best_potential,
            best_height=best_height,
            trip_distance=trip_max,
            furthest_distance=furthest,
            planted=planted,
            planted_count=planted_count,
        )
        f32 = lambda x: x.astype(jnp.float32)  # noqa: E731
        on_drop = lambda x: jnp.where(dropping, x, 0.0)  # noqa: E731
        stats = {
            # HIVEX's logged statistics (per-step increments; reference §6.12), task weight applied
            "tree_drop_count": f32(dropping),
            "recharge_energy_count": f32(charging),
            "save_location_count": jnp.zeros(self.num_agents, jnp.float32),
            "out_of_energy_count": f32(out_of_energy),
            "cumulative_distance_until_tree_drop": on_drop(station_d),
            "cumulative_tree_drop_reward": seed_r * weights[DROP_SEED],
            "cumulative_distance_reward": distance_r * weights[DROP_SEED],
            "cumulative_normalized_distance_until_tree_drop": on_drop(
                station_d / (2.0 * params.arena_half_extent)
            ),
            "cumulative_distance_to_existing_trees": on_drop(forest_d),
            "highest_potential_soil_found": fertility_delta,
            "highest_point_on_terrain_found": landscape_delta,
            "furthest_distance_explored": furthest_delta,
            # extra
            "seed_pick_up_count": f32(pick_up),
            "close_tree_found": f32(found),
        }
        info = {"reward_terms": terms, "raw_reward_terms": raw, "stats": stats}
        return StepOutput(
            obs=self._observe(new_state, params),
            state=new_state,
            reward=jnp.sum(terms, axis=-1),
            terminated=ends,
            info=info,
        )

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
