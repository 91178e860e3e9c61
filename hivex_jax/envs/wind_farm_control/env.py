"""WindFarmControl-v0: turbines yaw into a spatially and temporally varying wind (reference §2.1)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from hivex_jax.core import spaces
from hivex_jax.core.bounds import check_static_options
from hivex_jax.core.environment import Environment, StepOutput
from hivex_jax.core.rewards import assemble_rewards
from hivex_jax.envs.wind_farm_control import generator, heuristics, render, rewards, wakes
from hivex_jax.envs.wind_farm_control.dynamics import rotate, wind_angle
from hivex_jax.envs.wind_farm_control.observations import LAYOUT, VECTOR_SIZE, observe
from hivex_jax.envs.wind_farm_control.params import (
    ALL_PATTERN_NAMES,
    AVOID_DAMAGE,
    DEFAULT_NUM_AGENTS,
    FIRST_REAL_FARM,
    GENERATE_ENERGY,
    PATTERN_NAMES,
    REAL_FARM_SIZES,
    REWARD_TERM_NAMES,
    STATIC_BOUNDS,
    SUPPORTED_AGENT_COUNTS,
    TASK_NAMES,
    WIND_SCHEDULE_KNOTS,
    WindFarmParams,
)
from hivex_jax.envs.wind_farm_control.types import WindFarmState


class WindFarmControl(Environment):
    """Wind Farm Control. Static options: `num_agents` (1, 2, 4, 8, 12, 16; 48, 80 for the real farms),
    `render_size`, `wake_model` ("none" = HIVEX, "gauss", "jensen"; wakes.py)."""

    env_id = "WindFarmControl-v0"
    reward_term_names = REWARD_TERM_NAMES
    task_ids = tuple(range(len(TASK_NAMES)))
    task_names = TASK_NAMES
    level_field = "pattern"
    level_values = tuple(range(len(PATTERN_NAMES)))
    params_type = WindFarmParams
    static_options: ClassVar[tuple[str, ...]] = ("num_agents", "render_size", "wake_model")
    discrete_branches = (3,)
    #: the package's scripted controller, `scripted_policy(obs, params) -> action` (heuristics.py)
    scripted_policy = staticmethod(heuristics.scripted_policy)

    def __init__(
        self, num_agents: int = DEFAULT_NUM_AGENTS, render_size: int = 128, wake_model: str = "none"
    ):
        num_agents, render_size = check_static_options(
            self.env_id, STATIC_BOUNDS, num_agents=num_agents, render_size=render_size
        )
        if num_agents not in SUPPORTED_AGENT_COUNTS + REAL_FARM_SIZES:
            raise ValueError(
                f"WindFarmControl-v0: num_agents must be one of {SUPPORTED_AGENT_COUNTS} "
                f"(HIVEX's scalability counts) or {REAL_FARM_SIZES} (the real farms); got {num_agents}"
            )
        if wake_model not in wakes.WAKE_MODELS:
            raise ValueError(
                f"WindFarmControl-v0: wake_model must be one of {wakes.WAKE_MODELS}; got {wake_model!r}"
            )
        self.wake_model = wake_model
        self.num_agents = num_agents
        self.render_size = render_size
        self._unit_layouts = jnp.asarray(generator.pattern_table(num_agents))

    def default_params(self) -> WindFarmParams:
        if self.wake_model != "none":
            # wakes need rotor-scale spacing: 5 D between HIVEX-pattern turbines, room for Horns Rev 1
            return WindFarmParams(
                turbine_spacing=jnp.float32(5 * wakes.ROTOR_DIAMETER), farm_half_extent=jnp.float32(5000.0)
            )
        return WindFarmParams()

    def variant_params(self, params: WindFarmParams, task: int | None = None, level: int | None = None):
        """As the base class; `level` may also name a real farm (9 Horns Rev 1, 10 Lillgrund), which are
        patterns but not HIVEX levels (so `level_values` stays HIVEX's 0-8)."""
        if level is not None and FIRST_REAL_FARM <= level < len(ALL_PATTERN_NAMES):
            return super().variant_params(params, task=task).replace(pattern=jnp.asarray(level, jnp.int32))
        if level is not None and level not in self.level_values:
            farms = ", ".join(
                f"{i} {ALL_PATTERN_NAMES[i]}" for i in range(FIRST_REAL_FARM, len(ALL_PATTERN_NAMES))
            )
            raise ValueError(
                f"{self.env_id}: unknown pattern {level}; values are {self.level_values} (HIVEX's "
                f"layouts) and the real farms {farms}"
            )
        return super().variant_params(params, task=task, level=level)

    # ----------------------------------------------------------------------------------- spaces
    def observation_space(self, params: WindFarmParams | None = None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-2.0, 2.0, (self.num_agents, VECTOR_SIZE), jnp.float32)})

    def observation_layout(self) -> dict[str, slice]:
        return dict(LAYOUT)

    # --------------------------------------------------------------------------------- dynamics
    def reset_env(self, key: jax.Array, params: WindFarmParams):
        k_layout, k_wind, k_facing = jax.random.split(key, 3)
        positions = generator.turbine_positions(k_layout, self._unit_layouts, params)
        main, phase, noise = generator.draw_wind(k_wind, params)
        facing = jax.random.uniform(k_facing, (self.num_agents,), minval=-jnp.pi, maxval=jnp.pi)
        t0 = jnp.int32(0)
        wave_phase = noise.spatial_phase(positions)  # turbines never move: project once per episode
        local = wind_angle(main, phase, noise, positions, t0.astype(jnp.float32), params, wave_phase)
        state = WindFarmState(
            step=t0,
            alive=jnp.ones(self.num_agents, bool),
            positions=positions,
            facing_angle=facing,
            performance=jnp.zeros(self.num_agents, jnp.float32),
            local_wind_angle=local,
            main_wind_angle=main,
            swing_phase=phase,
            wind_noise=noise,
            turbine_wave_phase=wave_phase,
            wind_schedule=jnp.zeros(WIND_SCHEDULE_KNOTS, jnp.float32),  # generated worlds: no schedule
            wind_scheduled=jnp.asarray(False),
        )
        return observe(positions, facing, local, params), state

    def step_env(self, key, state: WindFarmState, action, params: WindFarmParams) -> StepOutput:
        facing = rotate(state.facing_angle, action["discrete"][:, 0], params)
        # Rewards use the wind the turbine observed when it acted, so they follow from (obs, action).
        misalign = rewards.misalignment(facing, state.local_wind_angle)
        if self.wake_model == "none":
            w = rewards.wind_power_fraction(rewards.alignment_theta(misalign, params))
        else:  # waked power over a lone aligned turbine's replaces W(theta) (wakes.py)
            w, power = wakes.waked_power(
                state.positions, facing, state.local_wind_angle, params, self.wake_model
            )
        performance = rewards.update_performance(state.performance, w, params)
        columns = {
            GENERATE_ENERGY: rewards.generate_energy_reward(performance),
            AVOID_DAMAGE: rewards.avoid_damage_reward(facing, state.local_wind_angle),
        }
        rewarded = assemble_rewards(columns, params.task_weights[params.task])
        t = state.step + 1
        local = wind_angle(
            state.main_wind_angle,
            state.swing_phase,
            state.wind_noise,
            state.positions,
            t.astype(jnp.float32),
            params,
            state.turbine_wave_phase,
            state.wind_schedule,
            state.wind_scheduled,
        )
        new_state = state.replace(
            step=t, facing_angle=facing, performance=performance, local_wind_angle=local
        )
        info = {
            **rewarded.info(),
            "stats": {
                # HIVEX's logged statistics (task weight applied, as in the reference logs).
                "individual_performance": rewarded.terms[:, GENERATE_ENERGY],
                "avoid_damage_reward": rewarded.terms[:, AVOID_DAMAGE],
                "misalignment_degrees": jnp.rad2deg(misalign),
            },
        }
        if self.wake_model != "none":
            info["stats"]["power_mw"] = power / 1e6
        return StepOutput(
            obs=observe(state.positions, facing, local, params),
            state=new_state,
            reward=rewarded.reward,
            terminated=jnp.zeros(self.num_agents, bool),  # Wind Farm Control never ends early
            info=info,
        )

    # ----------------------------------------------------------------------------------- extras
    def global_state(self, state: WindFarmState, params: WindFarmParams) -> jax.Array:
        """f32[A*6 + A + 1]: every turbine's observation, their performance states, time left."""
        obs = observe(state.positions, state.facing_angle, state.local_wind_angle, params)
        time_left = 1.0 - state.step.astype(jnp.float32) / params.max_steps
        return jnp.concatenate([obs["vector"].reshape(-1), state.performance, time_left[None]]).astype(
            jnp.float32
        )

    def render(self, state: WindFarmState, params: WindFarmParams) -> jax.Array:
        return render.render_farm(state, params, self.render_size)
