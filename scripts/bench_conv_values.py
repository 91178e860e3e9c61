"""Time a camera actor's forward pass and gradient with the CPU's two convolution paths, side by side.

    PJRT_NPROC=1 python scripts/bench_conv_values.py [--encoder hivex_simple] [--batches 48,192] [--seeds 3]

For each batch (observations per seed, the seeds vmapped with their own parameters as the trainer and
the evaluation run them): with `--encoder hivex_simple` (the default) the shipped AWS actor (16 and 32
channels, 2 x 256) on 42 x 42 x 3 uint8 cameras; with `--encoder strided3` the shipped Ocean Plastic
Collection actor's encoder (3 x 3 / 2 SAME, 8 and 16 channels, 2 x 64, without its GRU) on 25 x 25 x 2
grids; its forward pass (what the rollout and the evaluation run) and the gradient of
a policy loss (what the PPO epochs run), each inside a 10-step `fori_loop` (so XLA reuses its buffers,
as in the trainer's scans), with `method="patches"` (slices and a matmul for both: the CPU default for
`strided3`) and `"hybrid"` (XLA's convolution for the value, the patches for the gradient: the CPU
default for `hivex_simple`). Prints ms per step and
whether the two gradients are equal bit for bit.
"""

from __future__ import annotations

import argparse

import _jax_setup  # noqa: F401  (PJRT_NPROC before jax starts)
import jax
import jax.numpy as jnp

from baselines.cli.profile import median_run
from baselines.core import convolutions
from baselines.core.networks import Actor

LOOP = 10
#: `--encoder`: (hidden sizes, channels, image shape) of the shipped actor that uses it
SHAPES = {"hivex_simple": ((256, 256), (16, 32), (42, 42, 3)), "strided3": ((64, 64), (8, 16), (25, 25, 2))}


def per_step_ms(fn, *args, repeats: int = 5) -> float:
    """Median ms per loop step of a compiled `fn(*args)` running `LOOP` steps."""
    return median_run(fn, args, repeats) * 1e3 / LOOP


def programs(actor: Actor):
    """(forward loop, gradient loop, one gradient) over seeds-batched params and observations."""

    def loss(params, obs):
        dist = actor.apply(params, obs)
        return dist.log_prob(dist.mode()).sum() + dist.entropy().sum()

    def shifted(obs, i):  # a new image each step, materialised like an env's observation
        return jax.lax.optimization_barrier({**obs, "visual": obs["visual"] + i.astype(jnp.uint8)})

    def forward_loop(params, obs):
        def body(i, acc):
            mode = jax.vmap(lambda p, o: actor.apply(p, o).mode())(params, shifted(obs, i))
            return acc + sum(x.astype(jnp.float32).sum() for x in jax.tree.leaves(mode))

        return jax.lax.fori_loop(0, LOOP, body, 0.0)

    def gradient_loop(params, obs):
        def body(i, acc):
            grads = jax.vmap(jax.grad(loss))(params, shifted(obs, i))
            return acc + sum(g.sum() for g in jax.tree.leaves(grads))

        return jax.lax.fori_loop(0, LOOP, body, 0.0)

    return jax.jit(forward_loop), jax.jit(gradient_loop), jax.jit(jax.vmap(jax.grad(loss)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", default="48,192", help="observations per seed, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--encoder", choices=tuple(SHAPES), default="hivex_simple")
    args = parser.parse_args()
    hidden, channels, image = SHAPES[args.encoder]
    actor = Actor(2, (2,), hidden, channels, visual_encoder=args.encoder)
    key = jax.random.PRNGKey(0)
    auto = convolutions.resolved_method
    print(f"{jax.default_backend()}, jax {jax.__version__}, {args.encoder}, {args.seeds} seeds; ms per step")
    print("batch/seed | forward: patches, hybrid | gradient: patches, hybrid | same gradient")
    for batch in [int(b) for b in args.batches.split(",")]:
        obs = {
            "visual": jax.random.randint(key, (args.seeds, batch) + image, 0, 256).astype(jnp.uint8),
            "vector": jax.random.normal(key, (args.seeds, batch, 8)),
        }
        one = jax.tree.map(lambda x: x[0], obs)
        # one seed at a time, outside vmap (flax's orthogonal init: see baselines.core.kernels)
        inits = [actor.init(k, one) for k in jax.random.split(key, args.seeds)]
        params = jax.tree.map(lambda *xs: jnp.stack(xs), *inits)
        row = {}
        for method in ("patches", "hybrid"):
            convolutions.resolved_method = lambda m, pad, method=method: method  # every layer: this path
            forward, gradient, grad_once = programs(actor)
            row[method] = (per_step_ms(forward, params, obs), per_step_ms(gradient, params, obs))
            row[method + "_grads"] = grad_once(params, obs)
        convolutions.resolved_method = auto
        same = all(
            bool((a == b).all())
            for a, b in zip(
                jax.tree.leaves(row["patches_grads"]), jax.tree.leaves(row["hybrid_grads"]), strict=True
            )
        )
        print(
            f"{batch} | {row['patches'][0]:.1f}, {row['hybrid'][0]:.1f} | {row['patches'][1]:.1f}, "
            f"{row['hybrid'][1]:.1f} | {same}"
        )


if __name__ == "__main__":
    main()
