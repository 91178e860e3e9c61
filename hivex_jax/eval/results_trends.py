"""Level trends on the HIVEX results page (docs/hivex_results.md): the rank correlation of our level series
with HIVEX's and its bootstrap 95% CI over our training seeds, the trend sentence (`level_trend`) over the
cells of one training budget (`one_budget`), and one figure per env with levels (or
patterns): our return per level, mean and Student-t 95% CI over training seeds, beside HIVEX's published
test mean per level on a second y-axis (`docs/images/hivex_trend_<short>.png`, written by
`scripts/hivex_results.py page`).

HIVEX's cells are single values per level (the mean over its 3 test runs of one trained policy); ours have
one value per training seed: under the HIVEX protocol run i is training seed i (`eval_hivex.json`'s
stochastic `runs`), held out the summary's mean and CI over seeds (`eval.json`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from hivex_jax.eval import plots
from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell
from hivex_jax.eval.hivex_published import load_published, required_table
from hivex_jax.eval.results_format import fmt_value, ranges
from hivex_jax.eval.stats import ONE_SEED, mean_ci95

#: bootstrap resamples of the rank correlation's CI
BOOTSTRAP_RESAMPLES = 2000
#: the bootstrap's numpy RNG seed (fixed: the page is the same on every run)
BOOTSTRAP_SEED = 34
#: the fewest of our cells (levels) a task needs for a panel in its env's trend figure
MIN_CELLS = 2
#: relative spread (max - min over |mean|) below which a published level series counts as flat
FLAT_SPREAD = 0.02


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties; NaN when either series is constant)."""

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else float("nan")


