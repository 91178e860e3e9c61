"""Ocean Plastic Collection (OceanPlasticCollection-v0)."""

from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.envs.ocean_plastic_collection.env import OceanPlasticCollection
from hivex_jax.envs.ocean_plastic_collection.heuristics import scripted_policy
from hivex_jax.envs.ocean_plastic_collection.params import OceanPlasticParams
from hivex_jax.envs.ocean_plastic_collection.types import OceanPlasticState


def make_default(**static) -> FrameStack:
    """The registered environment: HIVEX stacks 2 frames of both the vector and the visual observation."""
    return FrameStack(OceanPlasticCollection(**static), {"vector": 2, "visual": 2})


make_default.static_options = OceanPlasticCollection.static_options

__all__ = [
    "OceanPlasticCollection",
    "OceanPlasticParams",
    "OceanPlasticState",
    "make_default",
    "scripted_policy",
]
