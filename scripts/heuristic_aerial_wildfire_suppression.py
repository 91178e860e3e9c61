"""Scripted heuristic vs random policy on Aerial Wildfire Suppression, per terrain level.

Held-out worlds 6000..6000+N, full episodes (3000 decisions or until every plane is out). 6000 is HIVEX's
test seed number, but not its worlds: HIVEX's seed starts one Unity random stream per test run.
Prints a markdown table: mean episode return per plane (95% CI over worlds) and a few statistics.

    PJRT_NPROC=1 python scripts/heuristic_aerial_wildfire_suppression.py --worlds 8 --task 0
"""

from __future__ import annotations

import argparse
import time

import _jax_setup  # noqa: F401  (PJRT_NPROC=1 before jax starts)
import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from hivex_jax.envs.aerial_wildfire_suppression import scripted_policy
from hivex_jax.envs.aerial_wildfire_suppression.params import BURNT


def evaluate(env, params, seeds, policy: str, steps: int) -> dict[str, np.ndarray]:
    """Per-world results of one policy; `params` is batched like `seeds`."""
    keys = jax.vmap(hivex_jax.world_key)(jnp.asarray(seeds, jnp.uint32))
    space = env.action_space()

    def episode(key, p):
        obs, state = env.reset(key, p)

        def body(carry, k):
            obs, state, ret, stats, over = carry
            k_act, k_step = jax.random.split(k)
            if policy == "random":
                action = space.sample(k_act)
            else:
                action = scripted_policy(obs, p)
            obs, state, reward, term, trunc, info = env.step(k_step, state, action, p)
            live = ~over
            ret = ret + reward * live
            stats = jax.tree.map(lambda s, x: s + x * live, stats, info["stats"])
            over = over | info["done"]
            return (obs, state, ret, stats, over), info["burning_trees"]

        _, first_state, _, _, _, info0 = env.step(key, state, space.noop(), p)
        zeros = jax.tree.map(jnp.zeros_like, info0["stats"])
        carry = (obs, state, jnp.zeros(env.num_agents), zeros, jnp.asarray(False))
        (obs, state, ret, stats, _), burning = jax.lax.scan(body, carry, jax.random.split(key, steps))
        burnt = jnp.sum(state.cells == BURNT)
        return {
            "return": jnp.mean(ret),
            "fire_out": jnp.max(stats["fire_out"]),
            "too_close": jnp.max(stats["fire_too_close_to_city"]),
            "crash": jnp.mean(stats["crash_count"]),
            "extinguished": jnp.sum(stats["extinguishing_trees"]),
            "prepared": jnp.sum(stats["preparing_trees"]),
            "drops": jnp.sum(stats["water_drop"]),
            "burnt_fraction": burnt / jnp.maximum(state.num_trees, 1),
        }

    out = jax.jit(jax.vmap(episode))(keys, params)
    return jax.tree.map(np.asarray, out)


def picture(path: str, steps: int = 400) -> None:
    """Worlds 6000-6002 at terrain levels 1, 5, 10 after `steps` scripted decisions, each with its
    planes' three 42 x 42 cameras underneath (the docs' figure)."""
    import imageio.v3 as iio

    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    step = jax.jit(env.step)
    policy = jax.jit(scripted_policy)
    columns = []
    for i, level in enumerate((1, 5, 10)):
        p = env.variant_params(params, level=level)
        obs, state = jax.jit(env.reset)(hivex_jax.world_key(6000 + i), p)
        for k in jax.random.split(jax.random.PRNGKey(i), steps):
            obs, state, *_ = step(k, state, policy(obs, p), p)
        frame = np.asarray(env.render(state, p))
        cams = np.asarray(obs["visual"]).repeat(2, axis=1).repeat(2, axis=2)  # 84 x 84 each
        gap = np.full((84, 2, 3), 255, np.uint8)
        strip = np.concatenate([cams[0], gap, cams[1], gap, cams[2]], axis=1)
        strip = np.pad(strip, ((4, 0), (0, frame.shape[1] - strip.shape[1]), (0, 0)), constant_values=255)
        columns.append(np.concatenate([frame, strip], axis=0))
        columns.append(np.full((columns[-1].shape[0], 6, 3), 255, np.uint8))
    iio.imwrite(path, np.concatenate(columns[:-1], axis=1))
    print(f"wrote {path}")