def spearman_ci(
    published: dict[int, float],
    seeds: dict[int, list[float]],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """The 95% CI (2.5 and 97.5 percentiles) of Spearman's rank correlation between HIVEX's level series
    (`published`, one value per level) and ours over the levels both have, bootstrapped over our training
    seeds: per resample each level's per-seed values (`seeds[level]`) are resampled with replacement (each
    level on its own: its seeds are runs of their own) and averaged. Deterministic (a fixed numpy RNG);
    None with fewer than 3 common levels or when no resample has a defined correlation (a constant
    series)."""
    levels = [k for k in sorted(published) if seeds.get(k)]
    if len(levels) < 3:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty((resamples, len(levels)))
    for j, level in enumerate(levels):
        values = np.asarray(seeds[level], np.float64)
        means[:, j] = values[rng.integers(0, len(values), (resamples, len(values)))].mean(axis=1)
    theirs = [published[k] for k in levels]
    rhos = np.array([spearman(theirs, row.tolist()) for row in means])
    rhos = rhos[~np.isnan(rhos)]
    if rhos.size == 0:
        return None
    low, high = np.percentile(rhos, [2.5, 97.5])
    return float(low), float(high)


def protocol_seeds(result: dict[str, Any] | None) -> list[float] | None:
    """Our per-training-seed values of a cell under the HIVEX protocol (IPPO stochastic): each run's mean
    (run i = training seed i), or the cell value alone when the runs are not there; None if not run."""
    block = ((result or {}).get("hivex") or {}).get("policies", {}).get("stochastic")
    if block is None:
        return None
    runs = [float(r["mean"]) for r in block.get("runs", []) if r.get("mean") is not None]
    return runs or [float(block["cell"])]


def _greedy(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The held-out greedy summary of a cell (mean, ci95 over seeds, num_seeds, seed range), or None."""
    block = ((result or {}).get("held_out") or {}).get("policies", {}).get("greedy")
    return (block or {}).get("summary") or None


def trend_panels(env_id: str, results: dict[Cell, dict[str, Any]]) -> dict[int, dict[int, dict[str, Any]]]:
    """The panels of an env's trend figure: `{task: {level: result}}` for each task with at least
    `MIN_CELLS` of our cells (a HIVEX-protocol or held-out greedy value), in task order; {} for an env
    without levels."""
    if not HIVEX_ENVS[env_id].level_name:
        return {}
    tasks: dict[int, dict[int, dict[str, Any]]] = {}
    for cell, result in sorted(results.items()):
        if cell.env_id == env_id and cell.level is not None:
            if protocol_seeds(result) is not None or _greedy(result) is not None:
                tasks.setdefault(cell.task, {})[cell.level] = result
    return {task: levels for task, levels in sorted(tasks.items()) if len(levels) >= MIN_CELLS}


def figure_name(env_id: str) -> str:
    """`hivex_trend_<short>.png`."""
    return f"hivex_trend_{HIVEX_ENVS[env_id].short}.png"


def _seed_count(counts: set[int]) -> str:
    """{3} -> "3 training seeds", {2, 3} -> "2–3 training seeds"; where a cell has one seed, that it has no
    interval ({1, 3} -> "1–3 training seeds; one seed: no interval")."""
    low, high = min(counts), max(counts)
    text = f"{low}{'' if low == high else f'–{high}'} training seed{'s' if high > 1 else ''}"
    return text + (f"; {ONE_SEED}" if low == 1 else "")


def trend_figure(env_id: str, results: dict[Cell, dict[str, Any]]) -> Any:
    """The env's trend figure (None when no task has `MIN_CELLS` of our cells): one panel per such task,
    x = level (every published one), ours under the HIVEX protocol (IPPO stochastic) and held-out (IPPO
    greedy) as mean and Student-t 95% CI over training seeds (error bars, clipped at the axis and marked
    where they run past our seeds' range), HIVEX's published test mean per level as a line on the right
    axis (a scale of its own: the absolute returns are not comparable)."""
    panels = trend_panels(env_id, results)
    if not panels:
        return None
    plt = plots.pyplot()
    info = HIVEX_ENVS[env_id]
    word = info.level_name
    test = required_table(env_id, "test_mean")["rows"]
    task_names = load_published()["envs"][env_id]["task_names"]
    cols = 1 if len(panels) == 1 else 2 if len(panels) <= 4 else 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(10.0 if cols == 1 else 6.0 * cols, 3.6 * rows + 1.4),
        squeeze=False,
        layout="constrained",
    )
    protocol_counts = {len(s) for p in panels.values() for r in p.values() if (s := protocol_seeds(r))}
    greedy_counts = {
        int(g.get("num_seeds", 1)) for p in panels.values() for r in p.values() if (g := _greedy(r))
    }
    protocol_label = (
        f"ours, HIVEX protocol, IPPO stochastic (mean, Student-t 95% CI over {_seed_count(protocol_counts)})"
        if protocol_counts
        else ""
    )
    greedy_label = (
        f"ours, held-out worlds, IPPO greedy (mean, Student-t 95% CI over {_seed_count(greedy_counts)})"
        if greedy_counts
        else ""
    )
    hivex_label = f"HIVEX published test mean per {word} (right axis)"
    legend: dict[str, Any] = {}
    for ax, (task, levels) in zip(axes.flat, panels.items(), strict=False):
        published = {int(k): float(v) for k, v in test[str(task)].items()}
        mine = sorted(levels)
        protocol = {lv: s for lv in mine if (s := protocol_seeds(levels[lv])) is not None}
        greedy = {lv: g for lv in mine if (g := _greedy(levels[lv])) is not None}
        both = bool(protocol) and bool(greedy)
        limits = plots.data_limits(
            *protocol.values(),
            [g.get(k, g["mean"]) for g in greedy.values() for k in ("seed_min", "seed_max")],
        )
        clipped = False
        if protocol:
            x = np.asarray(list(protocol), np.float64) - (0.1 if both else 0.0)
            stats = [mean_ci95(v) for v in protocol.values()]
            mean, half = (np.array([float(s[i]) for s in stats]) for i in (0, 1))
            clipped |= plots._intervals(
                ax, x, mean, half, limits, "C0", protocol_label, fmt="o", ms=5, capsize=3
            )
        if greedy:
            x = np.asarray(list(greedy), np.float64) + (0.1 if both else 0.0)
            mean = np.array([g["mean"] for g in greedy.values()], np.float64)
            half = np.array(
                [g.get("ci95", 0.0) if g.get("num_seeds", 1) > 1 else 0.0 for g in greedy.values()]
            )
            clipped |= plots._intervals(
                ax, x, mean, half, limits, "C1", greedy_label, fmt="s", ms=4, capsize=3
            )
        handles, labels = plots._limit_axis(ax, limits, clipped)
        twin = ax.twinx()
        xs = sorted(published)
        twin.plot(xs, [published[k] for k in xs], "--", color="0.35", marker="x", label=hivex_label)
        twin.set_ylabel("HIVEX test mean (its own scale)", fontsize=8)
        twin_handles, twin_labels = twin.get_legend_handles_labels()
        for handle, label in zip([*handles, *twin_handles], [*labels, *twin_labels], strict=True):
            legend.setdefault(label, handle)
        ax.set_xticks(xs)
        ax.set_xlabel(word)
        ax.set_ylabel("our return (per agent, episode)", fontsize=8)
        ax.set_title(f"task {task}: {task_names[str(task)]}", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        fig.delaxes(ax)
    fig.legend(list(legend.values()), list(legend), loc="outside lower center", ncol=2, fontsize=8)
    fig.suptitle(
        f"{info.name}: our return per {word} beside HIVEX's (tasks with at least {MIN_CELLS} of our cells)\n"
        "left axis ours, right axis HIVEX's: absolute returns are not comparable, compare the shapes"
    )
    return fig


def write_trend_figures(results: dict[Cell, dict[str, Any]], images_dir: str | Path) -> list[Path]:
    """Write each env's trend figure (`trend_figure`) to `images_dir/hivex_trend_<short>.png`; an env's
    stale figure is removed when it has none now (the page links exactly the figures written)."""
    written = []
    for env_id in HIVEX_ENVS:
        if not HIVEX_ENVS[env_id].level_name:
            continue
        path = Path(images_dir) / figure_name(env_id)
        fig = trend_figure(env_id, results)
        if fig is None:
            path.unlink(missing_ok=True)
        else:
            written.append(plots.save_figure(fig, path))
    return written


# ---------------------------------------------------------------------------- the page's trend text
def _spread(values: list[float]) -> float:
    """(max - min) / |mean|."""
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / abs(mean) if mean else float("inf")


def _extremes(series: dict[int, float], word: str) -> str:
    """ "pattern 2 lowest (4588.4), 0 highest (4605.9), spread 0.4% of the mean"."""
    lo = min(series, key=series.__getitem__)
    hi = max(series, key=series.__getitem__)
    return (
        f"{word} {lo} lowest ({fmt_value(series[lo])}), {hi} highest ({fmt_value(series[hi])}), "
        f"spread {_spread(list(series.values())):.1%} of the mean"
    )


def _r2(value: float) -> str:
    """A correlation to 2 decimals, without a sign on zero ("-0.00" -> "0.00")."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def level_trend(
    published: dict[int, float],
    ours: dict[int, float],
    word: str = "level",
    seeds: dict[int, list[float]] | None = None,
) -> str:
    """The level-trend sentence: HIVEX's extremes over levels, ours under the same protocol, and whether
    the trend is reproduced (flat series: both flat; otherwise the same lowest and highest level, or
    "partly" with a rank correlation >= 0.5 over the levels both have). With `seeds` (our per-training-seed
    values per level) the rank correlation gets its bootstrap 95% CI over our seeds (`spearman_ci`)."""
    hivex_flat = _spread(list(published.values())) < FLAT_SPREAD
    text = "HIVEX: " + _extremes(published, word) + (" (flat)" if hivex_flat else "")
    common = [k for k in sorted(published) if k in ours]
    if len(common) < 3:
        return text + f"; ours: {len(common)} {word}(s) run, too few to check the trend."
    mine = {k: ours[k] for k in common}
    theirs = {k: published[k] for k in common}
    ours_flat = _spread(list(mine.values())) < FLAT_SPREAD
    rho = spearman([theirs[k] for k in common], [mine[k] for k in common])
    text += "; ours under the same protocol: " + _extremes(mine, word) + (" (flat)" if ours_flat else "")
    text += f"; rank correlation over the {len(common)} {word}s both have {_r2(rho)}"
    complete = seeds is not None and all(seeds.get(k) for k in common) and not math.isnan(rho)
    ci = spearman_ci(theirs, {k: seeds[k] for k in common}) if complete and seeds is not None else None
    if ci is not None:
        text += f" (95% CI {_r2(ci[0])} to {_r2(ci[1])})"
    same_ends = min(theirs, key=theirs.__getitem__) == min(mine, key=mine.__getitem__) and max(
        theirs, key=theirs.__getitem__
    ) == max(mine, key=mine.__getitem__)
    if hivex_flat:
        verdict = "reproduced (flat in both)" if ours_flat else "not reproduced (HIVEX flat, ours not)"
    elif ours_flat:
        verdict = "not reproduced (ours flat, HIVEX not)"
    elif same_ends:
        verdict = "reproduced (same lowest and highest)"
    elif rho >= 0.5:
        verdict = "partly reproduced (similar order, different extremes)"
    else:
        verdict = "not reproduced"
    return text + f": {verdict}."


def _budget(result: dict[str, Any]) -> int | None:
    """A cell's training budget (held-out `env_steps_per_seed`), None when it has no held-out result."""
    return (result.get("held_out") or {}).get("env_steps_per_seed")


def one_budget(results: dict[Cell, dict[str, Any]]) -> tuple[dict[Cell, dict[str, Any]], list[str]]:
    """For trends: per (env, algo, task), only the cells trained at that task's most common budget (ties:
    the larger), so a level series does not mix budgets; and a sentence per series that lost cells."""
    groups: dict[tuple[str, str, int], list[Cell]] = {}
    for cell in results:
        groups.setdefault((cell.env_id, cell.algo, cell.task), []).append(cell)
    kept: dict[Cell, dict[str, Any]] = {}
    notes = []
    for (env_id, _algo, task), cells in groups.items():
        budgets = [b for c in cells if (b := _budget(results[c])) is not None]
        if not budgets:
            kept.update({c: results[c] for c in cells})
            continue
        common = max(set(budgets), key=lambda b: (budgets.count(b), b))
        left = sorted(c for c in cells if _budget(results[c]) not in (None, common))
        kept.update({c: results[c] for c in cells if c not in left})
        if left:
            word = HIVEX_ENVS[env_id].level_name + ("s" if len(left) > 1 else "")
            levels = ranges(sorted(c.level for c in left if c.level is not None))
            notes.append(
                f"task {task}: {word} {levels} left out (trained at another budget than the "
                f"{common:,} env steps per seed of the others)"
            )
    return kept, notes


def trend_figure_lines(env_id: str, results: dict[Cell, dict[str, Any]]) -> list[str]:
    """The link to an env's trend figure (`images/hivex_trend_<short>.png`, beside the page, written by
    `write_page`) and its caption; [] when no task has `MIN_CELLS` of our cells (no figure)."""
    panels = trend_panels(env_id, results)
    if not panels:
        return []
    info = HIVEX_ENVS[env_id]
    word = info.level_name
    tasks = ", ".join(str(t) for t in panels)
    return [
        f"![{info.name}: our return per {word} beside HIVEX's published test mean]"
        f"(images/{figure_name(env_id)})",
        "",
        f"*{word.capitalize()} trends, task{'s' if len(panels) > 1 else ''} {tasks} (each task with at "
        f"least {MIN_CELLS} of our cells): ours (left axis) under the HIVEX protocol (IPPO stochastic) and "
        f"held-out (IPPO greedy), mean and Student-t 95% CI over training seeds; HIVEX's published test "
        f"mean per {word} (right axis, one trained policy). Compare the shapes, not the heights: the "
        "absolute returns are not comparable, since our dynamics are designed where HIVEX is silent. The "
        f"rank correlation's 95% CI in the trend sentence resamples our seeds per {word} "
        f"({BOOTSTRAP_RESAMPLES:,} bootstrap resamples).*",
        "",
    ]
