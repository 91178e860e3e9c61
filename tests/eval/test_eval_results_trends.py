"""Level trends on the HIVEX results page (`hivex_jax.eval.results_trends`): the rank correlation's
bootstrap 95% CI over our training seeds, and the per-env trend figure the page links (made from
hand-made results, checked on the figure's panels and texts, not its pixels)."""

import re

import pytest
from fake_results import fake_hivex_folder, fake_level_results

from hivex_jax.eval import hivex_records, results_page, results_trends
from hivex_jax.eval.hivex_cells import Cell

WFC, WRM, AWS = "WindFarmControl-v0", "WildfireResourceManagement-v0", "AerialWildfireSuppression-v0"


def test_bootstrap_ci_by_hand():
    """HIVEX rises over levels 1-3; ours: level 1's seeds 0 and 10, level 2's 5 and 5, level 3's 20 and 20.
    A resample's level-1 mean is 0 (p 1/4: ranks as HIVEX's, rho 1), 5 (p 1/2: tied with level 2, rho
    1.5 / sqrt(3) = 0.866, the point estimate) or 10 (p 1/4: levels 1 and 2 swapped, rho 0.5), so the 2.5
    and 97.5 percentiles are 0.5 and 1."""
    published = {1: 1.0, 2: 2.0, 3: 3.0}
    seeds = {1: [0.0, 10.0], 2: [5.0, 5.0], 3: [20.0, 20.0]}
    point = results_trends.spearman([1.0, 2.0, 3.0], [5.0, 5.0, 20.0])
    assert point == pytest.approx(0.5 * 3**0.5)
    low, high = results_trends.spearman_ci(published, seeds)
    assert (low, high) == (pytest.approx(0.5), pytest.approx(1.0))
    assert low <= point <= high


def test_bootstrap_ci_is_deterministic_and_brackets_the_point():
    published = {0: 10.0, 1: 30.0, 2: 20.0, 3: 50.0, 4: 40.0}
    seeds = {
        0: [1.0, 3.0, 2.5],
        1: [2.0, 4.0, 3.5],
        2: [3.0, 5.0, 2.0],
        3: [6.0, 4.0, 5.0],
        4: [4.5, 7.0, 6.5],
    }
    means = [sum(v) / len(v) for v in seeds.values()]
    point = results_trends.spearman(list(published.values()), means)
    ci = results_trends.spearman_ci(published, seeds)
    assert ci == results_trends.spearman_ci(published, seeds)  # a fixed RNG seed
    assert ci[0] < point < ci[1]
    # too few levels, or a constant series of ours: no CI
    assert results_trends.spearman_ci({0: 1.0, 1: 2.0}, {0: [1.0], 1: [2.0]}) is None
    assert results_trends.spearman_ci(published, {k: [7.0, 7.0] for k in published}) is None


def test_bootstrap_ci_collapses_when_seeds_agree():
    published = {0: 10.0, 1: 30.0, 2: 20.0, 3: 50.0}
    ours = {0: 0.1, 1: 0.7, 2: 0.3, 3: 0.2}
    point = results_trends.spearman(list(published.values()), list(ours.values()))
    assert results_trends.spearman_ci(published, {k: [v] * 3 for k, v in ours.items()}) == (point, point)
    # seeds that spread but never reorder the levels give a point too
    apart = {k: [v - 0.01, v + 0.01] for k, v in ours.items()}
    assert results_trends.spearman_ci(published, apart) == (point, point)


def test_trend_sentence_gains_the_ci():
    published = {1: 10.0, 2: 20.0, 3: 30.0, 4: 15.0}
    ours = {1: 1.0, 2: 2.0, 3: 3.0, 4: 1.5}
    plain = results_trends.level_trend(published, ours)
    with_ci = results_trends.level_trend(published, ours, seeds={k: [v, v] for k, v in ours.items()})
    assert "CI" not in plain
    assert "rank correlation over the 4 levels both have 1.00 (95% CI 1.00 to 1.00): reproduced" in with_ci
    assert with_ci.replace(" (95% CI 1.00 to 1.00)", "") == plain  # the verdict is the same
    # a level without seeds of ours: no CI (it would be over other levels than the point estimate)
    assert "CI" not in results_trends.level_trend(published, ours, seeds={1: [1.0], 2: [2.0], 3: [3.0]})
    text = results_trends.level_trend(
        published, ours, seeds={1: [0.5, 1.5], 2: [1.0, 3.0], 3: [2.0, 4.0], 4: [1.0, 2.0]}
    )
    low, high = (float(v) for v in re.search(r"\(95% CI (\S+) to (\S+)\)", text).groups())
    assert low < 1.0 and high == 1.0


def _titles(fig):
    return [ax.get_title() for ax in fig.axes]


