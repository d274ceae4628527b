"""The comparison's noise arithmetic (analysis/noise.py) on known numbers: the t quantile against
a printed table, Welch's interval written out, and the verdict's boundaries."""
import math

import numpy as np
import pytest

from kernelscope.analysis.noise import (
    NO_REPEATS_WHY,
    NOISE_FLOOR_US,
    NOISE_MARGIN,
    ONE_SIDE_WHY,
    judge,
    t_quantile,
    verdict,
    welch_interval,
)

# Student's t, two-sided 95% (the 0.975 quantile), from any statistics textbook's table.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000,
        120: 1.980}
# Other levels, same table: 0.95 and 0.995 quantiles.
T95 = {1: 6.314, 4: 2.132, 10: 1.812, 30: 1.697}
T995 = {1: 63.657, 4: 4.604, 10: 3.169, 30: 2.750}


@pytest.mark.parametrize("df,t", sorted(T975.items()))
def test_t_quantile_matches_the_table(df, t):
    assert t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)


def test_t_quantile_other_levels_and_limits():
    for table, p in ((T95, 0.95), (T995, 0.995)):
        for df, t in table.items():
            assert t_quantile(p, df) == pytest.approx(t, abs=5e-4)
    assert t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)        # symmetric
    assert t_quantile(0.5, 3) == 0.0
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959966, abs=1e-5)
    # Welch's df is fractional: the quantile falls between its neighbours'.
    q = [t_quantile(0.975, df) for df in (2.0, 2.5, 3.0, 3.5, 4.0)]
    assert q == sorted(q, reverse=True) and T975[3] < t_quantile(0.975, 2.5) < T975[2]
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)


def test_welch_interval_written_out():
    b, a = [10.0, 11.0, 12.0], [8.0, 8.5, 9.0]
    w = welch_interval(b, a)
    # var(b)/3 = 1/3, var(a)/3 = 0.25/3; df = (5/12)^2 / ((1/3)^2/2 + (1/12)^2/2) = 50/17.
    se = math.sqrt(1 / 3 + 0.25 / 3)
    assert w["df"] == pytest.approx(50 / 17)
    assert w["change"] == -2.5
    half = t_quantile(0.975, 50 / 17) * se
    assert (w["low"], w["high"]) == (pytest.approx(-2.5 - half), pytest.approx(-2.5 + half))
    # Equal sizes and variances: df = 2(k-1), the pooled t interval.
    w = welch_interval([1.0, 3.0], [2.0, 4.0])
    assert w["df"] == pytest.approx(2.0) and w["high"] - w["change"] == pytest.approx(T975[2] * math.sqrt(2.0), abs=1e-3)
    # Neither side varies: the interval is the change itself.
    w = welch_interval([5.0, 5.0], [7.0, 7.0, 7.0])
    assert (w["low"], w["high"], w["df"]) == (2.0, 2.0, math.inf)
    with pytest.raises(ValueError):
        welch_interval([1.0], [1.0, 2.0])


def test_verdict_boundaries():
    before = 1000.0
    m = NOISE_MARGIN * before
    assert verdict(1.0, 5.0, before) == verdict(-5.0, -1.0, before) == "real"
    assert verdict(-m, m, before) == "noise"                           # the ends on the margin
    assert verdict(-m, m * 1.01, before) == "inconclusive"
    assert verdict(0.0, 0.0, before) == "noise"
    # A tiny kernel: the 1 us floor, not 2% of 10 us.
    assert verdict(-NOISE_FLOOR_US, NOISE_FLOOR_US, 10.0) == "noise"
    assert verdict(-1.5, 1.5, 10.0) == "inconclusive"
    assert verdict(float("nan"), float("nan"), before) == "inconclusive"


def test_judge_says_what_is_missing():
    assert judge(None, None, 1.0)[2:] == ("inconclusive", NO_REPEATS_WHY)
    assert judge(np.array([1.0, 2.0]), None, 1.0)[2:] == ("inconclusive", ONE_SIDE_WHY)
    assert judge(np.array([1.0]), np.array([1.0, 2.0]), 1.0)[2:] == ("inconclusive", ONE_SIDE_WHY)
    low, high, v, why = judge(np.array([100.0, 101.0, 99.0]), np.array([90.0, 91.0, 89.0]), 100.0)
    assert v == "real" and why == "" and low < -10 < high < 0
