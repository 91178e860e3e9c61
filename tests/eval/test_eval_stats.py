"""Seed-sweep statistics against hand-computed values."""

import numpy as np
import pytest

from hivex_jax.eval.stats import iqm, mean_ci95, summarize, t_quantile_975

pytestmark = pytest.mark.timeout(120)


def test_mean_ci95_student_t():
    mean, half = mean_ci95([1.0, 2.0, 3.0])
    assert float(mean) == 2.0
    assert float(half) == pytest.approx(4.303 * 1.0 / np.sqrt(3))  # std 1, t_{0.975, 2} = 4.303


def test_mean_ci95_along_an_axis_with_nans_and_single_values():
    x = np.array([[1.0, 5.0, np.nan], [3.0, np.nan, np.nan]])
    mean, half = mean_ci95(x, axis=0)
    np.testing.assert_allclose(mean[:2], [2.0, 5.0])
    assert half[0] == pytest.approx(12.706 * np.sqrt(2) / np.sqrt(2))
    assert half[1] == 0.0  # one value: no interval
    assert np.isnan(mean[2])


def test_t_quantiles():
    assert t_quantile_975(1) == 12.706 and t_quantile_975(30) == 2.042 and t_quantile_975(500) == 1.96


def test_iqm_drops_the_outer_quartiles():
    assert iqm(np.arange(1, 9)) == 4.5  # mean of 3, 4, 5, 6
    assert iqm([1.0, 1.0, 1.0, 1000.0]) == 1.0


def test_summarize_seed_by_world():
    s = summarize([[1.0, 3.0], [3.0, 5.0], [5.0, 7.0]])  # seed means 2, 4, 6
    assert s["mean"] == 4.0 and s["num_seeds"] == 3 and s["num_worlds"] == 2
    assert s["ci95"] == pytest.approx(4.303 * 2.0 / np.sqrt(3))
    assert (s["seed_min"], s["seed_max"]) == (2.0, 6.0)
