"""Interval arithmetic over time spans (microseconds): merging overlapping intervals, the
length their union covers, how much of each interval a merged set covers, and the overlap of two
sets; :class:`Spans`, such sets per device with union, difference and intersection (the time a
finding's cost is made of). The timeline's busy time, idle gaps and stream overlap, the findings, cold-start and rank
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


def _sweep(a, b, keep_a: bool, keep_b: bool) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the line where (in ``a``) == keep_a and (in ``b``) == keep_b, as disjoint
    sorted intervals: ``a`` and ``b`` are each disjoint sorted ``(starts, ends)``."""
    (a_s, a_e), (b_s, b_e) = a, b
    p = np.concatenate([a_s, a_e, b_s, b_e])
    da = np.concatenate([np.ones(len(a_s)), -np.ones(len(a_e)), np.zeros(len(b_s) + len(b_e))])
    db = np.concatenate([np.zeros(len(a_s) + len(a_e)), np.ones(len(b_s)), -np.ones(len(b_e))])
    o = np.argsort(p, kind="stable")
    p, ca, cb = p[o], np.cumsum(da[o]), np.cumsum(db[o])
    # Segment i runs from p[i] to p[i + 1]; at a tie its length is 0 and it is dropped, so only
    # the counts after the last event of a tie matter.
    on = ((ca[:-1] > 0) == keep_a) & ((cb[:-1] > 0) == keep_b) & (p[1:] > p[:-1])
    return merge_intervals(p[:-1][on], p[1:][on])


class Spans:
    """Disjoint sorted intervals per key (a device): the time a finding's cost is made of, so
    that a list of findings can count each microsecond once (``analysis/priorities.py``).

    >>> a = Spans.of("cuda:0", [0, 10], [5, 20])
    >>> b = Spans.of("cuda:0", [3], [12])
    >>> (a | b).length, (a - b).length, (a & b).length, (a - b).overlap(b)
    (20.0, 11.0, 4.0, 0.0)
    >>> Spans.of(["cuda:0", "cuda:1"], [0, 0], [5, 5]).length    # another device: its own time
    10.0
    """

    __slots__ = ("parts",)

    def __init__(self, parts: dict | None = None):
        # {key: (starts, ends)}, each already disjoint and sorted (merge_intervals' output).
        self.parts = {k: v for k, v in (parts or {}).items() if len(v[0])}

    @classmethod
    def of(cls, keys, starts, ends) -> Spans:
        """Intervals [start, end) under one key, or one key per interval; empty and missing
        intervals are dropped, overlapping ones merged."""
        s = np.asarray(starts, dtype=float).ravel()
        e = np.asarray(ends, dtype=float).ravel()
        ok = (e > s) & np.isfinite(s) & np.isfinite(e)
        if np.ndim(keys) == 0:
            return cls({keys: merge_intervals(s[ok], e[ok])})
        k = np.asarray(keys, dtype=object).ravel()[ok]
        s, e = s[ok], e[ok]
        return cls({key: merge_intervals(s[k == key], e[k == key]) for key in dict.fromkeys(k.tolist())})

    @classmethod
    def of_rows(cls, df, key: str = "device") -> Spans:
        """The rows of a table with ``start_us`` and ``end_us`` (and ``key``: their device)."""
        return cls.of(df[key].to_numpy(object), df["start_us"].to_numpy(float), df["end_us"].to_numpy(float))

    @property
    def length(self) -> float:
        """The time they cover, each key's counted apart."""
        return float(sum((e - s).sum() for s, e in self.parts.values()))

    def _pair(self, other: Spans, keep_a: bool, keep_b: bool) -> Spans:
        empty = (np.empty(0), np.empty(0))
        keys = dict.fromkeys([*self.parts, *other.parts])
        return Spans({k: _sweep(self.parts.get(k, empty), other.parts.get(k, empty), keep_a, keep_b)
                      for k in keys})

    def __or__(self, other: Spans) -> Spans:
        empty = (np.empty(0), np.empty(0))
        out = {}
        for k in dict.fromkeys([*self.parts, *other.parts]):
            (a_s, a_e), (b_s, b_e) = self.parts.get(k, empty), other.parts.get(k, empty)
            out[k] = merge_intervals(np.concatenate([a_s, b_s]), np.concatenate([a_e, b_e]))
        return Spans(out)

    def __sub__(self, other: Spans) -> Spans:
        return self._pair(other, True, False) if other.parts else self

    def __and__(self, other: Spans) -> Spans:
        return self._pair(other, True, True)

    def overlap(self, other: Spans) -> float:
        """The time both cover."""
        return (self & other).length if other.parts and self.parts else 0.0

    def __bool__(self) -> bool:
        return self.length > 0

    def __repr__(self) -> str:
        n = sum(len(s) for s, _ in self.parts.values())
        return f"Spans({n} intervals over {len(self.parts)} key(s), {self.length:.1f} us)"
