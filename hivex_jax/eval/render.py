"""`hivex render`: write a GIF of one episode on a given world (scripted policy if the env has one, or with
`--pretrained ENV` the trainer's shipped policy, reached through the `hivex_jax.commands` entry points).

Bad input (env id, task, level, agent count, sizes, output path) is a one-line error (exit status 2)
before the episode is compiled.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from hivex_jax.cli_support import (
    ArgumentParser,
    check_at_most,
    check_positive,
    check_world_seed,
    check_writable_dir,
    command_plugin,
    make_checked,
    reports_user_errors,
)
from hivex_jax.core.errors import UserError, user_input

#: where GIFs go without --out, relative to the current folder (training runs live under runs/ too)
RENDER_DIR = "runs/render"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="hivex render", description="Write an animated GIF of one episode on one world.")
    p.add_argument(
        "--env", default="WindFarmControl-v0", help="environment id (see `hivex list`; default: %(default)s)"
    )
    p.add_argument("--task", type=int, default=None, help="task id (default: the env's default)")
    p.add_argument("--level", type=int, default=None, help="pattern / terrain level")
    p.add_argument("--world", type=int, default=6000, help="world seed (default 6000, a test world)")
    p.add_argument("--steps", type=int, default=None, help="steps to show (default: a full episode)")
    p.add_argument(
        "--frames", type=int, default=100, help="GIF frames (the stride is steps / frames; default 100)"
    )
    p.add_argument(
        "--policy",
        choices=("auto", "scripted", "random"),
        default="auto",
        help="auto = the env's scripted controller if it has one, else random",
    )
    p.add_argument("--num-agents", type=int, default=None, help="agent count (static option)")
    p.add_argument(
        "--pretrained",
        default=None,
        metavar="ENV",
        help="play the trainer's shipped pretrained policy of this env id or short name (greedy) in its "
        "card's env setting, instead of --env/--task/--level/--num-agents/--policy (docs/pretrained.md)",
    )
    p.add_argument(
        "--algo", choices=("ippo", "mappo"), default=None, help="with --pretrained: which one (default ippo)"
    )
    p.add_argument("--fps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="RNG seed of the policy / env noise")
    p.add_argument(
        "--out",
        default=None,
        help=f"output GIF (default: {RENDER_DIR}/<env>[_task<t>][_level<l>]_world<world>.gif)",
    )
    return p


def default_gif_path(env_id: str, world: int, task: int | None = None, level: int | None = None) -> Path:
    """Where `hivex render` writes without --out: under runs/render/ (beside training runs, not in the
    current folder), one file per env, task, level and world."""
    parts = [env_id.replace("/", "_")]
    parts += [] if task is None else [f"task{task}"]
    parts += [] if level is None else [f"level{level}"]
    return Path(RENDER_DIR) / ("_".join([*parts, f"world{world}"]) + ".gif")


@reports_user_errors("hivex render")
def main(argv: list[str] | None = None) -> int:
    """Entry point of `hivex render`."""
    args = _parser().parse_args(argv)
    check_positive(steps=args.steps, frames=args.frames, fps=args.fps)
    # 10**30 steps or frames would reach jax as an overflow; a GIF's frame delay is in 1/100 s
    check_at_most(steps=(args.steps, 1_000_000), frames=(args.frames, 10_000), fps=(args.fps, 100))
    check_world_seed(args.world)
    check_world_seed(args.seed, "--seed")
    pretrained = pretrained_policy(args)  # None without --pretrained; its files checked
    if pretrained is not None and not args.out:
        out = Path(RENDER_DIR) / f"pretrained_{pretrained['name']}_world{args.world}.gif"
    else:
        out = Path(args.out) if args.out else default_gif_path(args.env, args.world, args.task, args.level)
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name like {out / 'episode.gif'}")
    check_writable_dir(out.parent, "output folder")
    from hivex_jax.eval.gif import episode_frames, write_gif
    from hivex_jax.eval.rollout import random_policy, scripted_policy

    policy_params = None
    if pretrained is not None:
        env, params, policy = pretrained["env"], pretrained["env_params"], pretrained["policy"]
        name, policy_params = f"pretrained {pretrained['name']}", pretrained["policy_params"]
    else:
        overrides = {} if args.num_agents is None else {"num_agents": args.num_agents}
        env, params = make_checked(args.env, **overrides)
        with user_input():  # unknown task or level: names the accepted values
            params = env.variant_params(params, task=args.task, level=args.level)
        policy = None if args.policy == "random" else scripted_policy(env, params)
        if policy is None and args.policy == "scripted":
            raise UserError(f"{args.env} has no scripted_policy; use --policy random or auto")
        name = "scripted" if policy is not None else "random"
        policy = policy or random_policy(env)
    steps = int(params.max_steps) if args.steps is None else args.steps
    frames = max(2, min(args.frames, steps + 1))
    stride = max(1, steps // (frames - 1))
    start = time.perf_counter()
    pictures = episode_frames(env, params, policy, policy_params, args.world, args.seed, stride, frames)
    write_gif(out, pictures, fps=args.fps)
    print(
        f"wrote {out}: {len(pictures)} frames, one every {stride} steps, {name} policy, "
        f"world {args.world} ({time.perf_counter() - start:.1f} s)"
    )
    return 0


def pretrained_policy(args: argparse.Namespace) -> dict[str, Any] | None:
    """`--pretrained ENV [--algo A]`: the trainer's shipped policy as it plays (`env`, `env_params`, `policy`,
    `policy_params`, `name`; the `pretrained-policy` entry point of `hivex_jax.commands`), or None without
    --pretrained; options that pick another env setting or policy are refused in one line."""
    if args.pretrained is None:
        if args.algo is not None:
            raise UserError("--algo picks a pretrained policy: give --pretrained ENV with it")
        return None
    chosen = {"--task": args.task, "--level": args.level, "--num-agents": args.num_agents}
    fixed = [flag for flag, value in chosen.items() if value is not None]
    fixed += ["--policy"] if args.policy != "auto" else []
    if fixed:
        raise UserError(
            f"--pretrained plays its card's env setting with its own policy: drop {', '.join(fixed)}"
        )
    return command_plugin("pretrained-policy")(args.pretrained, args.algo or "ippo")


if __name__ == "__main__":
    raise SystemExit(main())
