"""The memorisation probe's statistics and report: per-seed means over worlds with a Student-t 95% CI over
seeds, train minus held-out paired by seed, the probe table (probe.md) and its figure (probe.png).
The probe itself is `baselines.studies.memorisation`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

STATISTIC = (
    "mean and Student-t 95% CI over training seeds of per-seed values (each seed's mean over worlds; "
    "normalised score = (that mean - the random mean) / (the scripted mean - the random mean) on the same "
    "worlds; fraction of scripted = that mean / the scripted mean, only where it is positive; gap = train - "
    "held-out per seed)"
)


def seed_stats(per_seed: Any) -> dict[str, Any]:
    """Mean and Student-t 95% CI over seeds of per-seed values `[S]`."""
    import numpy as np

    from hivex_jax.eval.stats import mean_ci95

    values = np.asarray(per_seed, np.float64)
    mean, half = mean_ci95(values)
    return {"mean": float(mean), "ci95": float(half), "per_seed": values.tolist()}


def side(per_seed_world: Any, scripted: list[float], random: list[float]) -> dict[str, Any]:
    """One side (train or held-out) of a pool: greedy returns `[S, W]` and the baselines' `[W]` on the
    same worlds -> per-seed means, their normalised score and fraction of scripted (`hivex_jax.eval.score`,
    of each seed's mean by the baselines' means; None where scripted does not beat random, or for the
    fraction where the scripted mean is not positive)."""
    import numpy as np

    from hivex_jax.eval import score

    x = np.asarray(per_seed_world, np.float64)
    scripted_mean = float(np.mean(scripted)) if scripted else None
    random_mean = float(np.mean(random))
    per_seed = x.mean(axis=1)
    normalised = fraction = None
    if scripted_mean is not None:
        normalised = score.over_seeds(score.normalised_score(per_seed, scripted_mean, random_mean))
        fraction = score.over_seeds(score.fraction_of_scripted(per_seed, scripted_mean))
    return {
        "num_worlds": int(x.shape[1]),
        "return": seed_stats(per_seed),
        "return_per_seed_world": x.tolist(),
        "scripted": scripted_mean,
        "random": random_mean,
        "normalised_score": normalised,
        "fraction_of_scripted": fraction,
    }


def gap(train: dict[str, Any], heldout: dict[str, Any]) -> dict[str, Any]:
    """Train minus held-out, paired by seed: return and (when both sides have them) normalised score and
    fraction of scripted."""
    import numpy as np

    out = {
        "return": seed_stats(
            np.subtract(train["return"]["per_seed"], heldout["return"]["per_seed"]),
        )
    }
    for key in ("normalised_score", "fraction_of_scripted"):
        if train.get(key) and heldout.get(key):  # probe.json cells from before the normalised score: none
            out[key] = seed_stats(np.subtract(train[key]["per_seed"], heldout[key]["per_seed"]))
    return out


def _ci(stats: dict[str, Any] | None, digits: int) -> str:
    """`mean ± ci` or `-`."""
    return "-" if not stats else f"{stats['mean']:.{digits}f} ± {stats['ci95']:.{digits}f}"


def markdown(record: dict[str, Any]) -> str:
    """The probe table: one row per pool size."""
    cells = sorted(record["cells"].values(), key=lambda c: c["pool_size"])
    lines = [
        f"{record['env_id']}: memorisation probe ({record['algo']}, {record['num_seeds']} seeds, "
        f"{record['total_env_steps']:,} env steps per seed; held-out worlds {record['heldout_worlds']})",
        "",
        "| train pool | train worlds scored | return: train | return: held-out | gap | "
        "normalised score: train | held-out | gap | fraction of scripted: train | held-out | gap |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        scores = [
            _ci(c[side_name].get(key), 3)
            for key in ("normalised_score", "fraction_of_scripted")
            for side_name in ("train", "heldout", "gap")
        ]
        lines.append(
            f"| {c['pool_size']:,} | {c['train_eval_worlds']} | {_ci(c['train']['return'], 1)} | "
            f"{_ci(c['heldout']['return'], 1)} | {_ci(c['gap']['return'], 1)} | " + " | ".join(scores) + " |"
        )
    if cells:
        h = cells[0]["heldout"]
        scripted = "none" if h["scripted"] is None else f"{h['scripted']:.1f}"
        lines += [
            "",
            f"Held-out worlds: scripted {scripted}, random {h['random']:.1f}. ± : {record['statistic']}.",
        ]
    return "\n".join(lines) + "\n"


def plot(path: Path, record: dict[str, Any]) -> Path:
    """Return and normalised score (else fraction of scripted, where every cell has one) vs pool size
    (log x): train and held-out, 95% CI bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cells = sorted(record["cells"].values(), key=lambda c: c["pool_size"])
    pools = np.array([c["pool_size"] for c in cells], float)
    panels = [("return", "greedy return (mean over agents and worlds)")]
    for key, label in (
        ("normalised_score", "normalised score (0 random, 1 scripted)"),
        ("fraction_of_scripted", "fraction of the scripted return"),
    ):
        if cells and all(c[side_name].get(key) for c in cells for side_name in ("train", "heldout")):
            panels.append((key, label))
            break
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for name, color in (("train", "tab:blue"), ("heldout", "tab:orange")):
            mean = np.array([c[name][key]["mean"] for c in cells])
            half = np.array([c[name][key]["ci95"] for c in cells])
            words = "training worlds" if name == "train" else f"held-out worlds {record['heldout_worlds']}"
            ax.plot(pools, mean, "o-", color=color, label=words)
            ax.fill_between(pools, mean - half, mean + half, color=color, alpha=0.25)
        if key == "return" and cells:
            h = cells[0]["heldout"]
            if h["scripted"] is not None:
                ax.axhline(h["scripted"], color="k", ls="--", lw=1, label="scripted (held-out)")
            ax.axhline(h["random"], color="grey", ls=":", lw=1, label="random (held-out)")
        if key != "return":  # 1 = scripted on both scales
            ax.axhline(1.0, color="k", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("training worlds (pool size)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"{record['env_id']} memorisation probe: {record['num_seeds']} seeds, mean and 95% CI (t) over seeds",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
