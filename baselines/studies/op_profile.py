"""Where one compiled program's time goes, op by op: XLA's own per-op timings (`jax.profiler`'s trace of one
call) grouped by the part of the model each op comes from (the actor's network, the critic's, everything
else: the env, the loop, the optimiser). Two programs: a saved run's held-out evaluation (the trained
policy's loop over the test worlds, one row: seed 0, stochastic) and a config's PPO epochs of one update
(one seed). The numbers `hivex bench --train --profile` gives per piece, here per op.

    PJRT_NPROC=1 python scripts/op_profile.py --run RUN [--worlds 6000:6032] [--steps 100] [--top 25]
    PJRT_NPROC=1 python scripts/op_profile.py --config CONFIG [key=value ...] [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile
import time
from typing import Any

import jax

#: the groups an op is counted in, by the flax module (or named scope) its op name passes through
GROUPS = (
    ("both first convs", ("FirstConvPair",)),
    ("actor", ("Actor", "RecurrentActor")),
    ("critic", ("Critic",)),
)
REST = "env and the rest"


def op_times(compiled: Any, args: tuple) -> dict[str, float]:
    """Seconds per op name (summed over its executions) of one call `compiled(*args)`, from a profiler
    trace (the call is warmed up first, so compilation is not in it)."""
    jax.block_until_ready(compiled(*args))
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            jax.block_until_ready(compiled(*args))
        (path,) = glob.glob(f"{folder}/**/perfetto_trace.json.gz", recursive=True)
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
    times: collections.Counter = collections.Counter()
    for event in events:  # complete events of XLA's ops: not Python frames ($...) nor the executor's own
        name = event.get("name", "")
        if (
            event.get("ph") == "X"
            and not name.startswith("$")
            and "Thunk" not in name
            and "Execute" not in name
        ):
            times[name] += event.get("dur", 0) / 1e6
    return dict(times)


def op_sources(hlo_text: str) -> dict[str, tuple[str, str]]:
    """`{op: (result shape, source op name)}` of a compiled program's HLO text. A fusion without its own
    op name takes the most common one of the computation it calls; an op still without one (YNNPACK's dot
    fusions, the gradients' dots carry none) the first of its operands' that lies in a `GROUPS` module
    (else its first operand's), marked "~" as inferred."""
    lines = dict(re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*)$", hlo_text, re.M))
    bodies = dict(re.findall(r"^%([\w.\-]+) .*?\{\n(.*?)\n\}", hlo_text, re.M | re.S))
    out = {}
    for name, line in lines.items():
        shape = line.split(" ", 1)[0]
        source = re.search(r'op_name="([^"]*)"', line)
        called = re.search(r"calls=%([\w.\-]+)", line)
        if source is None and called is not None:
            inner = re.findall(r'op_name="([^"]*)"', bodies.get(called.group(1), ""))
            source = collections.Counter(inner).most_common(1)[0][0] if inner else None
        else:
            source = source.group(1) if source else None
        out[name] = (shape, source or "")
    for name, (shape, source) in list(out.items()):
        if source:
            continue
        operands = re.match(r"[^(]*\(([^)]*)\)", lines[name].split(" ", 1)[-1])
        names = re.findall(r"%([\w.\-]+)", operands.group(1)) if operands else []
        found = [out[o][1] for o in names if o in out and out[o][1]]
        grouped = [f for f in found if group_of(f) != REST]
        if grouped or found:
            out[name] = (shape, "~" + (grouped or found)[0].lstrip("~"))
    return out


def group_of(source: str) -> str:
    """The part of the model an op's source op name comes from (`GROUPS`), else `REST`."""
    for group, modules in GROUPS:
        if any(re.search(rf"(^|[/(]){module}[)/]", source) for module in modules):
            return group
    return REST


def profile_table(compiled: Any, args: tuple, top: int = 25) -> dict[str, Any]:
    """`{"total_s", "groups": {group: seconds}, "ops": [(seconds, op, shape, source), ...]}` of one call
    (the `top` costliest ops)."""
    times = op_times(compiled, args)
    sources = op_sources(compiled.as_text())
    groups: collections.Counter = collections.Counter()
    rows = []
    for op, seconds in times.items():
        shape, source = sources.get(op, ("?", ""))
        groups[group_of(source)] += seconds
        rows.append((seconds, op, shape, source))
    rows.sort(reverse=True)
    return {"total_s": sum(times.values()), "groups": dict(groups), "ops": rows[:top]}


def evaluation_program(run: str, worlds: str, steps: int) -> tuple[Any, tuple]:
    """The trained policy's held-out evaluation loop of `run` (seed 0, stochastic; `steps` steps of every
    world) as `(compiled, args)`."""
    from baselines.run.eval_policies import greedy_and_stochastic_rows, greedy_or_stochastic, policy_env
    from baselines.run.evaluation import load_run
    from hivex_jax.eval import rollout

    config, population, state = load_run(run)
    train = population.train
    params, greedy = greedy_and_stochastic_rows(state.params, config.num_seeds)
    row = config.num_seeds  # the first stochastic row
    args = (jax.tree.map(lambda x: x[row : row + 1], params), greedy[row : row + 1])
    evaluator = rollout.Evaluator(
        policy_env(train),
        train.env_params,
        greedy_or_stochastic(train),
        worlds,
        jax.random.PRNGKey(config.eval_seed),
        steps,
        batched=True,
        in_turn=True,
    )
    return evaluator.program(args)


def update_program(config_path: str, overrides: list[str]) -> tuple[Any, tuple]:
    """One seed's PPO epochs of one update of the config (as `hivex bench --train --profile` compiles
    them) as `(compiled, args)`."""
    from baselines.cli.profile import UpdateProfile
    from baselines.config import load_config

    profile = UpdateProfile(load_config(config_path, ["num_seeds=1", *overrides]), evaluate=False)
    return profile.pieces["ppo_epochs"]


def print_table(table: dict[str, Any], per: str, count: int) -> None:
    """The groups' shares, then the costliest ops, in milliseconds per `per` (`count` of them traced)."""
    total = table["total_s"]
    print(f"op time {total * 1e3 / count:.2f} ms per {per} (sum of XLA's ops, {count} {per}s traced)")
    for group, seconds in sorted(table["groups"].items(), key=lambda kv: -kv[1]):
        print(f"  {group:18s} {seconds * 1e3 / count:8.3f} ms  {100 * seconds / total:5.1f} %")
    print(f"the {len(table['ops'])} costliest ops (ms per {per}, result shape, source):")
    for seconds, op, shape, source in table["ops"]:
        print(f"  {seconds * 1e3 / count:8.3f}  {op[:28]:28s} {shape[:30]:30s} {source[-80:]}")


def main(argv: list[str] | None = None) -> None:
    """Profile the program asked for and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", help="a run folder: profile its trained policy's held-out evaluation")
    parser.add_argument("--config", help="a config: profile one seed's PPO epochs of one update")
    parser.add_argument("--worlds", default="6000:6032", help="held-out worlds (--run; default 6000:6032)")
    parser.add_argument("--steps", type=int, default=100, help="evaluation steps traced (--run; default 100)")
    parser.add_argument("--top", type=int, default=25, help="ops listed (default 25)")
    parser.add_argument("overrides", nargs="*", help="config overrides key=value (--config)")
    args = parser.parse_args(argv)
    if (args.run is None) == (args.config is None):
        parser.error("give one of --run RUN or --config CONFIG")
    if args.steps < 1 or args.top < 1:
        parser.error("--steps and --top must be at least 1")
    start = time.perf_counter()
    if args.run is not None:
        compiled, call = evaluation_program(args.run, args.worlds, args.steps)
        per, count = "evaluation step (all worlds)", args.steps
    else:
        compiled, call = update_program(args.config, args.overrides)
        per, count = "update", 1
    table = profile_table(compiled, call, args.top)
    print_table(table, per, count)
    print(
        f"(built, compiled and traced in {time.perf_counter() - start:.0f} s; jax {jax.__version__}, "
        f"{jax.devices()[0].platform})"
    )


if __name__ == "__main__":
    main()
