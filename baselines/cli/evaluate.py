"""`hivex evaluate`: a saved run or a shipped pretrained policy (`--pretrained ENV`) on any worlds (held-out
protocol), or a run scored as HIVEX scored (hivex)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baselines.cli.common import (
    add_trust_unverified_option,
    check_episode_steps,
    checked_marl_eval_file,
    enable_compilation_cache,
    run_folder_config,
)
from baselines.config import validate_env
from baselines.run import checkpoint
from hivex_jax.cli_support import ArgumentParser, check_positive, check_writable_dir, reports_user_errors
from hivex_jax.core.errors import UserError, user_input, world_seeds

#: where `hivex evaluate --pretrained` writes a policy's evaluations (`<algo>_<env>/eval_<worlds>.json`)
PRETRAINED_OUT = "runs/pretrained"


@reports_user_errors("hivex evaluate")
def evaluate_main(argv: list[str]) -> int:
    """`hivex evaluate RUN_DIR [--worlds 6000:6100]` / `hivex evaluate --pretrained ENV [--algo mappo]`:
    score a saved or shipped policy on any worlds."""
    p = ArgumentParser(
        prog="hivex evaluate",
        description="Evaluate a saved run (every seed, greedy and stochastic) or a shipped pretrained policy "
        "(--pretrained) on held-out worlds, next to the scripted and random policies; prints a table and "
        "writes eval_<worlds>.json and a per-world plot eval_<worlds>.png into the run (a pretrained "
        f"policy's: {PRETRAINED_OUT}/<algo>_<env>/; <worlds>: first-last world, both played: --worlds "
        "6000:6032 writes eval_6000-6031.json).",
    )
    p.add_argument("run_dir", nargs="?", default=None, help="a run folder (or give --pretrained)")
    p.add_argument(
        "--pretrained",
        default=None,
        metavar="ENV",
        help="evaluate the shipped pretrained policy of this env id (or short name: wfc, wrm, dbr, opc, "
        "aws) instead of a run folder (docs/pretrained.md)",
    )
    p.add_argument(
        "--algo", choices=("ippo", "mappo"), default=None, help="with --pretrained: which one (default ippo)"
    )
    p.add_argument(
        "--worlds",
        default=None,
        help='world seeds, "6000:6032" (32 worlds: the end is excluded) or "1,5,9", or "stress": the '
        "env's stress worlds over seeds 9000-9031 (default: test pool); also test_worlds=SPEC",
    )
    p.add_argument(
        "--world-files",
        default=None,
        metavar="GLOB",
        help="worlds from files: paths / globs, comma-separated (docs/worlds.md); the seeds pick among them",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="cut each episode at this many steps (default: full episodes, the env's max_steps); "
        "results go to eval_<worlds>__steps<N>.json",
    )
    p.add_argument("--no-baselines", action="store_true", help="skip the scripted / random policies")
    p.add_argument(
        "--out",
        default=None,
        help="JSON output (default: RUN_DIR/eval_<worlds>.json, or eval_hivex.json; a plot goes next to it)",
    )
    p.add_argument(
        "--protocol",
        choices=("held-out", "hivex"),
        default="held-out",
        help="held-out: per-world episodes, greedy and stochastic, CIs over seeds (default); hivex: HIVEX's "
        "test runs (one world after another from seed 6000, stochastic, mean of summary points, 3 runs)",
    )
    p.add_argument(
        "--marl-eval",
        default=None,
        metavar="FILE",
        help="also write the greedy policy's per-world results in marl-eval's JSON format to FILE",
    )
    p.add_argument("--agent-steps", type=int, default=None, help="hivex protocol: agent steps per test run")
    p.add_argument("--summary-freq", type=int, default=None, help="hivex protocol: agent steps per summary")
    p.add_argument(
        "--runs", type=int, default=None, help="hivex protocol: test runs (default: min(3, seeds))"
    )
    p.add_argument(
        "--allow-uncomparable",
        action="store_true",
        help="hivex protocol: run even when the run's env differs from the published HIVEX cell's (another "
        "agent count, stress or file worlds, env_options / env_params); the output says it is not comparable",
    )
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="key=value",
        help="zero-shot transfer: evaluate in another env setting, e.g. num_agents=12 level=7 task=2 "
        "pattern=3 env_params.x=1 env_options.y=2 (the policy runs unchanged; docs/generalisation.md)",
    )
    add_trust_unverified_option(p)
    args = p.parse_intermixed_args(argv)  # key=value before or after options
    with checkpoint.trusting_unverified(args.trust_unverified):
        return _evaluate(args)


def _evaluate(args: Any) -> int:
    """`hivex evaluate` once its options are parsed."""
    check_positive(
        steps=args.steps, agent_steps=args.agent_steps, summary_freq=args.summary_freq, runs=args.runs
    )
    if args.pretrained is not None and args.run_dir is not None and "=" in args.run_dir:
        # the first key=value word fills the run folder's place: with --pretrained it is an override
        args.overrides, args.run_dir = [args.run_dir, *args.overrides], None
    worlds_override(args)
    if args.worlds is not None and args.worlds != "stress":
        world_seeds(args.worlds, "--worlds")
    if args.world_files is not None:
        from hivex_jax.worlds.wrapper import expand_world_paths

        expand_world_paths(args.world_files)  # a glob that matches no file: one-line error
    policy = None  # a pretrained policy's (`--pretrained`), else the run folder's
    if args.pretrained is not None:
        if args.run_dir is not None:
            raise UserError("give a run folder or --pretrained ENV, not both")
        if args.protocol == "hivex":
            raise UserError("--protocol hivex plays a run folder's seeds; evaluate --pretrained held-out")
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.pretrained_policies import pretrained

        policy = pretrained(args.pretrained, args.algo or "ippo")  # files checked: one line if damaged
        config = policy.config
        run_dir = Path(PRETRAINED_OUT) / policy.name  # where its evaluations are written
    elif args.run_dir is None:
        raise UserError("give a run folder (hivex evaluate RUN_DIR) or --pretrained ENV")
    elif args.algo is not None:
        raise UserError("--algo picks a pretrained policy: give --pretrained ENV with it")
    else:
        run_dir = Path(args.run_dir)
        config = run_folder_config(run_dir, [])
    validate_env(config)
    if args.protocol == "hivex" and args.overrides:
        raise UserError("key=value env overrides (zero-shot transfer) belong to the held-out protocol")
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.transfer import eval_config, setting_tag

    evaluated = eval_config(config, args.overrides)  # names, bounds, the policy's fit, before compiling
    check_episode_steps(args.steps, [evaluated])
    if args.protocol == "hivex" and (args.world_files or args.worlds == "stress"):
        raise UserError("--world-files and --worlds stress belong to the held-out protocol")
    if args.world_files or args.worlds == "stress" or config.test_worlds == "stress":
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.run.eval_worlds import world_setting

        world_setting(evaluated, args.worlds or config.test_worlds, args.world_files)  # no stress worlds
    if args.protocol == "hivex":
        if args.marl_eval:
            raise UserError("--marl-eval exports per-world results: use it with --protocol held-out")
        return _evaluate_hivex(run_dir, config, args)
    marl_eval_file = checked_marl_eval_file(args.marl_eval)
    tag = worlds_tag(args.worlds)
    if args.overrides:  # a transfer evaluation does not overwrite the run's own
        tag += "__" + setting_tag(args.overrides)
    if args.world_files:  # nor does one on worlds from files
        tag += "__world_files"
    if args.steps is not None:  # nor one of shorter episodes
        tag += f"__steps{args.steps}"
    out = Path(args.out) if args.out else run_dir / f"eval_{tag}.json"
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name like {out / 'eval.json'}")
    check_writable_dir(out.parent, "output folder")
    enable_compilation_cache()
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.evaluation import evaluate_run
    from baselines.run.files import format_results, plot_eval

    if policy is None:
        results = evaluate_run(
            run_dir, args.worlds, not args.no_baselines, args.steps, args.overrides, args.world_files
        )
    else:
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.pretrained_policies.play import evaluate as evaluate_pretrained

        print(pretrained_line(policy.card))
        results = evaluate_pretrained(
            policy, args.worlds, not args.no_baselines, args.steps, args.overrides, args.world_files
        )
        out.parent.mkdir(parents=True, exist_ok=True)
    results = {"protocol": "held-out", **results}
    results["env_steps_per_seed"] = results["updates_done"] * config.steps_per_update
    from hivex_jax.eval.aggregate import eval_aggregates, format_eval_aggregates

    results["aggregates"] = eval_aggregates(results)
    out.write_text(json.dumps(results, indent=1))
    plot = plot_eval(out.with_suffix(".png"), results)
    if args.overrides:
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.run.transfer import changes

        moved = changes(results["train_setting"], results["eval_setting"])

        def shown(value: object) -> str:  # an option the config leaves out has the env's default
            return "(env default)" if value is None else str(value)

        print(
            "zero-shot transfer: " + ", ".join(f"{k} {shown(a)} -> {shown(b)}" for k, (a, b) in moved.items())
        )
    print(format_results(results))
    print("  (return +-95% CI: Student t over training seeds of their mean over worlds; IQM above: by hand)")
    print(format_eval_aggregates(results["aggregates"]))
    if marl_eval_file is not None:
        from hivex_jax.eval.marl_eval import write_marl_eval

        write_marl_eval(marl_eval_file, [(None, results)])
    print(f"wrote {out} and {plot}" + (f" and {marl_eval_file}" if marl_eval_file else ""))
    return 0


def worlds_override(args: Any) -> None:
    """`test_worlds=SPEC` among the key=value words (the config key's name) is `--worlds SPEC`."""
    given = [o for o in args.overrides if o.partition("=")[0].strip() == "test_worlds"]
    if not given:
        return
    if len(given) > 1 or args.worlds is not None:
        raise UserError("give the worlds once: --worlds SPEC or test_worlds=SPEC")
    args.worlds = given[0].partition("=")[2].strip()
    args.overrides = [o for o in args.overrides if o not in given]


def pretrained_line(card: dict[str, Any]) -> str:
    """What `hivex evaluate --pretrained` says of the policy before playing it: its training and the greedy
    return its card holds on the held-out worlds (this evaluation of those worlds gives it again)."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.pretrained_policies.build import seed_text

    held = card.get("held_out", {})
    greedy = held.get("mean_return", {}).get("greedy")
    return (
        f"pretrained {card['name']}: {card['algo'].upper()} on {card['env_id']}, {card['env_steps']:,} env "
        f"steps, seed {seed_text(card['training'])}"
        + (f"; its card: greedy {greedy:.1f} on worlds {held['worlds']}" if greedy is not None else "")
    )


def worlds_tag(spec: str | None) -> str:
    """The file-name part of `--worlds`: the first and LAST world, inclusive (`"6000:6004"` plays worlds
    6000-6003: `"6000-6003"`; one world: `"6000"`), a list joined by `_` (`"1,5,9"`: `"1_5_9"`), or
    `"test"` / `"stress"` for the run's test pool / the stress worlds."""
    if spec is None:
        return "test"
    if ":" in spec:
        first, end = (int(s) for s in spec.split(":"))  # checked by world_seeds before
        return f"{first}-{end - 1}" if end - 1 > first else str(first)
    return spec.replace(",", "_")


def _evaluate_hivex(run_dir: Path, config: Any, args: Any) -> int:
    """`hivex evaluate RUN --protocol hivex`: checks first, then HIVEX test runs
    (baselines.run.hivex_eval)."""
    from hivex_jax.eval.hivex_protocol import hivex_test_run

    if args.worlds is not None or args.steps is not None:
        raise UserError(
            "--worlds and --steps belong to the held-out protocol; the hivex protocol plays "
            "worlds 6000, 6001, ... for --agent-steps agent steps"
        )
    with user_input():
        hivex_test_run(config.env_id, args.agent_steps, args.runs, args.summary_freq)
    not_comparable = _hivex_cell_check(run_dir, config, args.allow_uncomparable)
    if args.runs is not None and args.runs > config.num_seeds:
        raise UserError(
            f"--runs {args.runs}: the run has {config.num_seeds} training seed(s); run i tests seed i"
        )
    out = Path(args.out) if args.out else run_dir / "eval_hivex.json"
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name like {out / 'eval_hivex.json'}")
    check_writable_dir(out.parent, "output folder")
    enable_compilation_cache()
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.run.hivex_eval import evaluate_run_hivex, format_hivex_results, hivex_runs

    runs = hivex_runs(config.num_seeds, args.runs)
    print(
        f"HIVEX protocol on {config.env_id}: the stochastic policy of training seeds 0..{runs - 1}, one run "
        "each" + ("; then the scripted controller and random, one run each" if not args.no_baselines else "")
    )
    results = evaluate_run_hivex(
        run_dir, args.agent_steps, args.runs, args.summary_freq, baselines=not args.no_baselines
    )
    if not_comparable:
        results["not_comparable"] = not_comparable
    out.write_text(json.dumps(results, indent=1))
    print(format_hivex_results(results))
    print(f"wrote {out}")
    return 0


def _hivex_cell_check(run_dir: Path, config: Any, allow: bool) -> str | None:
    """None when the run plays a published HIVEX cell's env (or its env has no HIVEX cells); else
    "not comparable with HIVEX cell ...: why", which is a UserError unless `allow`."""
    from hivex_jax.eval.hivex_cells import HIVEX_ENVS, uncomparable_reasons

    if config.env_id not in HIVEX_ENVS:
        return None
    cell, reasons = uncomparable_reasons(
        config.env_id,
        config.task,
        config.level,
        config.num_agents,
        config.env_options,
        config.env_params,
        config.world_files,
    )
    if not reasons:
        return None
    if not allow:
        raise UserError(
            f"run {run_dir} cannot be compared with HIVEX cell {cell.label()}: {'; '.join(reasons)} "
            "(--allow-uncomparable runs it anyway)"
        )
    return f"not comparable with HIVEX cell {cell.label()}: {'; '.join(reasons)}"
