"""Behaviour cloning of Drone-Based Reforestation's scripted controller with the trainer's own actor.

A diagnostic: the scripted controller reads only the observation (stacked vector + camera),
so if the trainer's actor, reading the same observations, imitates it to near its return, the
observations and the network are adequate and IPPO's shortfall is an RL problem (exploration, credit,
budget); if it cannot, the encoder / observation handling is.

Usage: PJRT_NPROC=1 python scripts/dbr_behaviour_cloning.py [--worlds 24] [--noise 0.2] [--epochs 4]
       [--hidden 128,128] [--cnn ""] [--test-worlds 32]
Data: full 399-decision main-task episodes (level 1, 3 drones) on training worlds 5000.., driven by the
scripted controller, each drone's action replaced by a uniform random one with probability `--noise`
(recovery states are seen; DART-style), always labelled with the scripted action. Supervised: minus the
actor's log-probability of the label (Gaussian with a learned std for throttle/steer/climb, categorical
for drop, drop labels weighted by `--drop-weight`: the scripted controller drops on ~0.2 % of
decisions). Prints the drop label's recall and precision on validation worlds' data and the greedy
clone's mean per-drone return, drops and drop reward on worlds 6000.. beside the scripted controller's
(same evaluation key).
"""

from __future__ import annotations

import argparse
import time

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np
import optax

import hivex_jax
from baselines.core.networks import Actor
from hivex_jax.envs.drone_based_reforestation import scripted_policy
from hivex_jax.eval import rollout


def collect(env, params, worlds: np.ndarray, noise: float, key: jax.Array, steps: int) -> dict:
    """Scripted episodes on `worlds` with action noise: obs, scripted labels, active masks [W, T, A, ...]."""
    space = env.action_space()

    def episode(seed, key):
        obs, state = env.reset(hivex_jax.world_key(seed), params)

        def body(carry, t):
            obs, state = carry
            k_noise, k_random, k_env = jax.random.split(jax.random.fold_in(key, t), 3)
            label = scripted_policy(obs, params)
            random = space.sample(k_random)
            replace = jax.random.uniform(k_noise, (env.num_agents, 1)) < noise
            action = jax.tree.map(lambda r, a: jnp.where(replace, r, a), random, label)
            next_obs, state, _, _, _, info = env.step(k_env, state, action, params)
            return (next_obs, state), (obs, label, info["active"])

        _, (obs, labels, active) = jax.lax.scan(body, (obs, state), jnp.arange(steps))
        return {"obs": obs, "labels": labels, "active": active}

    keys = jax.random.split(key, len(worlds))
    return jax.jit(jax.vmap(episode))(jnp.asarray(worlds, jnp.uint32), keys)


