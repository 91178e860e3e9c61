"""`hivex bench`: random-action throughput over a sweep of batch sizes, optionally beside a peer.

Each measurement runs `steps` environment steps for `batch` worlds inside one `jax.lax.scan` under one
`jit` (auto-reset on, observations consumed so XLA cannot drop them). Compile time is reported apart
from run time; the run is repeated and the median taken; `block_until_ready` ends every timing.
`--peer` measures a peer env the same way in the same process, so the ratio is taken side by side on
the same machine state: JaxMARL's MPE_simple_spread_v3 (`--peer` or `--peer mpe`), or, for the camera
envs, Craftax-Classic-Pixels-v1 (`--peer craftax-pixels`, one agent with a 63x63x3 image). `--train
CONFIG` adds the trainer's end-to-end throughput; `--train CONFIG --profile` replaces the sweep with a
profile of one update (`baselines.cli.profile.train_profile`, found through the trainer's entry point).
Bad input (env id, env options, sizes, the output path, the --train config) is a one-line error (exit
status 2) before anything compiles.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import hivex_jax
from hivex_jax.cli_support import (
    ArgumentParser,
    check_at_most,
    check_positive,
    check_writable_dir,
    command_plugin,
    make_checked,
    reports_user_errors,
)
from hivex_jax.core.errors import UserError
from hivex_jax.wrappers import AutoReset, PregeneratedWorldPool
from hivex_jax.wrappers.autoreset import reset_where

PEER_ID = "MPE_simple_spread_v3"
CRAFTAX_PIXELS_ID = "Craftax-Classic-Pixels-v1"


def _consume(obs: Any) -> Any:
    """A scalar that depends on every observation leaf (keeps them alive through XLA's DCE)."""
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(obs))


def hivex_runner(
    env_id: str, batch: int, steps: int, autoreset: bool = True, pregenerate: int = 0, **overrides: Any
):
    """(init_fn, run_fn, num_agents): `run_fn(carry)` advances `batch` worlds `steps` steps.

    `pregenerate=N` resets from N worlds built once (`PregeneratedWorldPool`, what `hivex train`
    does by default) instead of generating a world at every reset."""
    env, params = hivex_jax.make(env_id, **overrides)
    if pregenerate:
        env = PregeneratedWorldPool(env, range(pregenerate), params)
    if autoreset:
        env = AutoReset(env)
    space = env.action_space(params)

    def init(key):
        keys = jax.random.split(key, batch)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
        return state, key, jnp.float32(0.0)

    def run(carry):
        def body(c, _):
            state, key, acc = c
            key, k_act, k_step = jax.random.split(key, 3)
            actions = jax.vmap(space.sample)(jax.random.split(k_act, batch))
            obs, state, reward, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_step, batch), state, actions, params
            )
            return (state, key, acc + _consume(obs) * 1e-9 + jnp.sum(reward)), None

        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    return init, run, env.num_agents


def peer_runner(batch: int, steps: int):
    """The same measurement for JaxMARL's MPE_simple_spread_v3 (its `step` auto-resets)."""
    import jaxmarl  # an optional peer (the bench extra): imported only when `--peer` asks for it

    env = jaxmarl.make(PEER_ID)
    agents = env.agents

    def init(key):
        keys = jax.random.split(key, batch)
        _, state = jax.vmap(env.reset)(keys)
        return state, key, jnp.float32(0.0)

    def run(carry):
        def body(c, _):
            state, key, acc = c
            key, k_act, k_step = jax.random.split(key, 3)
            act_keys = jax.random.split(k_act, len(agents))
            actions = {
                a: jax.vmap(env.action_space(a).sample)(jax.random.split(k, batch))
                for a, k in zip(agents, act_keys, strict=True)
            }
            obs, state, reward, dones, _ = jax.vmap(env.step)(jax.random.split(k_step, batch), state, actions)
            total = sum(jnp.sum(r) for r in reward.values())
            return (state, key, acc + _consume(obs) * 1e-9 + total), None

        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    return init, run, env.num_agents


