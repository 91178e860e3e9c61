"""The encoders' convolutions as the CPU runs them fastest: strided slices and one matmul (XLA's CPU
backend runs a convolution's gradient about 10x slower inside the trainer's update scan than outside one,
while matmuls keep their speed); XLA's own convolution elsewhere. Parameters as `nn.Conv`'s."""

from __future__ import annotations

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


def resolved_method(method: str) -> str:
    """`"auto"`: slices and a matmul (`"patches"`) on the CPU, XLA's convolution (`"conv"`) elsewhere."""
    return ("patches" if jax.default_backend() == "cpu" else "conv") if method == "auto" else method


def xla_conv(x: jax.Array, kernel: jax.Array, stride: int, padding: str) -> jax.Array:
    """XLA's convolution, NHWC images and HWIO kernels: f32[B, H, W, C] -> f32[B, H', W', out]."""
    return jax.lax.conv_general_dilated(
        x, kernel, (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


class StridedConv(nn.Module):
    """A 3 x 3, stride-2, SAME-padded convolution (what `nn.Conv(c, (3, 3), strides=(2, 2))` computes,
    with the same `kernel` [3, 3, in, out] and `bias` parameters). On the CPU it runs as 9 strided
    slices and one matmul: XLA's CPU backend runs a convolution's gradient about 10x slower inside a
    loop (the trainer's update scan) than outside one, while matmuls keep their speed."""

    features: int
    method: str = "auto"  # "auto" (patches on the CPU, XLA's convolution elsewhere), "patches", "conv"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """f32[B, H, W, C] -> f32[B, ceil(H/2), ceil(W/2), features]."""
        c_in = x.shape[-1]
        kernel = self.param("kernel", orthogonal(np.sqrt(2)), (3, 3, c_in, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        if resolved_method(self.method) == "conv":
            return xla_conv(x, kernel, 2, "SAME") + bias
        h, w = x.shape[1], x.shape[2]
        out_h, out_w = -(-h // 2), -(-w // 2)
        pad_h, pad_w = max(2 * (out_h - 1) + 3 - h, 0), max(2 * (out_w - 1) + 3 - w, 0)
        x = jnp.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
        patches = jnp.concatenate(
            [
                x[:, di : di + 2 * out_h - 1 : 2, dj : dj + 2 * out_w - 1 : 2]
                for di in range(3)
                for dj in range(3)
            ],
            axis=-1,
        )  # [B, out_h, out_w, 9 * c_in], ordered (di, dj, c) like kernel.reshape(9 * c_in, features)
        return patches @ kernel.reshape(9 * c_in, self.features) + bias


class PatchConv(nn.Module):
    """A `kernel` x `kernel`, stride-`stride`, VALID-padded convolution (what `jax.lax.conv_general_dilated`
    computes with `padding="VALID"`, parameters `kernel` [k, k, in, out] and `bias`), for kernels a
    whole number of strides wide (ML-Agents' simple encoder: 8 x 8 / 4, 4 x 4 / 2). On the CPU it runs as
    a space-to-depth reshape (stride x stride blocks), (k / stride)^2 slices and one matmul, for the
    reason `StridedConv` does."""

    features: int
    kernel: int
    stride: int
    method: str = "auto"  # "auto" (patches on the CPU, XLA's convolution elsewhere), "patches", "conv"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """f32[B, H, W, C] -> f32[B, (H - k) // s + 1, (W - k) // s + 1, features]."""
        k, s, c_in = self.kernel, self.stride, x.shape[-1]
        if k % s:
            raise ValueError(f"PatchConv needs a kernel a whole number of strides wide; got {k} / {s}")
        kernel = self.param("kernel", orthogonal(np.sqrt(2)), (k, k, c_in, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        if resolved_method(self.method) == "conv":
            return xla_conv(to_unit_float(x), kernel, s, "VALID") + bias
        return patch_matmul(x, kernel, s) + bias


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
    return to_unit_float(patches) @ weights
