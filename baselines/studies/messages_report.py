"""The communication demo's report (`baselines.studies.messages_demo`): its table as Markdown and its
figures."""

from __future__ import annotations

import json
from pathlib import Path

LABELS = {
    "no_messages": "(a) no messages",
    "messages": "(b) messages (vocab 2)",
    "lossy": "(c) messages, loss 1 (train + eval)",
    "zero_shot_lossy": "(d) (b)'s policy, loss 1 at test",
}


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