def craftax_pixels_runner(batch: int, steps: int):
    """The same measurement for Craftax-Classic-Pixels-v1, a camera peer (one agent, 63x63x3 image).

    Steps through Craftax's own `step_env`/`reset_env` and resets with this suite's `reset_where` (worlds
    are generated only on steps where some episode of the batch ended), as `AutoReset` does: gymnax >=
    1.0's `step` no longer runs Craftax 1.4's envs (`is_terminated` became abstract)."""
    # an optional peer (the bench extra): imported only when `--peer` asks for it
    from craftax.craftax_env import make_craftax_env_from_name  # pyright: ignore[reportMissingImports]

    env = make_craftax_env_from_name(CRAFTAX_PIXELS_ID, auto_reset=False)
    env.is_terminated = env.is_terminal  # gymnax >= 1.0 asks for is_terminated; Craftax 1.4 has is_terminal
    env_params = env.default_params
    space = env.action_space(env_params)

    def reset_batch(keys):
        return jax.vmap(env.reset_env, in_axes=(0, None))(keys, env_params)

    def init(key):
        _, state = reset_batch(jax.random.split(key, batch))
        return state, key, jnp.float32(0.0)

    def run(carry):
        def body(c, _):
            state, key, acc = c
            key, k_act, k_step, k_reset = jax.random.split(key, 4)
            actions = jax.vmap(space.sample)(jax.random.split(k_act, batch))
            obs, state, reward, done, _ = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
                jax.random.split(k_step, batch), state, actions, env_params
            )
            obs, state = reset_where(done, reset_batch, (jax.random.split(k_reset, batch),), (obs, state))
            return (state, key, acc + _consume(obs) * 1e-9 + jnp.sum(reward)), None

        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    return init, run, 1


# --peer NAME: (the peer's id, its runner, the module it needs, how to install that module)
PEERS: dict[str, tuple[str, Callable[[int, int], Any], str, str]] = {
    "mpe": (PEER_ID, peer_runner, "jaxmarl", "pip install -e '.[bench]'"),
    "craftax-pixels": (CRAFTAX_PIXELS_ID, craftax_pixels_runner, "craftax", "pip install -e '.[bench]'"),
}


def measure(
    make_runner: Callable[[], tuple[Callable, Callable, int]], batch: int, steps: int, repeats: int
) -> dict:
    """Compile once, run `repeats` times; return compile time, median run time and steps/s."""
    init, run, num_agents = make_runner()
    carry = jax.jit(init)(jax.random.PRNGKey(0))
    jax.block_until_ready(carry)
    t0 = time.perf_counter()
    compiled = jax.jit(run, donate_argnums=0).lower(carry).compile()
    compile_s = time.perf_counter() - t0
    carry = jax.block_until_ready(compiled(carry))  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry))
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    env_sps = batch * steps / median
    return {
        "batch": batch,
        "steps": steps,
        "compile_s": compile_s,
        "run_s_median": median,
        "run_s_all": times,
        "env_steps_per_s": env_sps,
        "agent_steps_per_s": env_sps * num_agents,
        "num_agents": num_agents,
    }


#: upper bounds of the command's sizes: far above any useful benchmark, far below what breaks jax
MAX_STEPS = 100_000  # steps per scan
MAX_REPEATS = 1000
MAX_TRAIN_UPDATES = 10_000
MAX_PREGENERATE = 65_536  # worlds built once (each a full world state)
MAX_BATCH = 2**22  # worlds stepped at once (the GPU sweep stops at 262,144)


