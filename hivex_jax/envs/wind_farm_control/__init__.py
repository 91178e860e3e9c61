"""Wind Farm Control (WindFarmControl-v0)."""

from hivex_jax.envs.wind_farm_control.env import WindFarmControl, WindFarmState, scripted_policy
from hivex_jax.envs.wind_farm_control.params import WindFarmParams

__all__ = ["WindFarmControl", "WindFarmParams", "WindFarmState", "scripted_policy"]
