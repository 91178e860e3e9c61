"""Flax networks: an encoder for `{vector, visual}` observations, the hybrid-action actor (feed-forward, or
`RecurrentActor` with a GRU between encoder and head), the critic.

The actor outputs one `distrax.Categorical` per discrete branch and a diagonal Gaussian for the
continuous dims (state-independent log-std, unsquashed: the environment clips to [-1, 1]); log-probs
and entropies of the parts are summed. Leading axes of the inputs are free (agents, envs, time...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from baselines.config import NetworkConfig
from baselines.core import convolutions
from baselines.core.convolutions import PatchConv, StridedConv, convolve, orthogonal, to_unit_float

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}


#: `visual_encoder="hivex_simple"`: ML-Agents' simple encoder as HIVEX used it, (kernel, stride) per layer
#: (VALID, ReLU after each, where ML-Agents has LeakyReLU); smallest side `HIVEX_SIMPLE_MIN_SIDE` (checked)
HIVEX_SIMPLE_LAYERS = ((8, 4), (4, 2))
#: obs key of an encoder's first convolution of `obs["visual"]` (no bias) when the caller computed it
#: (`FirstConvPair`); the encoder then adds its bias and goes on from there
FIRST_CONV = "visual_first_conv"


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
                x = convolutions.trimmed_to_read(x, HIVEX_SIMPLE_LAYERS)  # the pixels its layers read
                first = obs.get(FIRST_CONV)  # the first layer's convolution, by the caller (`FirstConvPair`)
                convolved = (None if first is None else first.reshape((-1,) + first.shape[-3:]), None)
                layers = zip(self.cnn_channels, HIVEX_SIMPLE_LAYERS, convolved, strict=True)
                for channels, (kernel, stride), done in layers:
                    x = nn.relu(PatchConv(channels, kernel, stride)(x, done))  # uint8 until its first matmul
            else:
                x = to_unit_float(x)
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
    width = int(sum(discrete_branches)) + continuous_dims
    head = nn.Dense(max(width, 1), kernel_init=orthogonal(0.01), name="policy_head")(x)
    if continuous_dims:
        log_std = module.param("log_std", nn.initializers.constant(init_log_std), (continuous_dims,))
    else:
        log_std = jnp.zeros((0,), jnp.float32)
    return head_distribution(head, log_std, continuous_dims, discrete_branches)


def head_distribution(
    head: jax.Array, log_std: jax.Array, continuous_dims: int, discrete_branches: Sequence[int]
) -> HybridDistribution:
    """The policy head's output `f32[..., logits + continuous]` and `log_std f32[continuous]` as the
    `HybridDistribution` they parameterise (each branch's logits in turn, then the Gaussian's mean)."""
    n_logits = int(sum(discrete_branches))
    splits = np.cumsum(list(discrete_branches))[:-1].tolist()
    logits = tuple(jnp.split(head[..., :n_logits], splits, axis=-1)) if n_logits else ()
    mean = head[..., n_logits : n_logits + continuous_dims]
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
    caller resets `hidden` to `initial_hidden` at an episode's first step (`baselines.core.ppo`)."""

    continuous_dims: int
    discrete_branches: Sequence[int]
    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    init_log_std: float = -0.5
    gru_size: int = 128
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(
        self, obs: dict[str, jax.Array] | None, hidden: jax.Array, features: jax.Array | None = None
    ) -> tuple[jax.Array, HybridDistribution]:
        """`features`: the encoder's output for `obs` when the caller has it (a replay encodes all its steps
        at once, `encoder_features`); `obs` is then not read."""
        if features is None:
            if obs is None:
                raise ValueError("RecurrentActor needs the observation or its encoder's features")
            encoder = Encoder(self.hidden_sizes, self.cnn_channels, self.activation, self.visual_encoder)
            features = encoder(obs)
        hidden, x = nn.GRUCell(self.gru_size, name="gru")(hidden, features)
        return hidden, hybrid_head(self, x, self.continuous_dims, self.discrete_branches, self.init_log_std)


def encoder_features(actor: Actor | RecurrentActor, actor_params: Mapping[str, Any], obs: dict) -> jax.Array:
    """`actor`'s encoder alone over `obs [..., A, ...]` (any leading axes: a replay's every step at once),
    f32[..., A, F]: what its GRU or its head reads."""
    encoder = Encoder(actor.hidden_sizes, actor.cnn_channels, actor.activation, actor.visual_encoder)
    return encoder.apply({"params": actor_params["params"][ENCODER]}, obs)  # pyright: ignore[reportReturnType]


def initial_hidden(lead_shape: tuple[int, ...], gru_size: int) -> jax.Array:
    """The GRU state every episode starts from: zeros `f32[*lead_shape, gru_size]`."""
    return jnp.zeros(tuple(lead_shape) + (gru_size,), jnp.float32)


