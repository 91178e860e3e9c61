"""Aerial Wildfire Suppression (AerialWildfireSuppression-v0)."""

from hivex_jax.envs.aerial_wildfire_suppression.env import AerialWildfireSuppression
from hivex_jax.envs.aerial_wildfire_suppression.heuristics import scripted_policy
from hivex_jax.envs.aerial_wildfire_suppression.params import AerialWildfireParams
from hivex_jax.envs.aerial_wildfire_suppression.types import AerialWildfireState


def make_default(**static) -> AerialWildfireSuppression:
    """The registered default. HIVEX stacks neither observation of this env (vector x1, visual x1), so
    no FrameStack is added; `static` are the constructor options."""
    return AerialWildfireSuppression(**static)


make_default.static_options = AerialWildfireSuppression.static_options

__all__ = [
    "AerialWildfireParams",
    "AerialWildfireState",
    "AerialWildfireSuppression",
    "make_default",
    "scripted_policy",
]