def test_trend_figure_panels():
    results = fake_level_results(
        WFC,
        {**{(0, p): [4500.0 + p, 4510.0 + p, 4520.0 + p] for p in range(4)}, (1, 0): [1.0, 2.0]},
        greedy={(0, 0): [4600.0, 4620.0], (0, 2): [4630.0, 4640.0]},
    )
    fig = results_trends.trend_figure(WFC, results)
    # one panel (task 1 has one cell): our axis and HIVEX's on its right
    assert len(fig.axes) == 2 and _titles(fig) == ["task 0: Generate Energy (main)", ""]
    ours, hivex = fig.axes
    assert ours.get_xlabel() == "pattern" and [t.get_text() for t in ours.get_xticklabels()] == [
        str(p) for p in range(9)
    ]
    assert hivex.get_ylabel() == "HIVEX test mean (its own scale)"
    assert hivex.lines[0].get_ydata()[0] == 4605.9  # HIVEX's pattern-0 test mean
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == [
        "ours, HIVEX protocol, IPPO stochastic (mean, Student-t 95% CI over 3 training seeds)",
        "ours, held-out worlds, IPPO greedy (mean, Student-t 95% CI over 2 training seeds)",
    ]
    assert "HIVEX published test mean per pattern (right axis)" in legend
    assert fig.get_suptitle().startswith("Wind Farm Control: our return per pattern beside HIVEX's")
    assert "not comparable" in fig.get_suptitle()
    results_trends.plots.pyplot().close(fig)

    # nine tasks with 2 cells each on a 3 x 3 grid, one task with one cell left out
    many = fake_level_results(
        AWS, {(t, lv): [float(t + lv), float(t + lv + 1)] for t in range(8) for lv in (1, 5)}
    )
    many[Cell(AWS, 8, 1)] = fake_level_results(AWS, {(8, 1): [1.0]})[Cell(AWS, 8, 1)]
    fig = results_trends.trend_figure(AWS, many)
    assert len(fig.axes) == 16 and _titles(fig)[:8] == [
        "task 0: Main",
        "task 1: Max Extinguished Trees",
        "task 2: Max Prepared Trees",
        "task 3: Min Time Burning",
        "task 4: Protect Village",
        "task 5: Pick Up Water",
        "task 6: Drop Water",
        "task 7: Find Fire",
    ]
    assert legend[1] not in [t.get_text() for t in fig.legends[0].get_texts()]  # no greedy series
    results_trends.plots.pyplot().close(fig)


def test_no_figure_below_two_cells(tmp_path):
    one = fake_level_results(WRM, {(0, 1): [1.0, 2.0], (1, 2): [3.0, 4.0]})
    assert results_trends.trend_panels(WRM, one) == {}
    assert results_trends.trend_figure(WRM, one) is None
    assert results_trends.trend_figure_lines(WRM, one) == []
    # Ocean Plastic Collection has no levels: never a figure
    assert results_trends.trend_panels("OceanPlasticCollection-v0", {}) == {}
    stale = tmp_path / "hivex_trend_wrm.png"
    stale.write_bytes(b"old")
    assert results_trends.write_trend_figures(one, tmp_path) == []
    assert not stale.exists()  # the page links no figure for WRM: none is left beside it


def test_page_links_the_figures_it_writes(tmp_path):
    """`write_page` from records (fake run folders recorded): WFC task 0 has patterns 0 and 1, so its
    section links `images/hivex_trend_wfc.png` and the figure is there; every other env has one cell per
    task: no figure, no link. Two runs write the same bytes (page and figure)."""
    runs = fake_hivex_folder(tmp_path / "runs")
    records = tmp_path / "records"
    hivex_records.record_folders(runs, records)
    out = tmp_path / "docs" / "hivex_results.md"
    results_page.write_page(records, out, "cmd")
    page, figure = out.read_bytes(), (tmp_path / "docs" / "images" / "hivex_trend_wfc.png").read_bytes()
    assert sorted(p.name for p in (tmp_path / "docs" / "images").iterdir()) == ["hivex_trend_wfc.png"]
    text = page.decode()
    wfc = text.split("## Wind Farm Control")[1].split("\n## ")[0]
    assert "![Wind Farm Control: our return per pattern beside HIVEX's published test mean]" in wfc
    assert "(images/hivex_trend_wfc.png)" in wfc
    assert "*Pattern trends, task 0 (each task with at least 2 of our cells)" in wfc
    assert "our dynamics are designed where HIVEX is silent" in wfc
    assert text.count("](images/") == 1
    results_page.write_page(records, out, "cmd")
    assert out.read_bytes() == page
    assert (tmp_path / "docs" / "images" / "hivex_trend_wfc.png").read_bytes() == figure


def test_page_with_a_ci_is_deterministic(tmp_path):
    """A trend sentence with a bootstrap CI renders the same twice (a fixed RNG seed)."""
    results = fake_level_results(
        WRM, {(0, lv): [100.0 + 3 * lv, 104.0 - lv, 98.0 + lv * lv / 4] for lv in range(1, 11)}
    )
    first = results_page.render_page(results, "cmd")
    assert first == results_page.render_page(results, "cmd")
    trend = next(line for line in first.splitlines() if line.startswith("**Level trend") and "92.7" in line)
    assert re.search(
        r"rank correlation over the 10 levels both have -?\d\.\d\d \(95% CI -?\d\.\d\d to ", trend
    )
