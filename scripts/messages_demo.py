"""Communication demo on Wildfire Resource Management (issue 19 item 2): does a message channel help?

Trains the same IPPO config (configs/ippo_wildfire_resource_management_messages.yaml) under three
conditions, one run at a time, each a `hivex train` run of `--seeds` vmapped training seeds:

  (a) no_messages   the channel off (`message_vocab=null`)
  (b) messages      message_vocab=2: a tower sends one of 2 symbols with each action; each tower hears
                    its 3 neighbours (slot s = the tower its allocation branch s+1 hands resources to)
  (c) lossy         message_vocab=2, message_loss=1: every delivery dropped, in training and evaluation

and (d) zero_shot_lossy: (b)'s trained policy evaluated with message_loss=1 (`hivex evaluate RUN
message_loss=1`). Every condition is scored on the same held-out worlds (default 6000-6031), greedy
and stochastic; per seed the return is the mean over worlds (per-agent mean), the table gives the mean
and a Student-t 95% CI over seeds, and the differences to (a) with Welch's 95% CI
(`hivex_jax.eval.stats`). It also measures what (b)'s towers say: P(symbol 1 | the tower sees fire)
and P(symbol 1 | it sees none), and how the listeners answer (P(add to a neighbour | heard 1 / 0)).

    python scripts/messages_demo.py --out-dir runs/messages_demo       # all conditions, then the table
    python scripts/messages_demo.py --out-dir runs/messages_demo --table  # only the table from finished runs

Resumable: a condition whose run folder has eval.json is not trained again; a run folder without one
is continued with `hivex train --resume`. Writes OUT_DIR/messages_demo.json, messages_demo.md and
messages_demo.png (each condition's returns, mean and 95% CI over seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "configs" / "ippo_wildfire_resource_management_messages.yaml"
#: condition -> overrides of the shipped config
CONDITIONS = {
    "no_messages": ["message_vocab=null"],
    "messages": [],
    "lossy": ["message_loss=1"],
}
LABELS = {
    "no_messages": "(a) no messages",
    "messages": "(b) messages (vocab 2)",
    "lossy": "(c) messages, loss 1 (train + eval)",
    "zero_shot_lossy": "(d) (b)'s policy, loss 1 at test",
}


def _hivex(*args: str) -> None:
    """Run `python -m hivex_jax ARGS` (PJRT_NPROC=1), failing loudly."""
    env = {**os.environ, "PJRT_NPROC": "1"}
    subprocess.run([sys.executable, "-m", "hivex_jax", *args], check=True, env=env, cwd=REPO)


def run_condition(
    name: str, out_dir: Path, seeds: int, steps: int | None, worlds: str, extra: list[str]
) -> Path:
    """Train condition `name` (or continue / skip it); returns its run folder."""
    run = out_dir / f"demo_{name}"
    if (run / "eval.json").is_file():
        print(f"{name}: done already ({run})", flush=True)
        return run
    if (run / "config.yaml").is_file():
        _hivex("train", "--resume", str(run))
        return run
    budget = [f"total_env_steps={steps}"] if steps else []
    _hivex(
        "train",
        "--config",
        str(CONFIG),
        f"num_seeds={seeds}",
        f"test_worlds={worlds}",
        f"out_dir={out_dir}",
        f"name=demo_{name}",
        *budget,
        *CONDITIONS[name],
        *extra,
    )
    return run


def zero_shot_lossy(run: Path, worlds: str) -> Path:
    """(b)'s policy on the same worlds with every message dropped; returns the JSON it wrote."""
    out = run / "eval_zero_shot_lossy.json"
    if not out.is_file():
        _hivex(
            "evaluate", str(run), "--worlds", worlds, "--out", str(out), "--no-baselines", "message_loss=1"
        )
    return out


def per_seed_returns(eval_json: Path) -> dict[str, np.ndarray]:
    """`{policy: f64[seeds]}`: each seed's mean return over the worlds (per-agent mean)."""
    from hivex_jax.eval.aggregate import policy_scores  # [runs, worlds]; scripted/random: one run

    report = json.loads(eval_json.read_text())
    return {policy: policy_scores(report, policy).mean(axis=1) for policy in report["policies"]}


