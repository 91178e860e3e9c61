"""Flax networks: an encoder for `{vector, visual}` observations, the hybrid-action actor (feed-forward, or
`RecurrentActor` with a GRU between encoder and head), the critic.

The actor outputs one `distrax.Categorical` per discrete branch and a diagonal Gaussian for the
continuous dims (state-independent log-std, unsquashed: the environment clips to [-1, 1]); log-probs
and entropies of the parts are summed. Leading axes of the inputs are free (agents, envs, time...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}


def orthogonal(scale: float) -> nn.initializers.Initializer:
    """Orthogonal init (PPO's standard). Call `init` outside any `vmap` (see `baselines.common`)."""
    return nn.initializers.orthogonal(scale)


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
        method = self.method
        if method == "auto":
            method = "patches" if jax.default_backend() == "cpu" else "conv"
        if method == "conv":
            y = jax.lax.conv_general_dilated(
                x, kernel, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return y + bias
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
        method = self.method
        if method == "auto":
            method = "patches" if jax.default_backend() == "cpu" else "conv"
        if method == "conv":
            y = jax.lax.conv_general_dilated(
                _to_unit_float(x), kernel, (s, s), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return y + bias
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
    return _to_unit_float(patches) @ weights


def _to_unit_float(x: jax.Array) -> jax.Array:
    """uint8 0-255 -> f32 0-1; float images pass unchanged."""
    return x.astype(jnp.float32) / 255.0 if jnp.issubdtype(x.dtype, jnp.integer) else x


#: `visual_encoder="hivex_simple"`: ML-Agents' simple encoder as HIVEX used it, (kernel, stride) per layer
#: (VALID; ReLU after each as the default encoder has, where ML-Agents has LeakyReLU), and the smallest
#: image side it reads (ML-Agents' minimum)
HIVEX_SIMPLE_LAYERS = ((8, 4), (4, 2))
HIVEX_SIMPLE_MIN_SIDE = 20


class Encoder(nn.Module):
    """MLP over `vector`, small CNN over `visual` (uint8 0-255 or float 0-1), concatenated, then an MLP.

    `visual_encoder`: "strided3" (a 3 x 3 / 2 SAME convolution per `cnn_channels` entry) or
    "hivex_simple" (8 x 8 / 4 then 4 x 4 / 2, VALID, with the two `cnn_channels`: ML-Agents' simple
    encoder; on a 42 x 42 image 3 x 3 x 32 = 288 features instead of 3,872)."""

    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        features = []
        if "visual" in obs:
            x = obs["visual"]
            lead = x.shape[:-3]
            x = x.reshape((-1,) + x.shape[-3:])
            if self.visual_encoder == "hivex_simple":
                for channels, (kernel, stride) in zip(self.cnn_channels, HIVEX_SIMPLE_LAYERS, strict=True):
                    x = nn.relu(PatchConv(channels, kernel, stride)(x))  # uint8 until its first matmul
            else:
                x = _to_unit_float(x)
                for channels in self.cnn_channels:
                    x = StridedConv(channels)(x)
                    x = nn.relu(x)
            x = x.reshape(lead + (-1,))
            x = act(nn.Dense(self.hidden_sizes[0], kernel_init=orthogonal(np.sqrt(2)))(x))
            features.append(x)
        if "vector" in obs:
            features.append(obs["vector"].astype(jnp.float32))
        x = jnp.concatenate(features, axis=-1)
        for width in self.hidden_sizes:
            x = act(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)))(x))
        return x


