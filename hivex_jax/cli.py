"""`hivex` command line: train | evaluate | sweep | transfer | bench | render | list | serve.

Sub-commands import their modules lazily so `hivex list` stays fast. train, evaluate, sweep (and
`bench --train`) belong to the trainer: they are found through the `hivex_jax.commands` entry-point
group, which the `baselines` package fills (pyproject.toml), so this library imports nothing from it.
`main` calls `prepare_jax` (hivex_jax/cli_support.py: PJRT_NPROC=1) for every sub-command, the
trainer's included, before jax starts a backend. A user error (`hivex_jax.core.errors.UserError`) is one
line on stderr and exit status 2; a bug keeps its traceback.
"""

from __future__ import annotations

import os
import sys

import hivex_jax
from hivex_jax.cli_support import command_plugin, prepare_jax
from hivex_jax.core.errors import UserError, one_line
from hivex_jax.core.registry import namespace_description, registered_namespaces, spec

COMMANDS = ("train", "evaluate", "sweep", "bench", "render", "list", "serve", "transfer", "world")

USAGE = """usage: hivex <command> [options]

commands:
  train      train IPPO/MAPPO (default: IPPO on WindFarmControl-v0); see `hivex train --help`
  evaluate   evaluate a saved run on held-out worlds; see `hivex evaluate --help`
  sweep      seed-sweep generalisation study; see `hivex sweep --help`
  transfer   zero-shot transfer matrix of trained runs; see `hivex transfer --help`
  bench      random-action (and training) throughput; see `hivex bench --help`
  render     write a GIF of an episode; see `hivex render --help`
  list       list the registered environments
  serve      serve environments over HTTP (sessions, grader); see `hivex serve --help`
  world      export generated worlds to files, check world files; see `hivex world --help`
"""


def _list(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print("usage: hivex list\n\nList the registered environments (id, agents, tasks, description).")
        return 0
    if argv:
        raise UserError(f"takes no arguments; got {' '.join(argv)!r}")
    print(f"{'id':34s} {'agents':>6s} {'tasks':>5s}  description")
    for env_id in hivex_jax.registered_envs():
        env, _ = hivex_jax.make(env_id)
        print(f"{env_id:34s} {env.num_agents:6d} {len(env.task_ids):5d}  {spec(env_id).description}")
    for namespace in registered_namespaces():
        print(f"{namespace + '/<name>':34s} {'':6s} {'':5s}  {namespace_description(namespace)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hivex` console script and `python -m hivex_jax`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(
            f"hivex: unknown command {command!r}; commands are {', '.join(COMMANDS)} (see `hivex --help`)",
            file=sys.stderr,
        )
        return 2
    prepare_jax()  # jax is imported by now, but no backend has started
    try:
        return _dispatch(command, rest)
    except UserError as exc:  # sub-commands report their own; this catches the rest (e.g. `hivex list x`)
        if os.environ.get("HIVEX_TRACEBACK"):
            raise
        print(f"hivex {command}: {one_line(exc)}", file=sys.stderr)
        return 2


def _dispatch(command: str, rest: list[str]) -> int:
    """Run sub-command `command` (one of COMMANDS) on its arguments."""
    # each sub-command's module (and what it alone needs: the server, PIL, ...) is imported when that
    # command runs, so the others start fast
    if command == "list":
        return _list(rest)
    if command == "bench":
        from hivex_jax.bench import main as bench_main

        return bench_main(rest)
    if command == "render":
        from hivex_jax.eval.render import main as render_main

        return render_main(rest)
    if command == "serve":
        from hivex_jax.serve.cli import main as serve_main

        return serve_main(rest)
    if command == "world":
        from hivex_jax.worlds.cli import main as world_main

        return world_main(rest)
    if command in ("train", "evaluate", "sweep", "transfer"):
        return command_plugin(command)(rest)
    raise AssertionError(f"unhandled command {command!r}")  # COMMANDS and this dispatch disagree


if __name__ == "__main__":
    raise SystemExit(main())