def message_usage(run: Path, worlds: str, seed_index: int | None = None) -> dict[str, float]:
    """What (b)'s greedy towers say and how they answer, pooled over seeds and the worlds' steps:
    P(symbol 1 | the tower sees fire), P(symbol 1 | it sees none), their counts, and P(add resources to
    neighbour | heard symbol 1 / heard symbol 0 from it)."""
    import jax
    import jax.numpy as jnp

    from baselines.common import make_env
    from baselines.evaluation import load_run
    from hivex_jax.core.seeding import rollout_key, rollout_step_keys, seed_range, world_key
    from hivex_jax.envs.wildfire_resource_management import dynamics

    config, population, state = load_run(run)
    env, env_params = make_env(config)
    act = population.train.act
    vocab = env.message_vocab
    num_slots = env.num_slots
    steps = int(env_params.max_steps)

    def episode(params, world):
        obs, st = env.reset(world_key(world), env_params)
        key = rollout_key(jax.random.PRNGKey(config.eval_seed), world)

        def body(carry, t):
            obs, st, done = carry
            k_act, k_env = rollout_step_keys(key, t)
            action = act(params, obs, k_act, True)
            seen = env.inner_state(st).fire_found  # what the speaker's observation shows now
            symbol = action["discrete"][:, -1]
            heard = obs["vector"][:, -num_slots * vocab :].reshape(-1, num_slots, vocab)
            add = action["discrete"][:, 1 : 1 + num_slots] == dynamics.ADD  # branches 1-3 = slots 0-2
            obs, st, _, _, _, info = env.step(k_env, st, action, env_params)
            return (obs, st, done | info["done"]), (seen, symbol, heard, add, ~done)

        _, out = jax.lax.scan(body, (obs, st, jnp.bool_(False)), jnp.arange(steps))
        return out

    seeds = range(config.num_seeds) if seed_index is None else [seed_index]
    world_list = jnp.asarray(seed_range(worlds).astype(np.uint32))
    run_worlds = jax.jit(jax.vmap(episode, in_axes=(None, 0)))
    rate = lambda row: float(row[1] / max(row.sum(), 1))  # noqa: E731
    pooled = np.zeros((2, 2, 2))  # [speaker: seen, symbol 1 | listener: heard 1, add]
    per_seed = []
    for s in seeds:
        params = jax.tree.map(lambda x, s=s: x[s], state.params)
        seen, symbol, heard, add, live = (np.asarray(x) for x in run_worlds(params, world_list))
        live_agents = np.broadcast_to(live[..., None], seen.shape)
        received = heard.sum(-1) > 0  # [W, T, A, K]
        heard_one = heard[..., 1] > 0
        live_slots = np.broadcast_to(live[..., None, None], received.shape) & received
        counts = np.zeros((2, 2, 2))
        for x in (0, 1):
            for y in (0, 1):
                counts[0, x, y] = np.sum(live_agents & (seen == bool(x)) & ((symbol == 1) == bool(y)))
                counts[1, x, y] = np.sum(live_slots & (heard_one == bool(x)) & (add == bool(y)))
        pooled += counts
        per_seed.append(
            {
                "p_symbol1_given_fire_seen": rate(counts[0, 1]),
                "p_symbol1_given_no_fire": rate(counts[0, 0]),
                "p_add_given_heard1": rate(counts[1, 1]),
                "p_add_given_heard0": rate(counts[1, 0]),
            }
        )
    return {
        "p_symbol1_given_fire_seen": rate(pooled[0, 1]),
        "p_symbol1_given_no_fire": rate(pooled[0, 0]),
        "steps_fire_seen": int(pooled[0, 1].sum()),
        "steps_no_fire": int(pooled[0, 0].sum()),
        "p_add_given_heard1": rate(pooled[1, 1]),
        "p_add_given_heard0": rate(pooled[1, 0]),
        "heard1": int(pooled[1, 1].sum()),
        "heard0": int(pooled[1, 0].sum()),
        "per_seed": per_seed,
    }


def headroom(worlds: str, overrides: list[str]) -> dict[str, float]:
    """Returns (per-agent mean over `worlds`) of three controllers that read the state, on the demo's env
    without messages: `even` (the scripted controller: add to all 3 neighbours; with resource_step 1 the
    whole budget goes to the first), `to_fire_seen`
    (add to the neighbours that see fire, remove from the others; all neighbours if none does: what one
    honest bit per neighbour allows) and `to_best_p` (add only to the neighbour with the highest current
    performance p). What a channel could gain over the even split."""
    import jax
    import jax.numpy as jnp

    from baselines.common import make_env
    from baselines.config import load_config
    from hivex_jax.envs.wildfire_resource_management import dynamics, generator, rewards
    from hivex_jax.eval.rollout import evaluate

    config = load_config(CONFIG, ["message_vocab=null", *overrides])
    env, params = make_env(config)
    targets = jnp.asarray(generator.branch_targets())[:, 1:]  # [A, 3] the tower each branch supplies
    add, remove = dynamics.ADD, dynamics.REMOVE

    def act(neighbour_branches):
        a = neighbour_branches.shape[0]
        self_branch = jnp.full((a, 1), remove, jnp.int32)
        return {
            "continuous": jnp.zeros((a, 0)),
            "discrete": jnp.concatenate([self_branch, neighbour_branches], -1),
        }

    def even(_, key, obs, state):
        return act(jnp.full(targets.shape, add, jnp.int32))

    def to_fire_seen(_, key, obs, state):
        seen = env.inner_state(state).fire_found[targets]
        return act(jnp.where(seen.any(-1, keepdims=True), jnp.where(seen, add, remove), add))

    def to_best_p(_, key, obs, state):
        inner = env.inner_state(state)
        p = rewards.tower_performance(inner.previous_distance, inner.distance, params)[targets]
        return act(jnp.where(jax.nn.one_hot(jnp.argmax(p, -1), 3) > 0, add, remove))

    out = {}
    for name, policy in (("even", even), ("to_fire_seen", to_fire_seen), ("to_best_p", to_best_p)):
        totals = evaluate(env, params, policy, worlds, key=config.eval_seed)
        out[name] = float(np.asarray(totals["return"]).mean())
    return out