def flatten(data: dict) -> dict:
    """[W, T, A, ...] -> [W*T*A, ...], active samples only."""
    flat = jax.tree.map(lambda x: np.asarray(x).reshape((-1,) + x.shape[3:]), data)
    keep = flat.pop("active").astype(bool)
    return jax.tree.map(lambda x: x[keep], flat)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worlds", type=int, default=24, help="training worlds 5000.. (full episodes)")
    p.add_argument("--noise", type=float, default=0.2)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", default="128,128")
    p.add_argument("--cnn", default="", help="cnn_channels, e.g. 16,32; empty = flattened camera")
    p.add_argument("--test-worlds", type=int, default=32)
    p.add_argument(
        "--drop-weight", type=float, default=50.0, help="loss weight of drop labels (rare: ~0.2 %%)"
    )
    args = p.parse_args()
    start = time.time()
    env, params = hivex_jax.make("DroneBasedReforestation-v0", task=0)
    params = env.variant_params(params, level=1)
    steps = int(params.max_steps)
    key = jax.random.PRNGKey(0)
    train = flatten(collect(env, params, np.arange(5000, 5000 + args.worlds), args.noise, key, steps))
    valid = flatten(collect(env, params, np.arange(5900, 5904), args.noise, jax.random.PRNGKey(1), steps))
    n = train["labels"]["discrete"].shape[0]
    drops = train["labels"]["discrete"].sum()
    print(
        f"data: {n} training samples ({args.worlds} worlds), drop labels {drops}; {time.time() - start:.0f} s"
    )

    hidden = tuple(int(x) for x in args.hidden.split(","))
    cnn = tuple(int(x) for x in args.cnn.split(",")) if args.cnn else ()
    actor = Actor(env.continuous_dims, tuple(env.discrete_branches), hidden, cnn, "tanh")
    weights = actor.init(jax.random.PRNGKey(2), jax.tree.map(lambda x: x[:1], train["obs"]))
    optimizer = optax.adam(args.lr)
    opt_state = optimizer.init(weights)

    @jax.jit
    def sgd_step(weights, opt_state, obs, labels):
        def loss_fn(w):
            dist = actor.apply(w, obs)
            cont = dist._gaussian().log_prob(labels["continuous"])
            drop_labels = labels["discrete"][:, 0]
            drop = jnp.take_along_axis(jax.nn.log_softmax(dist.logits[0]), drop_labels[:, None], -1)[:, 0]
            weight = jnp.where(drop_labels == 1, args.drop_weight, 1.0)
            return -jnp.mean(cont + weight * drop)

        loss, grads = jax.value_and_grad(loss_fn)(weights)
        updates, opt_state = optimizer.update(grads, opt_state, weights)
        return optax.apply_updates(weights, updates), opt_state, loss

    @jax.jit
    def scores(weights, obs, labels):
        mode = actor.apply(weights, obs).mode()
        pred, true = mode["discrete"][:, 0] == 1, labels["discrete"][:, 0] == 1
        mae = jnp.mean(jnp.abs(jnp.clip(mode["continuous"], -1, 1) - labels["continuous"]), axis=0)
        return jnp.sum(pred & true), jnp.sum(true), jnp.sum(pred), mae

    rng = np.random.default_rng(0)
    for epoch in range(args.epochs):
        order = rng.permutation(n)
        losses = []
        for i in range(n // args.batch):
            idx = order[i * args.batch : (i + 1) * args.batch]
            batch = jax.tree.map(lambda x, idx=idx: x[idx], train)
            weights, opt_state, loss = sgd_step(weights, opt_state, batch["obs"], batch["labels"])
            losses.append(float(loss))
        hit, true, pred, mae = (np.asarray(x) for x in scores(weights, valid["obs"], valid["labels"]))
        print(
            f"epoch {epoch + 1}: loss {np.mean(losses):.3f}; validation drop recall {hit}/{true}, "
            f"precision {hit}/{pred}; |error| throttle/steer/climb {np.round(mae, 3).tolist()}; "
            f"{time.time() - start:.0f} s"
        )

    worlds = range(6000, 6000 + args.test_worlds)
    clone = lambda w, key, obs, state: actor.apply(w, obs).mode()  # noqa: E731
    scripted = rollout.scripted_policy(env, params)
    names = env.reward_term_names
    for name, policy, w in (("BC greedy", clone, weights), ("scripted", scripted, None)):
        totals = rollout.evaluate(env, params, policy, worlds, policy_params=w, key=0)
        per_world = totals["return"].mean(-1)
        ci = 1.96 * per_world.std(ddof=1) / np.sqrt(len(per_world))
        stats = {k: float(np.mean(v)) for k, v in totals["stats"].items()}
        drop = totals["reward_terms"][..., names.index("drop_seed")].mean()
        run = totals["reward_terms"][..., names.index("incremental_running_back")].mean()
        print(
            f"{name}: return {per_world.mean():.1f} +- {ci:.1f}, drops {stats['tree_drop_count']:.2f}, "
            f"drop reward {drop:.1f}, running back {run:.1f}, "
            f"pick-ups {stats['seed_pick_up_count']:.2f}, recharge {stats['recharge_energy_count']:.1f}, "
            f"out of energy {stats['out_of_energy_count']:.2f}; {time.time() - start:.0f} s"
        )


if __name__ == "__main__":
    main()