def _parse(argv: list[str]) -> argparse.Namespace:
    # `or`: python -OO strips docstrings
    p = ArgumentParser(prog="hivex bench", description=(__doc__ or "\n").splitlines()[0])
    p.add_argument(
        "--env", default="WindFarmControl-v0", help="registered environment id (default: %(default)s)"
    )
    p.add_argument(
        "--batch-sizes",
        default=None,
        help="comma-separated world counts (default: 1,64,1024,4096 on CPU; up to 262144 on GPU)",
    )
    p.add_argument("--steps", type=int, default=128, help="steps per scan (default 128)")
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed repeats (--profile: rounds); the median is reported (default 5)",
    )
    p.add_argument(
        "--peer",
        nargs="?",
        const="mpe",
        default=None,
        choices=sorted(PEERS),
        help=f"also measure a peer env side by side: mpe (JaxMARL {PEER_ID}, the default) or "
        f"craftax-pixels ({CRAFTAX_PIXELS_ID}, a camera peer)",
    )
    p.add_argument("--no-autoreset", action="store_true", help="measure bare step (no AutoReset)")
    p.add_argument(
        "--pregenerate",
        type=int,
        default=0,
        metavar="N",
        help="auto-reset from N worlds built once (as `hivex train` does) instead of generating each",
    )
    p.add_argument(
        "--json",
        default=None,
        help="write results here (default bench_results/<env>.json; with --profile <config>_profile.json)",
    )
    p.add_argument("--train", default=None, metavar="CONFIG", help="also measure end-to-end training")
    p.add_argument("--train-updates", type=int, default=4, help="updates timed for --train")
    p.add_argument(
        "--train-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override for --train (repeatable; e.g. --train-set num_seeds=1)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="instead of the random-action sweep, split one --train update into env step, rollout "
        "inference, GAE and PPO epochs (each compiled and timed apart), with evaluation, host time and "
        "the learner's GFLOP/s beside a 2048^2 matmul's",
    )
    p.add_argument(
        "--compare",
        action="append",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="with --profile: also profile the config with these overrides, in the same process "
        "(repeatable, one variant each; ratios to the config's own profile)",
    )
    p.add_argument("overrides", nargs="*", help="env options as key=value (e.g. task=1 pattern=3)")
    return p.parse_args(argv)


