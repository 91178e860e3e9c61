"""Wind Farm Control (WindFarmControl-v0)."""

from hivex_jax.envs.wind_farm_control.env import WindFarmControl
from hivex_jax.envs.wind_farm_control.heuristics import scripted_policy
from hivex_jax.envs.wind_farm_control.params import WindFarmParams
from hivex_jax.envs.wind_farm_control.types import WindFarmState


def make_default(**static) -> WindFarmControl:
    """The registered default. HIVEX stacks nothing in this env, so no FrameStack is added; `static` are
    the constructor options."""
    return WindFarmControl(**static)


make_default.static_options = WindFarmControl.static_options

__all__ = ["WindFarmControl", "WindFarmParams", "WindFarmState", "make_default", "scripted_policy"]
