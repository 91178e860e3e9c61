"""Old home of `SameWorldAutoReset`, which now lives with the other auto-resets in
`hivex_jax.wrappers.autoreset`; this import path keeps working."""

from hivex_jax.wrappers.autoreset import SameWorldAutoReset

__all__ = ["SameWorldAutoReset"]
