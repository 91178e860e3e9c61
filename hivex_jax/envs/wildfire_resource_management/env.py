"""WildfireResourceManagement-v0: 9 watch towers share resources while a wildfire burns (reference §2.2)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, StepOutput
from hivex_jax.core.rewards import Rewards, assemble_rewards
from hivex_jax.envs.wildfire_resource_management import dynamics, generator, heuristics, render, rewards
from hivex_jax.envs.wildfire_resource_management.generator import BURNING, BURNT
from hivex_jax.envs.wildfire_resource_management.observations import LAYOUT, VECTOR_SIZE, observe
from hivex_jax.envs.wildfire_resource_management.params import (
    COLLECTIVE,
    NEIGHBOURHOOD,
    NUM_BRANCHES,
    NUM_TOWERS,
    REWARD_TERM_NAMES,
    SELF,
    STATIC_BOUNDS,
    TASK_NAMES,
    WildfireParams,
    task_weight_row,
)
from hivex_jax.envs.wildfire_resource_management.types import WildfireState

COARSE_MAP = 8  # global_state carries the fire as an 8 x 8 map of burning / burnt fractions


class WildfireResourceManagement(Environment):
    """Wildfire Resource Management. Static options: `fire_resolution` (cells per side, multiple of 8,
    16-128; default 32 = 37.5 m cells), `render_size`."""

    env_id = "WildfireResourceManagement-v0"
    reward_term_names = REWARD_TERM_NAMES
    task_ids = tuple(range(len(TASK_NAMES)))
    task_names = TASK_NAMES
    level_field = "terrain_level"
    level_values = tuple(range(1, 11))
    params_type = WildfireParams
    static_options: ClassVar[tuple[str, ...]] = ("fire_resolution", "render_size")
    discrete_branches = (3,) * NUM_BRANCHES
    #: the package's scripted controller, `scripted_policy(obs, params) -> action` (heuristics.py)
    scripted_policy = staticmethod(heuristics.scripted_policy)

    def __init__(self, fire_resolution: int = 32, render_size: int = 256):
        fire_resolution, render_size = check_static_options(
            self.env_id, STATIC_BOUNDS, fire_resolution=fire_resolution, render_size=render_size
        )
        if fire_resolution % COARSE_MAP or not 16 <= fire_resolution <= 128:
            raise ValueError(
                "WildfireResourceManagement-v0: fire_resolution must be a multiple of 8 in [16, 128]; "
                f"got {fire_resolution}"
            )
        self.num_agents = NUM_TOWERS
        self.fire_resolution = fire_resolution
        self.render_size = render_size
        self.neighbours = generator.neighbour_table()  # i32[9, 3], numpy (static)
        # Who hears whom with the message channel (hivex_jax.wrappers.MessageChannel): slot s of tower i
        # holds the message of neighbours[i, s], the tower allocation branch s + 1 hands resources to.
        self.message_senders = self.neighbours
        targets = generator.branch_targets()
        self._neighbours = jnp.asarray(self.neighbours)
        self._target_onehot = jnp.asarray(np.eye(NUM_TOWERS, dtype=np.float32)[targets])  # [A, 4, A]
        self._max_support = jnp.asarray(1.0 + generator.in_degree(), jnp.float32)

    def default_params(self) -> WildfireParams:
        return WildfireParams()

    # ----------------------------------------------------------------------------------- spaces
    def observation_space(self, params: WildfireParams | None = None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-1.0, 1.0, (self.num_agents, VECTOR_SIZE), jnp.float32)})

    def observation_layout(self) -> dict[str, slice]:
        return dict(LAYOUT)

    # --------------------------------------------------------------------------------- dynamics
    def _observe(self, state: WildfireState, support: jax.Array, params: WildfireParams):
        t = state.step.astype(jnp.float32)
        weather = state.tower_weather + generator.weather_offsets(state.weather_phase, t, params)
        return observe(
            state.fire_position,
            state.fire_found,
            weather,
            state.allocation,
            support,
            self._max_support,
            params,
        )

    def reset_env(self, key: jax.Array, params: WildfireParams):
        world = generator.generate_world(key, params, self.fire_resolution)
        position, distance, found = dynamics.nearest_fire(
            world["fire"] == BURNING, world["heights"], world["tower_xyz"], params
        )
        a = self.num_agents
        state = WildfireState(
            step=jnp.int32(0),
            alive=jnp.ones(a, bool),
            allocation=jnp.zeros((a, NUM_BRANCHES), jnp.float32),
            fire_position=position,
            fire_found=found,
            distance=distance,
            previous_distance=distance,  # nothing seen before: "not approaching"
            **world,
        )
        return self._observe(state, jnp.zeros(a, jnp.float32), params), state

    def step_env(self, key, state: WildfireState, action, params: WildfireParams) -> StepOutput:
        # 1. Towers re-allocate (inactive towers do nothing).
        act = jnp.where(state.alive[:, None], action["discrete"], dynamics.NOOP)
        allocation = dynamics.allocate(state.allocation, act, params)
        support = dynamics.received_support(allocation, self._target_onehot)

        # 2. Rewards: performance from the fire the towers saw when they acted (previous and current
        #    sighting, eq. 6-8), weighted by the resources as allocated now.
        p = rewards.tower_performance(state.previous_distance, state.distance, params)
        collective = rewards.collective_reward(p, params)
        columns = {
            SELF: rewards.self_reward(p, allocation[:, 0], support, params),
            NEIGHBOURHOOD: rewards.neighbourhood_reward(p, self._neighbours, allocation[:, 1:], params),
            COLLECTIVE: jnp.broadcast_to(collective, p.shape),
        }
        rewarded = assemble_rewards(columns, task_weight_row(params))

        # 3. The fire advances one step.
        fire = dynamics.advance_fire(state, support, self.fire_resolution, params)
        burning = fire == BURNING
        position, distance, found = dynamics.nearest_fire(burning, state.heights, state.tower_xyz, params)
        new_state = state.replace(
            step=state.step + 1,
            fire=fire,
            allocation=allocation,
            fire_position=position,
            fire_found=found,
            distance=distance,
            previous_distance=state.distance,
        )
        return StepOutput(
            obs=self._observe(new_state, support, params),
            state=new_state,
            reward=rewarded.reward,
            # the episode ends with the fire
            terminated=jnp.broadcast_to(~jnp.any(burning), (self.num_agents,)),
            info={**rewarded.info(), "stats": self._statistics(p, rewarded, allocation, state)},
        )

    @staticmethod
    def _statistics(p: jax.Array, rewarded: Rewards, allocation: jax.Array, state: WildfireState) -> dict:
        """HIVEX's logged statistics (reference §3.2 / §6.12). Per-step increments: the episode sums are
        HIVEX's per-episode values."""
        return {
            "individual_performance": p,
            "collective_performance": rewarded.terms[:, COLLECTIVE],
            "reward_for_moving_resources_to_self": rewarded.terms[:, SELF],
            "reward_for_moving_resources_to_neighbours": rewarded.terms[:, NEIGHBOURHOOD],
            # Increments of the resources handed out, so the episode sum is the count at the end.
            "individual_resource_count": jnp.sum(allocation, axis=-1) - jnp.sum(state.allocation, axis=-1),
        }

    # ----------------------------------------------------------------------------------- extras
    def global_state(self, state: WildfireState, params: WildfireParams) -> jax.Array:
        """f32[9*7 + 9*4 + 9 + 2*64 + 3]: every tower's observation, the allocation, the performance the
        next reward uses, 8 x 8 maps of burning and burnt fractions, the wind and the time left."""
        support = dynamics.received_support(state.allocation, self._target_onehot)
        obs = self._observe(state, support, params)["vector"]
        p = rewards.tower_performance(state.previous_distance, state.distance, params)
        k = self.fire_resolution // COARSE_MAP

        def coarse(mask: jax.Array) -> jax.Array:
            return (
                mask.astype(jnp.float32).reshape(COARSE_MAP, k, COARSE_MAP, k).mean(axis=(1, 3)).reshape(-1)
            )

        angle = dynamics.wind_now(state.wind_angle, state.wind_phase, state.step.astype(jnp.float32), params)
        wind = (
            state.wind_speed
            / jnp.maximum(params.wind_speed_max, 1e-6)
            * jnp.stack([jnp.cos(angle), jnp.sin(angle)])
        )
        time_left = 1.0 - state.step.astype(jnp.float32) / params.max_steps
        return jnp.concatenate(
            [
                obs.reshape(-1),
                state.allocation.reshape(-1) / params.resource_budget,
                p,
                coarse(state.fire == BURNING),
                coarse(state.fire == BURNT),
                wind,
                time_left[None],
            ]
        ).astype(jnp.float32)

    def render(self, state: WildfireState, params: WildfireParams) -> jax.Array:
        return render.render_world(state, params, self.neighbours, self.render_size)
