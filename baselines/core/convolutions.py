"""The encoders' convolutions as the CPU runs them fastest. On the CPU, `hivex_simple`'s VALID layers
(`PatchConv`) take XLA's convolution for a value (the rollout's and the evaluation's forward passes: as fast
as slicing patches out of the images for a matmul while a step's patches fit in cache, 1.4x faster at the
evaluation's 192 images per seed, where they do not) and strided slices and one matmul for a gradient (XLA's
CPU backend runs a convolution's gradient about 10x slower inside the trainer's update scan than outside
one, while matmuls keep their speed): `conv_with_patch_gradient`. The 3 x 3 / 2 SAME layers (`StridedConv`)
take the slices and the matmul for both: XLA's CPU convolution of a few input channels (Ocean Plastic
Collection's 2 and 8) runs far below the matmul rate (its rollout's inference 0.50x with the patches).
XLA's own convolution elsewhere. Parameters as `nn.Conv`'s. `hivex_simple`'s callers convolve only the
pixels its layers read (`trimmed_to_read`); its patch matmuls take their kernel gradient by rows
(`patch_product`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def orthogonal(scale: float) -> nn.initializers.Initializer:
    """Orthogonal init (PPO's standard). Call `init` outside any `vmap` (see `baselines.core.kernels`)."""
    return nn.initializers.orthogonal(scale)


def to_unit_float(x: jax.Array) -> jax.Array:
    """uint8 0-255 -> f32 0-1; float images pass unchanged."""
    return x.astype(jnp.float32) / 255.0 if jnp.issubdtype(x.dtype, jnp.integer) else x


def resolved_method(method: str, padding: str) -> str:
    """`"auto"`: on the CPU `"hybrid"` (XLA's convolution for values, slices and a matmul for gradients)
    for a VALID layer, `"patches"` (slices and a matmul for both) for the 3 x 3 / 2 SAME one; XLA's
    convolution (`"conv"`) elsewhere. Another `method` is taken as it is."""
    if method != "auto":
        return method
    if jax.default_backend() != "cpu":
        return "conv"
    return "patches" if padding == "SAME" else "hybrid"


def xla_conv(x: jax.Array, kernel: jax.Array, stride: int, padding: str) -> jax.Array:
    """XLA's convolution, NHWC images and HWIO kernels: f32[B, H, W, C] -> f32[B, H', W', out]."""
    return jax.lax.conv_general_dilated(
        x, kernel, (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


class StridedConv(nn.Module):
    """A 3 x 3, stride-2, SAME-padded convolution (what `nn.Conv(c, (3, 3), strides=(2, 2))` computes,
    with the same `kernel` [3, 3, in, out] and `bias` parameters). On the CPU its value and its gradient
    run as 9 strided slices and one matmul (`same3_patch_matmul`; `convolve`)."""

    features: int
    method: str = "auto"  # "auto" (`resolved_method`), "hybrid", "patches", "conv"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """f32[B, H, W, C] -> f32[B, ceil(H/2), ceil(W/2), features]."""
        c_in = x.shape[-1]
        kernel = self.param("kernel", orthogonal(np.sqrt(2)), (3, 3, c_in, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        return convolve(x, kernel, 2, "SAME", self.method) + bias


class PatchConv(nn.Module):
    """A `kernel` x `kernel`, stride-`stride`, VALID-padded convolution (what `jax.lax.conv_general_dilated`
    computes with `padding="VALID"`, parameters `kernel` [k, k, in, out] and `bias`), for kernels a
    whole number of strides wide (ML-Agents' simple encoder: 8 x 8 / 4, 4 x 4 / 2). On the CPU its
    gradient runs as a space-to-depth reshape (stride x stride blocks), (k / stride)^2 slices and one
    matmul (`patch_matmul`), its value as XLA's convolution (`convolve`)."""

    features: int
    kernel: int
    stride: int
    method: str = "auto"  # "auto" (`resolved_method`), "hybrid", "patches", "conv"

    @nn.compact
    def __call__(self, x: jax.Array, convolved: jax.Array | None = None) -> jax.Array:
        """f32[B, H, W, C] -> f32[B, (H - k) // s + 1, (W - k) // s + 1, features]; `convolved`: `x`
        convolved with this layer's kernel by the caller (`FirstConvPair`), then only the bias is added."""
        k, s, c_in = self.kernel, self.stride, x.shape[-1]
        if k % s:
            raise ValueError(f"PatchConv needs a kernel a whole number of strides wide; got {k} / {s}")
        kernel = self.param("kernel", orthogonal(np.sqrt(2)), (k, k, c_in, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        return (convolve(x, kernel, s, "VALID", self.method) if convolved is None else convolved) + bias


def convolve(x: jax.Array, kernel: jax.Array, stride: int, padding: str, method: str) -> jax.Array:
    """`x [B, H, W, C]` (uint8 0-255 or float) convolved with `kernel [k, k, C, F]`: `[B, H', W', F]` by
    `method` ("auto", "hybrid", "patches", "conv"; `resolved_method`). Padding "SAME" is the 3 x 3 / 2
    `StridedConv`; "VALID" a kernel a whole number of strides wide (`patch_matmul`)."""
    method = resolved_method(method, padding)
    if method == "conv":
        return xla_conv(to_unit_float(x), kernel, stride, padding)
    if method == "hybrid":
        return conv_with_patch_gradient(x, kernel, stride, padding)
    return patch_conv(x, kernel, stride, padding)


def patch_conv(x: jax.Array, kernel: jax.Array, stride: int, padding: str) -> jax.Array:
    """The convolution as slices and one matmul: `same3_patch_matmul` ("SAME", 3 x 3 / 2) or
    `patch_matmul` ("VALID")."""
    if padding == "SAME":
        return same3_patch_matmul(to_unit_float(x), kernel)
    return patch_matmul(x, kernel, stride)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def conv_with_patch_gradient(x: jax.Array, kernel: jax.Array, stride: int, padding: str) -> jax.Array:
    """XLA's convolution for the value (one kernel per convolution under `vmap`: `per_kernel_conv`);
    under differentiation the value and the gradient of `patch_conv`, bit for bit what `"patches"` gives,
    so the trainer's update is unchanged while its rollout and the evaluation run the faster forward."""
    return per_kernel_conv(stride, padding)(x, kernel)


def _patch_value_and_vjp(x: jax.Array, kernel: jax.Array, stride: int, padding: str) -> tuple:
    return jax.vjp(lambda x, k: patch_conv(x, k, stride, padding), x, kernel)


def _apply_patch_vjp(stride: int, padding: str, vjp, cotangent: jax.Array) -> tuple:
    return vjp(cotangent)


conv_with_patch_gradient.defvjp(_patch_value_and_vjp, _apply_patch_vjp)


@functools.cache
def per_kernel_conv(stride: int, padding: str):
    """`(x [B, H, W, C], kernel [k, k, C, F]) -> [B, H', W', F]`, XLA's convolution, batched one kernel at a
    time: `vmap` over a batch of kernels (the trainer's seeds) would make one grouped convolution, which
    XLA's CPU backend runs about 3x slower than the patches; this runs the kernels in turn (`lax.map`),
    and folds a batch of images under one kernel into the convolution's own batch."""

    @jax.custom_batching.custom_vmap
    def conv(x: jax.Array, kernel: jax.Array) -> jax.Array:
        return xla_conv(to_unit_float(x), kernel, stride, padding)

    @conv.def_vmap
    def _batched(axis_size: int, in_batched: list, x: jax.Array, kernel: jax.Array) -> tuple:
        x_batched, kernel_batched = in_batched
        if not kernel_batched:
            y = conv(x.reshape((-1,) + x.shape[2:]), kernel)
            return y.reshape(x.shape[:2] + y.shape[1:]), True
        if not x_batched:
            x = jnp.broadcast_to(x, (axis_size,) + x.shape)
        return jax.lax.map(lambda pair: conv(*pair), (x, kernel)), True

    return conv


def same3_patch_matmul(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """`x [B, H, W, C]` float convolved with `kernel [3, 3, C, F]` at stride 2, SAME padding, as 9 strided
    slices and one matmul: `[B, ceil(H / 2), ceil(W / 2), F]`."""
    c_in, features = kernel.shape[2], kernel.shape[3]
    h, w = x.shape[1], x.shape[2]
    out_h, out_w = -(-h // 2), -(-w // 2)
    pad_h, pad_w = max(2 * (out_h - 1) + 3 - h, 0), max(2 * (out_w - 1) + 3 - w, 0)
    x = jnp.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
    patches = jnp.concatenate(
        [x[:, i : i + 2 * out_h - 1 : 2, j : j + 2 * out_w - 1 : 2] for i in range(3) for j in range(3)],
        axis=-1,
    )  # [B, out_h, out_w, 9 * c_in], ordered (di, dj, c) like kernel.reshape(9 * c_in, features)
    return patches @ kernel.reshape(9 * c_in, features)


def patch_matmul(x: jax.Array, kernel: jax.Array, stride: int) -> jax.Array:
    """`x [B, H, W, C]` convolved with `kernel [k, k, C, F]` at `stride` (VALID; k a multiple of the
    stride): [B, out_h, out_w, F]. The image is cut into stride x stride blocks (space to depth), so the
    convolution is an r x r, stride-1 one over the blocks (r = k / stride): r^2 slices of the block grid
    and one matmul. `x` may be uint8: it is converted after the slicing (the same values)."""
    k, s = kernel.shape[0], stride
    r = k // s
    b, h, w, c = x.shape
    out_h, out_w = (h - k) // s + 1, (w - k) // s + 1
    rows, cols = out_h + r - 1, out_w + r - 1  # blocks read (the rest of the image is never covered)
    blocks = x[:, : rows * s, : cols * s].reshape(b, rows, s, cols, s, c)
    blocks = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(b, rows, cols, s * s * c)  # (ri, rj, c) per block
    patches = jnp.concatenate(
        [blocks[:, bi : bi + out_h, bj : bj + out_w] for bi in range(r) for bj in range(r)], axis=-1
    )  # [B, out_h, out_w, r * r * s * s * c], ordered (bi, bj, ri, rj, c): kernel row di = bi * s + ri
    weights = kernel.reshape(r, s, r, s, c, -1).transpose(0, 2, 1, 3, 4, 5).reshape(r * r * s * s * c, -1)
    return patch_product(to_unit_float(patches), weights)


@jax.custom_vjp
def patch_product(patches: jax.Array, weights: jax.Array) -> jax.Array:
    """`patches [..., K] @ weights [K, F]`, whose kernel gradient is computed as `(cotangent^T @ patches)^T`
    over the patches' rows: autodiff's `patches^T @ cotangent` reads the long patch matrix down its columns,
    which XLA's CPU backend runs at about half the matmul rate for the encoders' 16-64 output channels
    (`hivex_simple`'s first layer: 20 ms a minibatch of 768 images against 15 this way). The same sums,
    in another order."""
    return patches @ weights


def _patch_product_forward(patches: jax.Array, weights: jax.Array) -> tuple:
    return patches @ weights, (patches, weights)


def _patch_product_backward(residuals: tuple, cotangent: jax.Array) -> tuple:
    patches, weights = residuals
    rows = patches.reshape(-1, patches.shape[-1])
    # the barriers keep XLA from folding the two transposes back into one `patches^T @ cotangent`
    cotangent_t = jax.lax.optimization_barrier(cotangent.reshape(-1, cotangent.shape[-1]).T)
    kernel_gradient_t = jax.lax.optimization_barrier(cotangent_t @ rows)
    return cotangent @ weights.T, kernel_gradient_t.T


patch_product.defvjp(_patch_product_forward, _patch_product_backward)


def read_extent(side: int, layers: Sequence[tuple[int, int]]) -> int:
    """How many of an image side's first pixels a chain of VALID convolutions (`(kernel, stride)` per
    layer) reads: a layer's last rows or columns that the next layer's stride skips are never used
    (`hivex_simple` on a 42-pixel side: the first layer's 9 rows, the second reads 8 of them, 36 pixels)."""
    sides = [side]
    for kernel, stride in layers:
        sides.append((sides[-1] - kernel) // stride + 1)
    extent = sides[-1]
    for kernel, stride in reversed(layers):
        extent = (extent - 1) * stride + kernel
    return extent


def trimmed_to_read(x: jax.Array, layers: Sequence[tuple[int, int]]) -> jax.Array:
    """`x [B, H, W, C]` cut to the rows and columns the VALID chain `layers` reads (`read_extent`): the same
    outputs from fewer first-layer positions (AWS's camera: 8 x 8 instead of 9 x 9, 0.79x its arithmetic)."""
    return x[:, : read_extent(x.shape[1], layers), : read_extent(x.shape[2], layers)]
