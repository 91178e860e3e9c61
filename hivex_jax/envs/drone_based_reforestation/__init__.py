"""Drone-Based Reforestation (DroneBasedReforestation-v0)."""

from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.envs.drone_based_reforestation.env import DroneBasedReforestation
from hivex_jax.envs.drone_based_reforestation.heuristics import scripted_policy
from hivex_jax.envs.drone_based_reforestation.params import DroneParams
from hivex_jax.envs.drone_based_reforestation.types import DroneState


def make_default(**static) -> FrameStack:
    """The registered default: the env with HIVEX's stacking (vector x 2, camera x 1)."""
    return FrameStack(DroneBasedReforestation(**static), {"vector": 2})


make_default.static_options = DroneBasedReforestation.static_options

__all__ = ["DroneBasedReforestation", "DroneParams", "DroneState", "make_default", "scripted_policy"]