def table(out_dir: Path, worlds: str, usage: bool = True) -> dict:
    """The results table from the finished runs (missing conditions are left out)."""
    from hivex_jax.eval.stats import mean_ci95, t_quantile_975

    def welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Mean of x - y and the half-width of Welch's 95% CI."""
        vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
        se = np.sqrt(vx + vy)
        df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)) if se > 0 else 1
        return float(x.mean() - y.mean()), float(t_quantile_975(int(np.floor(df))) * se)

    files = {name: out_dir / f"demo_{name}" / "eval.json" for name in CONDITIONS}
    files["zero_shot_lossy"] = out_dir / "demo_messages" / "eval_zero_shot_lossy.json"
    returns = {name: per_seed_returns(path) for name, path in files.items() if path.is_file()}
    result: dict = {"worlds": worlds, "conditions": {}, "differences": {}}
    for name, by_policy in returns.items():
        result["conditions"][name] = {}
        for policy in ("greedy", "stochastic"):
            x = by_policy[policy]
            mean, ci = mean_ci95(x)
            result["conditions"][name][policy] = {
                "mean": float(mean),
                "ci95": float(ci),
                "per_seed": x.tolist(),
            }
        for policy in ("scripted", "random"):
            if policy in by_policy:
                result["conditions"][name][policy] = {"mean": float(by_policy[policy].mean())}
    if "no_messages" in returns:
        for name in ("messages", "lossy", "zero_shot_lossy"):
            if name in returns:
                result["differences"][f"{name} - no_messages"] = {
                    policy: dict(
                        zip(
                            ("mean", "ci95"),
                            welch(returns[name][policy], returns["no_messages"][policy]),
                            strict=True,
                        )
                    )
                    for policy in ("greedy", "stochastic")
                }
    if usage and (out_dir / "demo_messages" / "eval.json").is_file():
        result["message_usage"] = message_usage(out_dir / "demo_messages", worlds)
    return result


def markdown(result: dict) -> str:
    """The table (and the differences and message statistics) as Markdown."""
    lines = [
        "| condition | greedy return (mean ± 95% CI over seeds) | stochastic return | per-seed greedy |",
        "|---|---|---|---|",
    ]
    for name, body in result["conditions"].items():
        g, s = body["greedy"], body["stochastic"]
        seeds = ", ".join(f"{v:.1f}" for v in g["per_seed"])
        lines.append(
            f"| {LABELS[name]} | {g['mean']:.1f} ± {g['ci95']:.1f} | "
            f"{s['mean']:.1f} ± {s['ci95']:.1f} | {seeds} |"
        )
    first = next(iter(result["conditions"].values()), {})
    if "scripted" in first:
        lines.append(
            f"| scripted (adds to every neighbour) | {first['scripted']['mean']:.1f} | | |"
            if "random" not in first
            else f"| scripted (adds to every neighbour) / random | {first['scripted']['mean']:.1f} / "
            f"{first['random']['mean']:.1f} | | |"
        )
    if result["differences"]:
        lines += ["", "| difference (Welch 95% CI) | greedy | stochastic |", "|---|---|---|"]
        for name, body in result["differences"].items():
            g, s = body["greedy"], body["stochastic"]
            lines.append(
                f"| {name} | {g['mean']:+.1f} ± {g['ci95']:.1f} | {s['mean']:+.1f} ± {s['ci95']:.1f} |"
            )
    usage = result.get("message_usage")
    if usage:
        lines += [
            "",
            f"(b)'s greedy towers: P(symbol 1 | sees fire) = {usage['p_symbol1_given_fire_seen']:.3f} "
            f"({usage['steps_fire_seen']} tower-steps), P(symbol 1 | sees none) = "
            f"{usage['p_symbol1_given_no_fire']:.3f} ({usage['steps_no_fire']}); listeners add resources "
            f"to a neighbour with P = {usage['p_add_given_heard1']:.3f} after hearing 1 ({usage['heard1']}) "
            f"vs "
            f"{usage['p_add_given_heard0']:.3f} after hearing 0 ({usage['heard0']}).",
            "",
            "| seed | P(1 given fire seen) | P(1 given none) | P(add given heard 1) | P(add given heard 0) |",
            "|---|---|---|---|---|",
        ]
        for i, row in enumerate(usage["per_seed"]):
            values = " | ".join(f"{v:.3f}" for v in row.values())
            lines.append(f"| {i} | {values} |")
    return "\n".join(lines) + "\n"


