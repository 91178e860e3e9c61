"""Scripted heuristic vs random policy on Aerial Wildfire Suppression, per terrain level.

Held-out worlds 6000..6000+N, full episodes (3000 decisions or until every plane is out). 6000 is HIVEX's
test seed number, but not its worlds: HIVEX's seed starts one Unity random stream per test run.
Prints a markdown table: mean episode return per plane (95% CI over worlds) and a few statistics.
Built on `hivex_jax.eval.rollout.evaluate_params`: the levels run as one stack of `EnvParams` (one compile
per policy), with the evaluation module's keys (`seeding.rollout_key` / `rollout_step_keys`, evaluation
key 0); the burnt fraction is read from the state each episode ended in (`final_metrics`). Figures
measured before 2026-11-30 used a per-script key schedule and took the burnt fraction after all
`--steps` decisions (the fire kept burning after the last plane was out), so they differ.

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
from hivex_jax.eval import rollout


def burnt_fraction(state, params) -> dict[str, jax.Array]:
    """The share of the island's trees that are burnt, f32[] (an `Evaluator` `final_metrics`)."""
    return {"burnt_fraction": jnp.sum(state.cells == BURNT) / jnp.maximum(state.num_trees, 1)}


def per_episode(totals: dict) -> dict[str, np.ndarray]:
    """The table's per-episode numbers `[levels, worlds]` from `evaluate_params` totals
    `[levels, worlds, planes, ...]`."""
    stats = totals["stats"]
    return {
        "return": totals["return"].mean(-1),
        "fire_out": stats["fire_out"].max(-1),  # broadcast to live planes: 1 if any saw it
        "too_close": stats["fire_too_close_to_city"].max(-1),
        "crash": stats["crash_count"].mean(-1),
        "extinguished": stats["extinguishing_trees"].sum(-1),
        "prepared": stats["preparing_trees"].sum(-1),
        "drops": stats["water_drop"].sum(-1),
        "burnt_fraction": totals["final"]["burnt_fraction"],
    }


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
    worlds = range(6000, 6000 + args.worlds)
    stack = hivex_jax.stack_params([env.variant_params(params, level=lv) for lv in levels])
    policies = {
        "random": lambda _: rollout.random_policy(env),
        "heuristic": lambda p: rollout.scripted_policy(env, p),
    }
    results = {}
    for name, make_policy in policies.items():
        t0 = time.time()
        totals = rollout.evaluate_params(
            env, stack, make_policy, worlds, num_steps=args.steps, final_metrics=burnt_fraction
        )
        results[name] = per_episode(totals)
        print(f"# {name}: {time.time() - t0:.0f} s", flush=True)
    print(
        f"\nTask {args.task}, {args.worlds} held-out worlds per level (seeds 6000..{6000 + args.worlds - 1}),"
    )
    print("return = mean episode return per plane (95% CI over worlds); heuristic statistics per episode.\n")
    print(
        "| level | random return | heuristic return | fire out | fire near village | crashes/plane "
        "| extinguished | prepared | burnt fraction | random burnt fraction |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, lv in enumerate(levels):
        r, h = results["random"], results["heuristic"]
        print(
            f"| {lv} | {ci(r['return'][m])} | {ci(h['return'][m])} | {h['fire_out'][m].mean():.2f} "
            f"| {h['too_close'][m].mean():.2f} | {h['crash'][m].mean():.2f} "
            f"| {h['extinguished'][m].mean():.0f} "
            f"| {h['prepared'][m].mean():.0f} | {h['burnt_fraction'][m].mean():.2f} "
            f"| {r['burnt_fraction'][m].mean():.2f} |"
        )
    allr, allh = results["random"]["return"].ravel(), results["heuristic"]["return"].ravel()
    print(f"\nall levels: random {ci(allr)}, heuristic {ci(allh)}")
    slope = np.polyfit(np.repeat(levels, args.worlds), allh, 1)[0]
    print(f"heuristic return vs terrain level: least-squares slope {slope:+.1f} per level")


if __name__ == "__main__":
    main()
