"""Communication demo on Wildfire Resource Management: does a message channel help?

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

Each condition is a cell of a `baselines.studies.study` (`scripts/messages_demo.py` is the command line):
resumable, a condition whose run folder has eval.json is not trained again, one stopped mid-training is
continued with `hivex train --resume`. Writes OUT_DIR/messages_demo.json, messages_demo.md and
messages_demo.png (each condition's returns, mean and 95% CI over seeds; `baselines.studies.messages_report`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from baselines.config import load_config, make_env
from baselines.run.evaluation import load_run
from baselines.studies.study import ROOT, CellDone, CellError, StudyCell, hivex, run_cells, train_args

CONFIG = ROOT / "configs" / "ippo_wildfire_resource_management_messages.yaml"
#: condition -> overrides of the shipped config
CONDITIONS = {
    "no_messages": ["message_vocab=null"],
    "messages": [],
    "lossy": ["message_loss=1"],
}


def condition_cell(
    name: str, out_dir: Path, seeds: int, steps: int | None, worlds: str, extra: list[str]
) -> StudyCell:
    """Condition `name` as a study cell: `hivex train` of the shipped config with its overrides into
    OUT_DIR/demo_<name>; (b) `messages` is then evaluated with every message dropped (d)."""
    run = out_dir / f"demo_{name}"
    budget = [f"total_env_steps={steps}"] if steps else []
    settings = [f"num_seeds={seeds}", f"test_worlds={worlds}", *budget, *CONDITIONS[name], *extra]
    zero_shot = name == "messages"
    return StudyCell(
        key=name,
        run_dir=run,
        train=lambda resume: hivex(train_args(run, CONFIG, settings, resume, progress=True)),
        evaluate=(lambda: {"eval": str(zero_shot_lossy(run, worlds))}) if zero_shot else None,
        evaluated=lambda: (run / "eval_zero_shot_lossy.json").is_file(),
    )


def run_demo(
    names: list[str], out_dir: Path, seeds: int, steps: int | None, worlds: str, extra: list[str]
) -> None:
    """Train (or continue, or keep) every named condition, one after another, printing one line each."""

    def report(i: int, cell: StudyCell, done: CellDone | CellError) -> None:
        if done.train == "kept":
            print(f"{cell.key}: done already ({cell.run_dir})", flush=True)
        else:
            print(f"{cell.key}: {done.train_s + done.eval_s:.0f} s", flush=True)

    cells = [condition_cell(name, out_dir, seeds, steps, worlds, extra) for name in names]
    run_cells(cells, report=report)


def zero_shot_lossy(run: Path, worlds: str) -> Path:
    """(b)'s policy on the same worlds with every message dropped; returns the JSON it wrote."""
    out = run / "eval_zero_shot_lossy.json"
    if not out.is_file():
        hivex(
            ["evaluate", str(run), "--worlds", worlds, "--out", str(out), "--no-baselines", "message_loss=1"]
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
