"""Wrappers: auto-reset, episode statistics, frame stacking, world-seed pools, the message channel."""

from hivex_jax.core.frame_stack import FrameStack
from hivex_jax.core.wrapper import WrappedState, Wrapper
from hivex_jax.wrappers.autoreset import AutoReset, SameWorldAutoReset, reset_where, select_where
from hivex_jax.wrappers.episode_stats import EpisodeStatistics
from hivex_jax.wrappers.messages import MessageChannel
from hivex_jax.wrappers.world_pool import PregeneratedWorldPool, WorldPool, seed_range

__all__ = [
    "AutoReset",
    "EpisodeStatistics",
    "FrameStack",
    "MessageChannel",
    "PregeneratedWorldPool",
    "SameWorldAutoReset",
    "WorldPool",
    "Wrapper",
    "WrappedState",
    "reset_where",
    "seed_range",
    "select_where",
]
