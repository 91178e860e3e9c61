"""Behaviour cloning of Ocean Plastic Collection's scripted controller with the trainer's own actor.

A diagnostic: if the trainer's network, reading the same observations, imitates the scripted
controller to near its return, the observations and the network are adequate and IPPO's failure is an RL
problem (exploration, reward scale, credit); if it cannot, the encoder / observation handling is.

Usage: PJRT_NPROC=1 python scripts/opc_behaviour_cloning.py [--worlds 24] [--noise 0.2] [--epochs 4]
       [--hidden 64,64] [--cnn 8,16] [--normalize] [--relative] [--only-rules]
Data: full 1000-decision episodes on training worlds 5000.. driven by the scripted controller, each
vessel's action replaced by a uniform random one with probability `--noise` (so recovery states are
seen; DART-style), always labelled with the scripted action. Supervised: the summed cross-entropy of the
two branches. Prints the label accuracy per branch on held-out worlds' data and the greedy (argmax)
clone's mean per-vessel return, pebbles and border crossings on worlds 6000-6031 beside the scripted
controller's, same evaluation key. It also prints the steering accuracy on the held-out decisions where
the controller's border rule and its vessel rule fire (`heuristics.safety_rules`).

`--relative` appends six features to `vector`, computed from its two stacked frames: the nearest vessel's
offset (x 10: 20 m -> 1), the vessel's own displacement since the previous decision and the neighbour's
relative displacement (x 50: 4 m -> 1). A test of whether the vessel rule (a closest-point-of-approach
prediction) is hard to learn because those differences are ~0.02 in inputs of scale ~0.5.
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
from hivex_jax.envs.ocean_plastic_collection import heuristics, scripted_policy
from hivex_jax.envs.ocean_plastic_collection.observations import VECTOR_SIZE
from hivex_jax.eval import rollout


def collect(env, params, worlds: np.ndarray, noise: float, key: jax.Array, steps: int) -> dict:
    """Scripted episodes on `worlds` with action noise: obs, labels, active masks `[W, T, A, ...]`."""
    space = env.action_space()

    def episode(seed, key):
        obs, state = env.reset(hivex_jax.world_key(seed), params)

        def body(carry, t):
            obs, state = carry
            k_noise, k_random, k_env = jax.random.split(jax.random.fold_in(key, t), 3)
            label = scripted_policy(obs, params)
            random = space.sample(k_random)
            replace = jax.random.uniform(k_noise, (env.num_agents, 1)) < noise
            action = {**label, "discrete": jnp.where(replace, random["discrete"], label["discrete"])}
            next_obs, state, _, _, _, info = env.step(k_env, state, action, params)
            return (next_obs, state), (obs, label["discrete"], info["active"])

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
    p.add_argument("--hidden", default="64,64")
    p.add_argument("--cnn", default="8,16")
    p.add_argument("--test-worlds", type=int, default=32)
    p.add_argument(
        "--normalize", action="store_true", help="standardise obs['vector'] per feature (training-data stats)"
    )
    p.add_argument(
        "--relative", action="store_true", help="append the neighbour's offset and the displacements"
    )
    p.add_argument("--ego", action="store_true", help="--relative's features in the vessel's own frame")
    p.add_argument(
        "--only-rules", action="store_true", help="train only on decisions where a safety rule fires"
    )
    args = p.parse_args()
    start = time.time()
    env, params = hivex_jax.make("OceanPlasticCollection-v0", task=0)
    steps = int(params.max_steps)
    train = flatten(
        collect(env, params, np.arange(5000, 5000 + args.worlds), args.noise, jax.random.PRNGKey(0), steps)
    )
    valid = flatten(collect(env, params, np.arange(6100, 6104), args.noise, jax.random.PRNGKey(1), steps))
    if args.only_rules:  # the teacher_where=safety case: labels only where a safety rule fires
        rules = np.logical_or(*(np.asarray(m) for m in heuristics.safety_rules(train["obs"], params)))
        train = jax.tree.map(lambda x: x[rules], train)
    n = train["labels"].shape[0]
    print(
        f"data: {n} training samples ({args.worlds} worlds), {valid['labels'].shape[0]} validation; "
        f"{time.time() - start:.0f} s"
    )

    mean = train["obs"]["vector"].mean(0) if args.normalize else 0.0
    std = train["obs"]["vector"].std(0) + 1e-6 if args.normalize else 1.0

    def view(obs):  # what the actor reads (as the trainer's obs_normalization does), + --relative
        vector = (obs["vector"] - mean) / std
        if args.relative:
            previous, current = obs["vector"][..., :VECTOR_SIZE], obs["vector"][..., VECTOR_SIZE:]
            own_step = current[..., 0:2] - previous[..., 0:2]
            extra = [
                (current[..., 4:6] - current[..., 0:2]) * 10.0,
                own_step * 50.0,
                (current[..., 4:6] - previous[..., 4:6] - own_step) * 50.0,
            ]
            if args.ego:  # (ahead, to the left) of the vessel's heading: the side is one coordinate's sign
                forward = current[..., 2:4]

                def ego(v):
                    ahead = jnp.sum(v * forward, axis=-1, keepdims=True)
                    left = (forward[..., 0] * v[..., 1] - forward[..., 1] * v[..., 0])[..., None]
                    return jnp.concatenate([ahead, left], axis=-1)

                extra = [ego(v) for v in extra]
            vector = jnp.concatenate([vector, *extra], axis=-1)
        return {**obs, "vector": vector}

    near_border, threat = (np.asarray(m) for m in heuristics.safety_rules(valid["obs"], params))
    vessel_only = threat & ~near_border  # the vessel rule decides the steering here
    print(f"validation decisions: border rule {near_border.mean():.3f}, vessel rule {vessel_only.mean():.3f}")

    hidden = tuple(int(x) for x in args.hidden.split(","))
    cnn = tuple(int(x) for x in args.cnn.split(",")) if args.cnn else ()
    actor = Actor(env.continuous_dims, tuple(env.discrete_branches), hidden, cnn, "tanh")
    sample_obs = view(jax.tree.map(lambda x: x[:1], train["obs"]))
    weights = actor.init(jax.random.PRNGKey(2), sample_obs)
    optimizer = optax.adam(args.lr)
    opt_state = optimizer.init(weights)

    def loss_fn(weights, obs, labels):
        dist = actor.apply(weights, view(obs))
        return -jnp.mean(
            dist.log_prob({"continuous": jnp.zeros(labels.shape[:1] + (0,)), "discrete": labels})
        )

    @jax.jit
    def sgd_step(weights, opt_state, obs, labels):
        loss, grads = jax.value_and_grad(loss_fn)(weights, obs, labels)
        updates, opt_state = optimizer.update(grads, opt_state, weights)
        return optax.apply_updates(weights, updates), opt_state, loss

    rng = np.random.default_rng(0)
    for epoch in range(args.epochs):
        order = rng.permutation(n)
        losses = []
        for i in range(n // args.batch):
            idx = order[i * args.batch : (i + 1) * args.batch]
            obs = jax.tree.map(lambda x, idx=idx: x[idx], train["obs"])
            weights, opt_state, loss = sgd_step(weights, opt_state, obs, train["labels"][idx])
            losses.append(float(loss))
        predicted = np.asarray(actor.apply(weights, view(valid["obs"])).mode()["discrete"])
        correct = predicted == np.asarray(valid["labels"])
        print(
            f"epoch {epoch + 1}: loss {np.mean(losses):.3f}, held-out accuracy throttle "
            f"{correct[:, 0].mean():.3f} steer {correct[:, 1].mean():.3f} (border rule "
            f"{correct[near_border, 1].mean():.3f}, vessel rule {correct[vessel_only, 1].mean():.3f}); "
            f"{time.time() - start:.0f} s"
        )

    worlds = range(6000, 6000 + args.test_worlds)
    clone = lambda w, key, obs, state: actor.apply(w, view(obs)).mode()  # noqa: E731
    scripted = rollout.scripted_policy(env, params)
    lowest = env.reward_term_names.index("global_lowest_trash_collected")
    for name, policy, w in (("BC greedy", clone, weights), ("scripted", scripted, None)):
        totals = rollout.evaluate(env, params, policy, worlds, policy_params=w, key=0)
        per_world = totals["return"].mean(-1)
        ci = 1.96 * per_world.std(ddof=1) / np.sqrt(len(per_world))
        stats = {k: float(np.mean(v)) for k, v in totals["stats"].items()}
        print(
            f"{name}: return {per_world.mean():.1f} +- {ci:.1f}, pebbles {stats['pebbles_collected']:.1f}, "
            f"border crossings {stats['border_crossings']:.2f}, collisions {stats['vessel_collisions']:.2f}, "
            f"global-lowest term {totals['reward_terms'][..., lowest].mean():.1f}; "
            f"{time.time() - start:.0f} s"
        )


if __name__ == "__main__":
    main()