@struct.dataclass
class HybridDistribution:
    """Product of a categorical per discrete branch and a diagonal Gaussian over continuous dims."""

    logits: tuple  # one f32[..., n_b] per branch
    mean: jax.Array  # f32[..., C]
    log_std: jax.Array  # f32[C]

    def _categoricals(self) -> list[distrax.Categorical]:
        return [distrax.Categorical(logits=lg) for lg in self.logits]

    def _gaussian(self) -> distrax.MultivariateNormalDiag:
        scale = jnp.broadcast_to(jnp.exp(self.log_std), self.mean.shape)
        return distrax.MultivariateNormalDiag(self.mean, scale)

    @property
    def continuous_dims(self) -> int:
        return self.mean.shape[-1]

    def sample(self, key: jax.Array) -> dict[str, jax.Array]:
        """`{continuous: f32[..., C], discrete: i32[..., B]}`.

        One uniform draw feeds every part (Gumbel-max per branch, inverse-CDF normals): each
        `jax.random` call adds a threefry kernel that XLA compiles slowly on CPU, and this runs inside
        the rollout, the evaluation and the GIF programs.
        """
        sizes = [lg.shape[-1] for lg in self.logits]
        n, c = int(sum(sizes)), self.continuous_dims
        lead = self.mean.shape[:-1]
        tiny = jnp.finfo(jnp.float32).tiny
        u = jax.random.uniform(key, lead + (n + c,), jnp.float32, minval=tiny, maxval=1.0)
        gumbel = -jnp.log(-jnp.log(u[..., :n]))
        splits = np.cumsum(sizes)[:-1].tolist()
        noise = jnp.split(gumbel, splits, axis=-1) if n else []
        discrete = [jnp.argmax(lg + g, axis=-1) for lg, g in zip(self.logits, noise, strict=True)]
        normal = jax.scipy.special.ndtri(jnp.clip(u[..., n:], 1e-7, 1.0 - 1e-7))
        continuous = self.mean + jnp.exp(self.log_std) * normal
        return {"continuous": continuous, "discrete": self._stack(discrete)}

    def mode(self) -> dict[str, jax.Array]:
        """The greedy action: each branch's most likely choice and the Gaussian mean."""
        discrete = [jnp.argmax(lg, axis=-1) for lg in self.logits]
        return {"continuous": self.mean, "discrete": self._stack(discrete)}

    def _stack(self, parts: list[jax.Array]) -> jax.Array:
        if not parts:
            return jnp.zeros(self.mean.shape[:-1] + (0,), jnp.int32)
        return jnp.stack(parts, axis=-1).astype(jnp.int32)

    def log_prob(self, action: dict[str, jax.Array]) -> jax.Array:
        """Sum of the parts' log-probabilities, f32[...]."""
        total = jnp.zeros(self.mean.shape[:-1], jnp.float32)
        for b, c in enumerate(self._categoricals()):
            total = total + c.log_prob(action["discrete"][..., b])
        if self.continuous_dims:
            total = total + self._gaussian().log_prob(action["continuous"])
        return total

    def entropy(self) -> jax.Array:
        """Sum of the parts' entropies, f32[...]."""
        total = jnp.zeros(self.mean.shape[:-1], jnp.float32)
        for c in self._categoricals():
            total = total + c.entropy()
        if self.continuous_dims:
            total = total + self._gaussian().entropy()
        return total

    def entropy_parts(self) -> tuple[jax.Array, jax.Array]:
        """`(continuous, discrete)` entropies f32[...]: the Gaussian's, and the sum over the branches'
        categoricals (0 where the action has no such part)."""
        discrete = jnp.zeros(self.mean.shape[:-1], jnp.float32)
        for c in self._categoricals():
            discrete = discrete + c.entropy()
        continuous = jnp.zeros(self.mean.shape[:-1], jnp.float32)
        if self.continuous_dims:
            continuous = continuous + self._gaussian().entropy()
        return continuous, discrete


def hybrid_head(
    module: nn.Module,
    x: jax.Array,
    continuous_dims: int,
    discrete_branches: Sequence[int],
    init_log_std: float,
) -> HybridDistribution:
    """Features `f32[..., F]` -> `HybridDistribution`; called inside `module`'s compact `__call__`, so the
    `policy_head` and `log_std` parameters are `module`'s own (both actors name them alike)."""
    n_logits = int(sum(discrete_branches))
    width = n_logits + continuous_dims
    head = nn.Dense(max(width, 1), kernel_init=orthogonal(0.01), name="policy_head")(x)
    splits = np.cumsum(list(discrete_branches))[:-1].tolist()
    logits = tuple(jnp.split(head[..., :n_logits], splits, axis=-1)) if n_logits else ()
    mean = head[..., n_logits : n_logits + continuous_dims]
    if continuous_dims:
        log_std = module.param("log_std", nn.initializers.constant(init_log_std), (continuous_dims,))
    else:
        log_std = jnp.zeros((0,), jnp.float32)
    return HybridDistribution(logits=logits, mean=mean, log_std=log_std)


class Actor(nn.Module):
    """Observation -> `HybridDistribution`."""

    continuous_dims: int
    discrete_branches: Sequence[int]
    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    init_log_std: float = -0.5
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> HybridDistribution:
        x = Encoder(self.hidden_sizes, self.cnn_channels, self.activation, self.visual_encoder)(obs)
        return hybrid_head(self, x, self.continuous_dims, self.discrete_branches, self.init_log_std)


