"""Is a change real? A 95% confidence interval of the difference of per-run means, from the
spread the repeats measured, and a verdict.

With ``k >= 2`` repeats on each side (``%%kernelprofile --repeat k``), a total's per-repeat
values give Welch's t interval for ``mean(after) - mean(before)`` (the two sides' variances
need not be equal; degrees of freedom by Welch–Satterthwaite). The verdict:

- ``real``: the interval excludes 0: the change is beyond the noise the repeats measured.
- ``noise``: the interval holds 0 and both its ends lie within :data:`NOISE_MARGIN` of the
  before time (or :data:`NOISE_FLOOR_US`, whichever is larger): whatever the change is, it is
  too small to matter.
- ``inconclusive``: the interval holds 0 but is too wide to rule out a change that matters; or
  only one side has repeats (the other side's spread is unknown); or neither has (one run each
  side cannot tell a change from noise).

Repeats inside one recording do not sample what drifts between two recordings made minutes
apart (clocks, temperature, other processes); :data:`NOISE_MARGIN` is as large as that drift
usually is, so a "noise" verdict also covers it. The t quantile is computed here (scipy is not
a dependency): the t distribution's CDF through the regularized incomplete beta function
(a continued fraction, as in Numerical Recipes' ``betacf``), inverted by bisection.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
# Both ends of the interval within 2% of the before time: a change that small is below what a
# fix is worth acting on, and about the drift of an H200's clocks and temperature between two
# recordings (1-2%), which the repeats of one recording do not see.
NOISE_MARGIN = 0.02
# ... or within 1 us per run: less than one kernel launch costs the host, so it cannot matter to
# a run, however large a share of a tiny kernel it is.
NOISE_FLOOR_US = 1.0
VERDICTS = {
    "real": "the 95% interval of the change excludes 0: beyond the noise the repeats measured",
    "noise": (f"the 95% interval holds 0 and lies within {NOISE_MARGIN:.0%} of the before time "
              f"(or {NOISE_FLOOR_US:g} us): too small to matter"),
    "inconclusive": ("the change cannot be told from noise: the 95% interval holds 0 but is wide, "
                     "or a side has no repeats"),
}
NO_REPEATS_WHY = "one run each side cannot tell a change from noise; use --repeat N"
ONE_SIDE_WHY = "only one side has repeats, so the other side's spread is unknown; repeat both"
NOT_SPLIT_WHY = "the repeats do not split this total: the recording has no repeat windows"


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df`` may be fractional,
    as Welch's is; infinite ``df`` is the normal's).

    >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 4), 3), round(t_quantile(0.975, 30), 3)
    (12.706, 2.776, 2.042)
    """
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, not p={p}, df={df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df > 1e7 or math.isinf(df):
        return NormalDist().inv_cdf(p)
    # P(T > t) = I_x(df/2, 1/2) / 2 with x = df / (df + t^2), decreasing in t: bisect on x.
    target = 2.0 * (1.0 - p)
    lo, hi = 0.0, 1.0
    for _ in range(64):      # x to 1e-19: far finer than any interval is shown
        mid = 0.5 * (lo + hi)
        if _beta_inc(0.5 * df, 0.5, mid) < target:
            lo = mid
        else:
            hi = mid
    x = 0.5 * (lo + hi)
    return math.sqrt(df * (1.0 - x) / x)


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    # The continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def _beta_cf(a: float, b: float, x: float) -> float:
    """The incomplete beta function's continued fraction (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def welch_interval(before, after, level: float = LEVEL) -> dict:
    """Welch's t interval for ``mean(after) - mean(before)`` from each side's per-run values
    (two or more each): ``change``, ``low``, ``high``, ``df``. Where neither side varies, the
    interval is the change itself.

    >>> w = welch_interval([10.0, 11.0, 12.0], [8.0, 8.5, 9.0])
    >>> round(w["change"], 3), round(w["low"], 3), round(w["high"], 3), round(w["df"], 2)
    (-2.5, -4.578, -0.422, 2.94)
    """
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if len(b) < 2 or len(a) < 2:
        raise ValueError("Welch's interval needs two or more values on each side")
    change = float(a.mean() - b.mean())
    vb, va = float(b.var(ddof=1)) / len(b), float(a.var(ddof=1)) / len(a)
    se2 = vb + va
    if not se2 > 0:
        return {"change": change, "low": change, "high": change, "df": math.inf}
    df = se2 ** 2 / (vb ** 2 / (len(b) - 1) + va ** 2 / (len(a) - 1))
    half = t_quantile(0.5 + level / 2.0, df) * math.sqrt(se2)
    return {"change": change, "low": change - half, "high": change + half, "df": df}


def verdict(low: float, high: float, before: float) -> str:
    """``real``, ``noise`` or ``inconclusive`` for a change's interval ``[low, high]`` against
    the ``before`` value (see the module's docstring).

    >>> verdict(-4.6, -0.4, 11.0), verdict(-0.5, 0.9, 11.0), verdict(-4.6, 0.5, 11.0)
    ('real', 'noise', 'inconclusive')
    """
    if not (low == low and high == high):
        return "inconclusive"
    if low > 0 or high < 0:
        return "real"
    margin = max(NOISE_MARGIN * abs(before) if before == before else 0.0, NOISE_FLOOR_US)
    return "noise" if max(-low, high) <= margin else "inconclusive"


def judge(before_values, after_values, before: float) -> tuple:
    """``(low, high, verdict, why)`` of one total or kernel: the 95% interval of the change of
    per-run means and its verdict where both sides have per-repeat values (``None`` where a side
    has none), else NaN bounds and ``inconclusive`` with ``why`` saying what is missing.

    >>> judge(None, None, 100.0)[2:]
    ('inconclusive', 'one run each side cannot tell a change from noise; use --repeat N')
    """
    sides = [v is not None and len(v) >= 2 for v in (before_values, after_values)]
    if not all(sides):
        return np.nan, np.nan, "inconclusive", ONE_SIDE_WHY if any(sides) else NO_REPEATS_WHY
    w = welch_interval(before_values, after_values)
    return w["low"], w["high"], verdict(w["low"], w["high"], before), ""