def speed(batch: int, steps: int = 32) -> None:
    """Random-action env-steps/s of the bare step, AutoReset and SameWorldAutoReset (cameras consumed)."""
    from hivex_jax.wrappers import AutoReset, SameWorldAutoReset

    env, params = hivex_jax.make("AerialWildfireSuppression-v0")
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    space = env.action_space(params)
    variants = (
        ("bare step", env),
        ("AutoReset", AutoReset(env)),
        ("SameWorldAutoReset", SameWorldAutoReset(env)),
    )
    for name, e in variants:
        _, state = jax.jit(jax.vmap(e.reset, in_axes=(0, None)))(keys, params)

        @jax.jit
        def roll(state, key, e=e):
            def body(state, k):
                k1, k2 = jax.random.split(k)
                a = jax.vmap(space.sample)(jax.random.split(k1, batch))
                step = jax.vmap(e.step, in_axes=(0, 0, 0, None))
                o, state, r, *_ = step(jax.random.split(k2, batch), state, a, params)
                return state, r.sum() + o["visual"].astype(jnp.float32).mean() + o["vector"].sum()

            return jax.lax.scan(body, state, jax.random.split(key, steps))

        out = roll(state, jax.random.PRNGKey(1))
        jax.block_until_ready(out)
        best = np.inf
        for i in range(3):
            t0 = time.time()
            out = roll(out[0], jax.random.PRNGKey(2 + i))
            jax.block_until_ready(out)
            best = min(best, time.time() - t0)
        print(f"{batch} worlds, {name}: {batch * steps / best:.0f} env-steps/s", flush=True)


def ci(x: np.ndarray) -> str:
    half = 1.96 * x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0
    return f"{x.mean():.1f} ± {half:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=8, help="held-out worlds per level (6000..)")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--levels", default="1,2,3,4,5,6,7,8,9,10")
    parser.add_argument("--picture", help="only write the docs figure to this PNG")
    parser.add_argument("--speed", type=int, help="only measure step / auto-reset speed at this batch")
    args = parser.parse_args()
    if args.speed:
        speed(args.speed)
        return
    if args.picture:
        picture(args.picture)
        return
    env, params = hivex_jax.make("AerialWildfireSuppression-v0", task=args.task)
    levels = [int(v) for v in args.levels.split(",")]
    seeds = np.tile(np.arange(6000, 6000 + args.worlds), len(levels))
    level_of = np.repeat(levels, args.worlds)
    batch = hivex_jax.stack_params([env.variant_params(params, level=int(lv)) for lv in level_of])
    results = {}
    for policy in ("random", "heuristic"):
        t0 = time.time()
        results[policy] = evaluate(env, batch, seeds, policy, args.steps)
        print(f"# {policy}: {time.time() - t0:.0f} s", flush=True)
    print(
        f"\nTask {args.task}, {args.worlds} held-out worlds per level (seeds 6000..{6000 + args.worlds - 1}),"
    )
    print("return = mean episode return per plane (95% CI over worlds); heuristic statistics per episode.\n")
    print(
        "| level | random return | heuristic return | fire out | fire near village | crashes/plane "
        "| extinguished | prepared | burnt fraction | random burnt fraction |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lv in levels:
        m = level_of == lv
        r, h = results["random"], results["heuristic"]
        print(
            f"| {lv} | {ci(r['return'][m])} | {ci(h['return'][m])} | {h['fire_out'][m].mean():.2f} "
            f"| {h['too_close'][m].mean():.2f} | {h['crash'][m].mean():.2f} "
            f"| {h['extinguished'][m].mean():.0f} "
            f"| {h['prepared'][m].mean():.0f} | {h['burnt_fraction'][m].mean():.2f} "
            f"| {r['burnt_fraction'][m].mean():.2f} |"
        )
    allr, allh = results["random"]["return"], results["heuristic"]["return"]
    print(f"\nall levels: random {ci(allr)}, heuristic {ci(allh)}")
    slope = np.polyfit(level_of, allh, 1)[0]
    print(f"heuristic return vs terrain level: least-squares slope {slope:+.1f} per level")


if __name__ == "__main__":
    main()