class RecurrentActor(nn.Module):
    """`(obs, hidden f32[..., H]) -> (new hidden f32[..., H], HybridDistribution)`: the `Actor`'s encoder,
    then a GRU cell over its features (one step; parameters shared by every agent), then the head. The
    caller resets `hidden` to `initial_hidden` at an episode's first step (`baselines.ppo`)."""

    continuous_dims: int
    discrete_branches: Sequence[int]
    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    init_log_std: float = -0.5
    gru_size: int = 128
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array], hidden: jax.Array) -> tuple[jax.Array, HybridDistribution]:
        x = Encoder(self.hidden_sizes, self.cnn_channels, self.activation, self.visual_encoder)(obs)
        hidden, x = nn.GRUCell(self.gru_size, name="gru")(hidden, x)
        return hidden, hybrid_head(self, x, self.continuous_dims, self.discrete_branches, self.init_log_std)


def initial_hidden(lead_shape: tuple[int, ...], gru_size: int) -> jax.Array:
    """The GRU state every episode starts from: zeros `f32[*lead_shape, gru_size]`."""
    return jnp.zeros(tuple(lead_shape) + (gru_size,), jnp.float32)


class Critic(nn.Module):
    """Observation (IPPO: local; MAPPO: global state + agent id as `vector`) -> value f32[...], or with
    `num_heads` > 1 one value per head f32[..., num_heads] (`baselines.value_heads`)."""

    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    num_heads: int = 1
    local_heads: bool = False  # heads 1.. read `obs["local"]` (the agent's own obs) through their own encoder
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> jax.Array:
        shared = {k: v for k, v in obs.items() if k != "local"}
        encoder = (self.hidden_sizes, self.cnn_channels, self.activation, self.visual_encoder)
        x = Encoder(*encoder)(shared)
        if self.local_heads:
            rest = nn.Dense(1, kernel_init=orthogonal(1.0), name="value_head")(x)
            y = Encoder(*encoder, name="local_encoder")(obs["local"])
            heads = nn.Dense(self.num_heads - 1, kernel_init=orthogonal(1.0), name="local_value_head")(y)
            return jnp.concatenate([rest, heads], axis=-1)
        value = nn.Dense(self.num_heads, kernel_init=orthogonal(1.0), name="value_head")(x)
        return value[..., 0] if self.num_heads == 1 else value


#: the name flax gives the encoder of `Actor`, `RecurrentActor` and `Critic` (their first submodule)
ENCODER = "Encoder_0"


@dataclass(frozen=True)
class CriticNetwork:
    """The trainer's critic over its params `{"actor": ..., "critic": ...}`: `init(key, obs)` gives
    `params["critic"]`, `apply(params, obs)` the value. With `shared_encoder` it is a value head on the
    actor's encoder (one torso for both, IPPO: the same input): `params["critic"]` holds the head alone
    and `apply` reads the encoder from `params["actor"]`, so the value loss trains the actor's encoder too."""

    module: Critic
    shared_encoder: bool = False

    def init(self, key: jax.Array, obs: dict[str, jax.Array]) -> dict:
        """`params["critic"]` for an example `obs` (the head alone when the encoder is shared)."""
        variables = self.module.init(key, obs)
        if not self.shared_encoder:
            return variables
        return {"params": {k: v for k, v in variables["params"].items() if k != ENCODER}}

    def apply(self, params: dict, obs: dict[str, jax.Array]) -> jax.Array:
        """The value of `obs` (f32[...], or f32[..., heads]) under the trainer's `params`."""
        variables = params["critic"]
        if self.shared_encoder:
            variables = {"params": {**variables["params"], ENCODER: params["actor"]["params"][ENCODER]}}
        return self.module.apply(variables, obs)


def make_critic(config, num_heads: int) -> CriticNetwork:
    """The trainer's critic from its config: `num_heads` outputs; MAPPO's `critic_heads_local` puts heads
    1.. on the agent's own obs; IPPO's `shared_encoder` puts the head on the actor's encoder."""
    local_heads = getattr(config, "critic_heads_local", False)  # an IPPO config has no such key
    module = Critic(
        config.hidden_sizes,
        config.cnn_channels,
        config.activation,
        num_heads,
        local_heads,
        config.visual_encoder,
    )
    return CriticNetwork(module, config.shared_encoder)