class Critic(nn.Module):
    """Observation (IPPO: local; MAPPO: global state + agent id as `vector`) -> value f32[...], or with
    `num_heads` > 1 one value per head f32[..., num_heads] (`baselines.core.value_heads`)."""

    hidden_sizes: Sequence[int] = (64, 64)
    cnn_channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    num_heads: int = 1
    local_heads: bool = False  # heads 1.. read `obs["local"]` (the agent's own obs) through their own encoder
    visual_encoder: str = "strided3"

    @nn.compact
    def __call__(self, obs: dict[str, Any]) -> jax.Array:  # arrays, and `local`: the agent's obs dict
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

    def init(self, key: jax.Array, obs: dict[str, Any]) -> Mapping[str, Any]:
        """`params["critic"]` for an example `obs` (the head alone when the encoder is shared)."""
        variables = self.module.init(key, obs)
        if not self.shared_encoder:
            return variables
        return {"params": {k: v for k, v in variables["params"].items() if k != ENCODER}}

    def on_features(self, params: dict, features: jax.Array) -> jax.Array:
        """With `shared_encoder`: the value head alone on the actor's encoder output `f32[..., F]` (what
        `apply` computes from that encoder's input): f32[...], or f32[..., heads]."""
        head = params["critic"]["params"]["value_head"]
        value = nn.Dense(head["bias"].shape[-1]).apply({"params": head}, features)
        return value[..., 0] if self.module.num_heads == 1 else value  # pyright: ignore

    def apply(self, params: dict, obs: dict[str, Any]) -> jax.Array:
        """The value of `obs` (f32[...], or f32[..., heads]) under the trainer's `params`."""
        variables = params["critic"]
        if self.shared_encoder:
            variables = {"params": {**variables["params"], ENCODER: params["actor"]["params"][ENCODER]}}
        # flax types apply's result as maybe `(out, mutated variables)` (for `mutable=`); none here
        return self.module.apply(variables, obs)  # pyright: ignore[reportReturnType]


@dataclass(frozen=True)
class FirstConvPair:
    """The actor's and the critic's first convolution of the image both read (`hivex_simple`'s 8 x 8 / 4
    layer) as one with the two kernels side by side (the actor's output channels, then the critic's). Each
    half is bit for bit its network's own (value and kernel gradient; tested), but the patches are read once
    for a matmul twice as wide: the learner's costliest, skinny (192 patch values into 16 channels). Not
    `strided3`: there (Ocean Plastic Collection's 2 -> 8 channels) the wider one rounds differently."""

    visual_encoder: str  # the config's `visual_encoder`

    def __call__(self, params: dict, actor_obs: dict, critic_obs: dict) -> tuple[dict, dict]:
        """`(actor_obs, critic_obs)` each with its network's first convolution (`FIRST_CONV`), where both
        read the same `visual` array (IPPO; MAPPO's `critic_local_visual`, in the rollout) through an
        encoder of their own (not `shared_encoder`); unchanged otherwise."""
        visual = actor_obs.get("visual")
        if self.visual_encoder != "hivex_simple" or visual is None or critic_obs.get("visual") is not visual:
            return actor_obs, critic_obs
        layers = [params[net]["params"].get(ENCODER, {}).get("PatchConv_0") for net in ("actor", "critic")]
        if layers[0] is None or layers[1] is None:  # the critic's head on the actor's encoder
            return actor_obs, critic_obs
        kernels = [layer["kernel"] for layer in layers]
        x = convolutions.trimmed_to_read(visual.reshape((-1,) + visual.shape[-3:]), HIVEX_SIMPLE_LAYERS)
        with jax.named_scope("FirstConvPair"):  # its ops' names in profiles (scripts/op_profile.py)
            both = convolve(x, jnp.concatenate(kernels, axis=-1), HIVEX_SIMPLE_LAYERS[0][1], "VALID", "auto")
        halves = jnp.split(both, [kernels[0].shape[-1]], axis=-1)
        actor_half, critic_half = (h.reshape(visual.shape[:-3] + h.shape[1:]) for h in halves)
        return {**actor_obs, FIRST_CONV: actor_half}, {**critic_obs, FIRST_CONV: critic_half}


def make_critic(network: NetworkConfig, num_heads: int) -> CriticNetwork:
    """The trainer's critic from the config's `network` part: `num_heads` outputs; MAPPO's
    `critic_heads_local` puts heads 1.. on the agent's own obs; IPPO's `shared_encoder` puts the head on
    the actor's encoder."""
    module = Critic(
        network.hidden_sizes,
        network.cnn_channels,
        network.activation,
        num_heads,
        network.critic_heads_local,
        network.visual_encoder,
    )
    return CriticNetwork(module, network.shared_encoder)
