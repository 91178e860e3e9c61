"""Reductions that give the same answer as `jnp.argmin` / `jnp.argmax` (and as `jnp.any`, an integer sum,
`jnp.min`, `jnp.max`) and run faster on XLA's CPU.

XLA lowers an arg-reduction to a reduction over (value, index) pairs, which its CPU backend does not
vectorise: on Aerial Wildfire Suppression's 3 x 1,764 camera pixels per world it cost 3x a plain min and
an integer min together (about a quarter of the env's step at 192 worlds). Two single-operand
reductions vectorise.

XLA's CPU backend also rewrites a reduction over a dimension longer than `CPU_REDUCE_CHUNK` into a padded
reduce-window (its tree-reduction rewrite, meant for float sums), which runs element by element: an `any`
over AWS's 39 x 39 sensing windows took 12x as long as the same reduced in pieces (`exact_reduce`). Only for a
few pieces: each is a fusion of its own (the 56 pieces of a 1,764-pixel camera cost 25x its reduce-window).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

#: the longest reduced dimension XLA's CPU backend leaves a plain reduction
CPU_REDUCE_CHUNK = 32
#: `exact_reduce`'s kinds: the reduction, and how two partial results combine (the same answer in any order)
_EXACT = {
    "any": (jnp.any, jnp.logical_or),
    "sum": (jnp.sum, jnp.add),
    "min": (jnp.min, jnp.minimum),
    "max": (jnp.max, jnp.maximum),
}


def exact_reduce(x: jax.Array, kind: str, axes: int | tuple[int, ...]) -> jax.Array:
    """`x` reduced over `axes` ("any", "min", "max", or "sum" of integers: the same answer in any order) in
    pieces of at most `CPU_REDUCE_CHUNK` along each axis, combined elementwise: what `jnp.<kind>(x, axes)`
    gives, without XLA's CPU reduce-window rewrite. Float sums are refused (their order is their rounding)."""
    reduce, combine = _EXACT[kind]
    if kind == "sum" and not jnp.issubdtype(x.dtype, jnp.integer):
        raise ValueError(f"exact_reduce sums integers only (a float sum's order changes it); got {x.dtype}")
    axes = (axes,) if isinstance(axes, int) else axes
    for axis in sorted((a % x.ndim for a in axes), reverse=True):  # the later axes first: indices hold
        n = x.shape[axis]
        parts = [
            reduce(jax.lax.slice_in_dim(x, i, min(i + CPU_REDUCE_CHUNK, n), axis=axis), axis=axis)
            for i in range(0, n, CPU_REDUCE_CHUNK)
        ]
        x = functools.reduce(combine, parts)
    return x


def first_argmin(values: jax.Array) -> jax.Array:
    """i32[...]: the index of the first minimum over the last axis of `values` [..., N] (no NaN), as
    `jnp.argmin` gives it (ties to the lowest index; all +inf gives 0)."""
    best = jnp.min(values, axis=-1, keepdims=True)
    return _first_index(values == best)


def first_argmax(values: jax.Array) -> jax.Array:
    """i32[...]: the index of the first maximum over the last axis of `values` [..., N] (no NaN), as
    `jnp.argmax` gives it (ties to the lowest index)."""
    best = jnp.max(values, axis=-1, keepdims=True)
    return _first_index(values == best)


def _first_index(hit: jax.Array) -> jax.Array:
    """i32[...]: the lowest index along the last axis where `hit` bool[..., N] is true (one is)."""
    n = hit.shape[-1]
    index = jax.lax.broadcasted_iota(jnp.int32, hit.shape, hit.ndim - 1)
    return jnp.min(jnp.where(hit, index, n - 1), axis=-1)
