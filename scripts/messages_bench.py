"""Steps/s of an env with and without the message channel, side by side (docs/messages.md).

    PJRT_NPROC=1 python scripts/messages_bench.py --env WildfireResourceManagement-v0 --batch 256 \
        --steps 64 --repeats 7 message_vocab=4

Both runs are `hivex_jax.bench.hivex_runner` (random actions, auto-reset, one scan under one jit); they
compile first, then their timed runs alternate (plain, messages, plain, ...) so both see the same
machine load. Prints one JSON line per variant and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax

from hivex_jax.bench import hivex_runner, parse_value


def main() -> None:
    """Parse the options, time both variants alternately, print medians and their ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="WildfireResourceManagement-v0")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("options", nargs="+", help="message options as key=value (e.g. message_vocab=4)")
    args = p.parse_args()
    message_options = dict(kv.split("=", 1) for kv in args.options)
    message_options = {k: parse_value(v) for k, v in message_options.items()}
    variants = {"plain": {}, "messages": message_options}
    compiled = {}
    for name, options in variants.items():
        init, run, _ = hivex_runner(args.env, args.batch, args.steps, **options)
        carry = jax.block_until_ready(jax.jit(init)(jax.random.PRNGKey(0)))
        fn = jax.jit(run).lower(carry).compile()
        carry = jax.block_until_ready(fn(carry))  # warm-up
        compiled[name] = (fn, carry)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, (fn, carry) in compiled.items():
            t0 = time.perf_counter()
            carry = jax.block_until_ready(fn(carry))
            times[name].append(time.perf_counter() - t0)
            compiled[name] = (fn, carry)
    sps = {}
    for name in variants:
        median = statistics.median(times[name])
        sps[name] = args.batch * args.steps / median
        print(
            json.dumps(
                {
                    "env": args.env,
                    "variant": name,
                    "options": variants[name],
                    "batch": args.batch,
                    "steps": args.steps,
                    "run_s_median": round(median, 4),
                    "env_steps_per_s": round(sps[name]),
                }
            )
        )
    print(f"messages / plain steps/s: {sps['messages'] / sps['plain']:.3f}")


if __name__ == "__main__":
    main()
