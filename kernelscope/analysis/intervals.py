"""Interval arithmetic over time spans (microseconds): merging overlapping intervals, the
length their union covers, how much of each interval a merged set covers, and the overlap of two
sets. The timeline's busy time, idle gaps and stream overlap, the findings, cold-start and rank
analyses all count time with these, so that overlapping work is counted once everywhere.
"""
from __future__ import annotations

import numpy as np


def merge_intervals(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Merge possibly overlapping intervals into disjoint, sorted ones.

    >>> merge_intervals([0, 2, 10], [5, 3, 12])
    (array([ 0., 10.]), array([ 5., 12.]))
    """
    s = np.asarray(starts, dtype=float)
    e = np.asarray(ends, dtype=float)
    if not len(s):
        return s, e
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    cm = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > cm[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], cm[last]


def union_length(starts, ends) -> float:
    """Total length covered by a set of intervals (overlaps counted once).

    >>> union_length([0, 2, 10], [5, 3, 12])
    7.0
    """
    ms, me = merge_intervals(starts, ends)
    return float((me - ms).sum())


def covered_length(ms, me, starts, ends) -> np.ndarray:
    """For each interval [start, end), how much of it the disjoint sorted intervals (ms, me)
    cover (e.g. :func:`merge_intervals` output). Vectorized with prefix sums.

    >>> covered_length(np.array([0., 10.]), np.array([5., 12.]), [3, 0], [11, 20]).tolist()
    [3.0, 7.0]
    """
    ms, me = np.asarray(ms, float), np.asarray(me, float)
    prefix = np.concatenate([[0.0], np.cumsum(me - ms)])

    def upto(t):
        t = np.asarray(t, float)
        i = np.searchsorted(me, t, side="right")  # intervals ending at or before t
        part = np.where(i < len(ms), np.clip(t - ms[np.minimum(i, len(ms) - 1)], 0, None), 0.0) \
            if len(ms) else np.zeros_like(t)
        return prefix[i] + part

    return upto(ends) - upto(starts)


def intersection_length(a, b) -> float:
    """Length of time covered by both interval sets ``a`` and ``b`` (each ``(starts, ends)``).

    >>> intersection_length(([0], [10]), ([5, 20], [15, 30]))
    5.0
    """
    la, lb = union_length(*a), union_length(*b)
    both = union_length(np.concatenate([np.asarray(a[0], float), np.asarray(b[0], float)]),
                        np.concatenate([np.asarray(a[1], float), np.asarray(b[1], float)]))
    return la + lb - both