def plot_usage(results: dict[str, Path], path: Path) -> None:
    """Per seed of each labelled demo (`{label: messages_demo.json}`): P(symbol 1 | the speaker sees fire)
    vs P(symbol 1 | it sees none), and P(listener adds | heard 1) vs P(adds | heard 0), as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), dpi=80)
    pairs = (
        (
            "p_symbol1_given_fire_seen",
            "p_symbol1_given_no_fire",
            "speaker: P(symbol 1)",
            "sees fire",
            "sees none",
        ),
        (
            "p_add_given_heard1",
            "p_add_given_heard0",
            "listener: P(add to that neighbour)",
            "heard 1",
            "heard 0",
        ),
    )
    for ax, (yes, no, title, yes_label, no_label) in zip(axes, pairs, strict=True):
        x = 0
        ticks, labels = [], []
        for label, json_path in results.items():
            for i, row in enumerate(json.loads(Path(json_path).read_text())["message_usage"]["per_seed"]):
                ax.bar(x - 0.2, row[yes], 0.4, color="tab:red", label=yes_label if x == 0 else None)
                ax.bar(x + 0.2, row[no], 0.4, color="tab:grey", label=no_label if x == 0 else None)
                ticks.append(x)
                labels.append(f"{label}\ns{i}")
                x += 1
            x += 0.5
        ax.set_xticks(ticks, labels, fontsize=6)
        ax.set_ylim(0, 1.3)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_returns(result: dict, path: Path) -> None:
    """Each condition's held-out return, greedy and stochastic, mean and 95% CI over seeds, beside the
    scripted and random controllers (the same on every condition's worlds): `hivex_jax.eval.plots`'s
    sweep summary, one row per condition."""
    from hivex_jax.eval.plots import sweep_summary

    conditions = result["conditions"]
    baselines = {k: v for k, v in next(iter(conditions.values())).items() if k in ("scripted", "random")}
    rows = [
        {
            "combination": LABELS[name],
            **{
                policy: {**body[policy], "num_seeds": len(body[policy]["per_seed"])}
                for policy in ("greedy", "stochastic")
            },
            **baselines,
        }
        for name, body in conditions.items()
    ]
    sweep_summary(path, rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", default="runs/messages_demo")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=None, help="total_env_steps per seed (default: the config's)")
    p.add_argument("--worlds", default="6000:6032")
    p.add_argument("--conditions", default="no_messages,messages,lossy")
    p.add_argument("--table", action="store_true", help="only tabulate finished runs")
    p.add_argument("--headroom", action="store_true", help="only the state-reading controllers' returns")
    p.add_argument(
        "--plot",
        nargs=2,
        metavar=("PNG", "LABEL=JSON,..."),
        help="only draw the per-seed message statistics of finished demos (their messages_demo.json)",
    )
    p.add_argument("overrides", nargs="*", help="extra key=value for every condition's config")
    args = p.parse_args(argv)
    if args.plot:
        png, specs = args.plot
        plot_usage(dict(spec.split("=", 1) for spec in specs.split(",")), Path(png))
        return 0
    if args.headroom:
        print(json.dumps(headroom(args.worlds, args.overrides)))
        return 0
    out_dir = Path(args.out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if not args.table:
        for name in args.conditions.split(","):
            t0 = time.time()
            run = run_condition(name, out_dir, args.seeds, args.steps, args.worlds, args.overrides)
            print(f"{name}: {time.time() - t0:.0f} s", flush=True)
            if name == "messages":
                zero_shot_lossy(run, args.worlds)
    result = table(out_dir, args.worlds)
    (out_dir / "messages_demo.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (out_dir / "messages_demo.md").write_text(text)
    if result["conditions"]:
        plot_returns(result, out_dir / "messages_demo.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
