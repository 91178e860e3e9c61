"""Wildfire Resource Management (WildfireResourceManagement-v0)."""

from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.envs.wildfire_resource_management.env import WildfireResourceManagement
from hivex_jax.envs.wildfire_resource_management.heuristics import scripted_policy
from hivex_jax.envs.wildfire_resource_management.params import WildfireParams
from hivex_jax.envs.wildfire_resource_management.types import WildfireState

#: HIVEX stacks the 7-float vector observation twice (14 inputs).
STACKED_FRAMES = 2


def make_default(**static) -> FrameStack:
    """The registered default: the env with HIVEX's 2-frame vector stacking; `static` are the constructor
    options."""
    return FrameStack(WildfireResourceManagement(**static), {"vector": STACKED_FRAMES})


make_default.static_options = WildfireResourceManagement.static_options

__all__ = [
    "STACKED_FRAMES",
    "WildfireParams",
    "WildfireResourceManagement",
    "WildfireState",
    "make_default",
    "scripted_policy",
]
