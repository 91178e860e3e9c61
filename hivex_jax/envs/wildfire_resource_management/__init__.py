"""Wildfire Resource Management (WildfireResourceManagement-v0)."""

from hivex_jax.envs.wildfire_resource_management.env import (
    WildfireResourceManagement,
    WildfireState,
    scripted_policy,
)
from hivex_jax.envs.wildfire_resource_management.params import WildfireParams
from hivex_jax.wrappers.frame_stack import FrameStack

#: HIVEX stacks the 7-float vector observation twice (14 inputs).
STACKED_FRAMES = 2


def make_default(fire_resolution: int = 32, render_size: int = 256) -> FrameStack:
    """The registered environment: `WildfireResourceManagement` with 2-frame vector stacking."""
    return FrameStack(
        WildfireResourceManagement(fire_resolution=fire_resolution, render_size=render_size),
        {"vector": STACKED_FRAMES},
    )


make_default.static_options = ("fire_resolution", "render_size")

__all__ = [
    "STACKED_FRAMES",
    "WildfireParams",
    "WildfireResourceManagement",
    "WildfireState",
    "make_default",
    "scripted_policy",
]
