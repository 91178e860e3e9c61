"""Time float32 against bfloat16 dots and convolutions of the shipped networks' shapes on this CPU.

    PJRT_NPROC=1 python scripts/bench_mixed_precision.py [--repeats 5]

For a dense layer's shapes (minibatch rows x inputs x outputs: DBR's and AWS's first layers) it times, each
inside a 30-step `fori_loop` (its first input moving, so that it runs 30 times): the forward dot in float32;
with bfloat16 operands and float32 accumulation (`preferred_element_type`); with bfloat16 operands and
result; and the gradient of `sum(tanh(dot))` with respect to the weights in float32 and with the mixed dot.
Then the AWS encoder's first convolution (8 x 8 / 4 over 192 cameras of 42 x 42 x 3) in float32 and
bfloat16. Prints ms per call.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC before jax starts)
import jax
import jax.numpy as jnp

from baselines.cli.profile import median_run

LOOP = 30
DENSE_SHAPES = ((384, 264, 128), (384, 128, 128), (768, 288, 256))


def per_call_ms(fn, *args, repeats: int) -> float:
    """Median ms per call of `fn(*args)`, run `LOOP` times in one compiled loop."""

    def loop(first, *rest):
        # The first input moves with the running sum, so XLA cannot hoist the call out of the loop.
        def body(i, acc):
            return acc + jnp.sum(fn((first + 1e-30 * acc).astype(first.dtype), *rest))

        return jax.lax.fori_loop(0, LOOP, body, jnp.float32(0.0))

    return median_run(jax.jit(loop), args, repeats) * 1e3 / LOOP


def mixed_dot(x: jax.Array, w: jax.Array) -> jax.Array:
    """x @ w with bfloat16 operands, accumulated and returned in float32."""
    return jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    r = args.repeats
    for m, k, n in DENSE_SHAPES:
        x, w = jax.random.normal(key, (m, k)), jax.random.normal(key, (k, n))
        f32 = per_call_ms(lambda a, b: a @ b, x, w, repeats=r)
        mixed = per_call_ms(mixed_dot, x, w, repeats=r)
        bf16 = per_call_ms(lambda a, b: a @ b, x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), repeats=r)
        grad32 = per_call_ms(jax.grad(lambda b, a: jnp.sum(jnp.tanh(a @ b))), w, x, repeats=r)
        grad_mixed = per_call_ms(jax.grad(lambda b, a: jnp.sum(jnp.tanh(mixed_dot(a, b)))), w, x, repeats=r)
        print(
            f"dense {m} x {k} x {n}: forward f32 {f32:.3f}, bf16 -> f32 {mixed:.3f}, bf16 {bf16:.3f} ms; "
            f"gradient f32 {grad32:.3f}, bf16 -> f32 {grad_mixed:.3f} ms"
        )
    images, kernel = jax.random.normal(key, (192, 42, 42, 3)), jax.random.normal(key, (8, 8, 3, 16))

    def conv(a, b):
        return jax.lax.conv_general_dilated(a, b, (4, 4), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    f32 = per_call_ms(conv, images, kernel, repeats=r)
    bf16 = per_call_ms(conv, images.astype(jnp.bfloat16), kernel.astype(jnp.bfloat16), repeats=r)
    print(f"conv 8 x 8 / 4, 192 x 42 x 42 x 3 -> 16: f32 {f32:.3f}, bf16 {bf16:.3f} ms")


if __name__ == "__main__":
    main()