def parse_value(text: str) -> Any:
    """`text` as an int, else a float, else the text itself (a key=value override's value)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _key_values(items: list[str], option: str) -> list[str]:
    """`items` if each is KEY=VALUE, else a `UserError` naming `option`."""
    for item in items:
        if not item.partition("=")[0] or "=" not in item:
            raise UserError(f"{option}: expected KEY=VALUE, got {item[:60]!r}")
    return items


def _batch_sizes(text: str) -> list[int]:
    """`"1,64,1024"` -> [1, 64, 1024], or a `UserError` naming the bad entry."""
    sizes = []
    for item in text.split(","):
        try:
            size = int(item)
        except ValueError:
            size = 0
        if size < 1:
            raise UserError(
                f"--batch-sizes {text[:40]!r}: {item[:40]!r} is not a positive integer (e.g. 1,64,1024)"
            )
        if size > MAX_BATCH:
            raise UserError(f"--batch-sizes: {item[:40]!r} is more than {MAX_BATCH:,} worlds")
        sizes.append(size)
    return sizes


def output_path(args: argparse.Namespace) -> Path:
    """`--json`, else `bench_results/<env>.json`; a `--profile` (no env sweep) is named after its config:
    `bench_results/<config file's stem>_profile.json`."""
    if args.json:
        return Path(args.json)
    if args.profile and args.train:
        return Path(f"bench_results/{Path(args.train).stem}_profile.json")
    return Path(f"bench_results/{args.env}.json")


@reports_user_errors("hivex bench")
def main(argv: list[str] | None = None) -> int:
    """Entry point of `hivex bench`."""
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    check_positive(steps=args.steps, repeats=args.repeats, train_updates=args.train_updates)
    if args.pregenerate < 0:
        raise UserError(f"--pregenerate must be >= 0 (0 = generate each world); got {args.pregenerate}")
    check_at_most(
        steps=(args.steps, MAX_STEPS),
        repeats=(args.repeats, MAX_REPEATS),
        train_updates=(args.train_updates, MAX_TRAIN_UPDATES),
        pregenerate=(args.pregenerate, MAX_PREGENERATE),
    )
    overrides = {}
    for item in args.overrides:
        k, sep, v = item.partition("=")
        if not k or not sep:
            raise UserError(f"expected key=value, got {item!r}")
        overrides[k] = parse_value(v)
    make_checked(args.env, **overrides)  # unknown id / option / value: fails here, before compiling
    sizes = _batch_sizes(args.batch_sizes) if args.batch_sizes else None
    path = output_path(args)
    if path.is_dir():
        raise UserError(f"--json {path} is a folder; give a file name like {path / 'bench.json'}")
    check_writable_dir(path.parent, "output folder")
    measure_training = None
    if not args.train and (args.profile or args.train_set or args.compare):
        raise UserError("--profile, --train-set and --compare apply to --train CONFIG: give it too")
    if args.train:  # the trainer's part, found through an entry point (this library imports no trainer)
        variants = [_key_values(items, "--compare") for items in args.compare]
        measure_training = command_plugin("bench-train")(  # checks the config and each variant
            args.train,
            args.train_updates,
            _key_values(args.train_set, "--train-set"),
            profile=args.profile,
            variants=variants,
            repeats=args.repeats,
        )
    backend = jax.default_backend()
    if args.profile:  # the profile's env row is the training env stack's; no random-action sweep
        sizes = []
    elif sizes is None:
        sizes = [1, 64, 1024, 4096] if backend == "cpu" else [1, 64, 1024, 16384, 65536, 262144]
    if args.peer:
        peer_id, peer_make, peer_module, peer_install = PEERS[args.peer]
        try:
            importlib.import_module(peer_module)
        except ImportError as exc:
            raise UserError(f"--peer {args.peer} needs {peer_module}: {peer_install}") from exc
        peer_short = peer_id.split("_")[0].split("-")[0]  # MPE, Craftax

    device = jax.devices()[0]
    header = f"{'env':30s} {'batch':>7s} {'compile s':>9s} {'env-steps/s':>12s} {'agent-steps/s':>14s}" + (
        f"  ratio to {peer_short} (agent)" if args.peer else ""
    )
    if sizes:
        print(f"device: {device.device_kind} ({backend}), jax {jax.__version__}, steps/scan {args.steps}")
        print(header)
    rows = []
    for batch in sizes:
        try:
            ours = measure(
                lambda b=batch: hivex_runner(
                    args.env, b, args.steps, not args.no_autoreset, args.pregenerate, **overrides
                ),
                batch,
                args.steps,
                args.repeats,
            )
        except Exception as exc:  # out of memory: stop the sweep here
            print(f"{args.env:30s} {batch:7d}  failed: {type(exc).__name__}: {str(exc)[:120]}")
            break
        row = {"env": args.env, **ours}
        line = (
            f"{args.env[:30]:30s} {batch:7d} {ours['compile_s']:9.2f} "
            f"{ours['env_steps_per_s']:12.4g} {ours['agent_steps_per_s']:14.4g}"
        )
        if args.peer:
            peer = measure(lambda b=batch: peer_make(b, args.steps), batch, args.steps, args.repeats)
            row["peer"] = {"env": peer_id, **peer}
            row["ratio_env_steps"] = ours["env_steps_per_s"] / peer["env_steps_per_s"]
            row["ratio_agent_steps"] = ours["agent_steps_per_s"] / peer["agent_steps_per_s"]
            line += f"  {row['ratio_agent_steps']:.2f}x"
            print(line)
            print(
                f"{peer_id[:30]:30s} {batch:7d} {peer['compile_s']:9.2f} "
                f"{peer['env_steps_per_s']:12.4g} {peer['agent_steps_per_s']:14.4g}"
            )
        else:
            print(line)
        rows.append(row)

    result: dict[str, Any] = {
        "env": args.env,
        "overrides": overrides,
        "autoreset": not args.no_autoreset,
        "pregenerate": args.pregenerate,
        "device": device.device_kind,
        "backend": backend,
        "jax_version": jax.__version__,
        "hivex_jax_version": hivex_jax.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "results": rows,
    }
    if measure_training is not None and args.profile:
        profile = measure_training()
        print(profile.pop("table"))
        result["env"] = profile["variants"][0]["env_id"]  # the config's: no --env sweep ran
        result["train_profile"] = profile
    elif measure_training is not None:
        train = measure_training()
        result["train"] = train
        print(
            f"training ({args.train}): {train['env_steps_per_s']:.4g} env-steps/s, "
            f"{train['agent_steps_per_s']:.4g} agent-steps/s including learning "
            f"(compile {train['compile_s']:.1f} s, {train['num_envs']} envs x {train['num_seeds']} seeds)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {path}")
    return 0
