"""The timeline window panel: which part of a report's trace one view holds.

A report of more launches than one view holds shows one window of its trace at a time: the
launches, copies, host spans (CPU ops and runtime calls, nested by call depth) and idle gaps that
start in it, cut at a budget of launches and host spans; and an overview strip of the whole
trace (busy share, launches and host spans per bin, the longest idle gaps) to choose another.
The budgets are the view's (``kernelscope.view.report.VIEW_LAUNCHES``, ``VIEW_HOST_SPANS``),
passed in as ``budget``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.jsonable import num
from kernelscope.panels.base import text as _str
from kernelscope.trace.model import SYNC_CALLS, float_values
from kernelscope.units import fmt_us

# The host spans' columns (the view's HOST_COLUMNS names them with their kinds).
HOST_SPAN_COLUMNS = ("name", "tid", "start_us", "duration_us", "kind", "depth", "correlation")
# The overview strip of a windowed view: the whole trace in this many bins.
OVERVIEW_BINS = 480
# The longest idle gaps of the whole trace the window chooser lists.
OVERVIEW_GAPS = 5


def kernel_window(rep, name: str, after_us=None) -> tuple | None:
    """The window (``view_model``'s ``window``) that starts at the first launch of kernel
    ``name`` after ``after_us`` (from the trace's first launch of it when none is later), or
    None when the report has no launch of that name.

    >>> kernel_window(rep, "ampere_sgemm_128x64_tn", after_us=5e6)     # doctest: +SKIP
    (5000123.5, None)
    """
    k = rep.kernels
    if not len(k) or not isinstance(name, str):
        return None
    starts = k["start_us"].to_numpy(dtype=float, na_value=np.nan)[(k["name"] == name).to_numpy(dtype=bool)]
    starts = np.sort(starts[~np.isnan(starts)])
    if not len(starts):
        return None
    after = num(after_us)
    i = int(np.searchsorted(starts, after, "right")) if after is not None else 0
    return float(starts[i if i < len(starts) else 0]), None


def sorted_starts(tables) -> np.ndarray:
    starts = [float_values(t["start_us"]) for t in tables if len(t) and "start_us" in t.columns]
    starts = np.concatenate(starts) if starts else np.empty(0)
    # Stable: a merge of the tables' runs (each written by start, mostly), several times faster.
    return np.sort(starts[~np.isnan(starts)], kind="stable")


def _cut(launch_starts: np.ndarray, host_starts: np.ndarray, lo: float | None, budget: tuple) -> float | None:
    """The start of the first row past the budget (launches, host spans) counting from ``lo``
    (None: they all fit)."""
    cuts = []
    for starts, cap in zip((launch_starts, host_starts), budget):
        i = 0 if lo is None else int(np.searchsorted(starts, lo, "left"))
        if len(starts) - i > cap:
            cuts.append(float(starts[i + cap]))
    return min(cuts) if cuts else None


def window_span(launch_starts: np.ndarray, host_starts: np.ndarray, window, budget: tuple) -> tuple | None:
    """(from_us or None, until_us) of the window to send, or None when the whole report fits.
    A window that starts at or before the trace's first row is the first window (``from_us``
    None); one past the last row starts at the last row, so that it holds something."""
    ls, hs = launch_starts, host_starts
    have = [a for a in (ls, hs) if len(a)]
    lo, hi = (num(x) for x in window) if window is not None else (None, None)
    if lo is not None and have:
        lo = min(lo, max(float(a[-1]) for a in have))
        if lo <= min(float(a[0]) for a in have):
            lo = None
    until = min([u for u in (_cut(ls, hs, lo, budget), hi) if u is not None], default=None)
    if until is None:
        if lo is None:
            return None
        until = float(np.nextafter(max(float(a[-1]) for a in have), np.inf))   # to the trace's end
    if lo is not None and until <= lo:
        until = float(np.nextafter(lo, np.inf))
    return lo, until


def within(df: pd.DataFrame, lo: float | None, until: float, overlapping: bool = False, keep=None) -> pd.DataFrame:
    """The rows of ``df`` that start in [``lo``, ``until``) (``overlapping``: that overlap it;
    ``keep``: :func:`in_window` of it, when at hand)."""
    if not len(df) or "start_us" not in df.columns:
        return df
    return df[in_window(df, lo, until, overlapping) if keep is None else keep].reset_index(drop=True)


def in_window(df: pd.DataFrame, lo: float | None, until: float, overlapping: bool = False) -> np.ndarray:
    """Which rows of ``df`` (it has ``start_us``) :func:`within` keeps."""
    start = float_values(df["start_us"])
    keep = start < until
    if lo is not None:
        if overlapping:
            dur = np.nan_to_num(float_values(df["duration_us"]))
            keep &= start + dur > lo
        else:
            keep &= start >= lo
    return keep


def window_rows(df: pd.DataFrame, lo: float | None, until: float, keep=None) -> np.ndarray:
    """For each row of ``df``, its row in ``within(df, lo, until)`` (-1: outside the window)."""
    if not len(df) or "start_us" not in df.columns:
        return np.arange(len(df))
    keep = in_window(df, lo, until) if keep is None else keep
    return np.where(keep, np.cumsum(keep) - 1, -1)


def window_note(w: dict) -> str:
    held = (f"{w['launches']:,} of {w['of_launches']:,} kernel launches"
            + (f", {w['copies']:,} of {w['of_copies']:,} copies" if w["of_copies"] else "")
            + f" and {w['host_spans']:,} of {w['of_host_spans']:,} CPU ops and runtime calls. ")
    ov = w.get("overview") or {}
    t0 = ov.get("start_us") or 0.0
    where = (f"the trace's first {fmt_us(w['until_us'] - t0)}" if w.get("from_us") is None
             else f"{fmt_us(w['from_us'] - t0)} to {fmt_us(w['until_us'] - t0)} of the trace")
    return (f"This view holds {where}: {held}"
            "The kernel table and the timeline cover that window; the figures above, the findings, "
            "backends, roofline and ops cover the whole report (rep.kernels and rep.ops have every row).")


def overview(launch_starts: np.ndarray, host_starts: np.ndarray, k: pd.DataFrame, copies: pd.DataFrame,
             tl) -> dict | None:
    """The whole trace at a glance, for the window chooser's strip: per bin of time, the GPU's
    busy share (kernel and copy time in the bin over its length, capped at 1: streams overlap)
    and the launches and host spans that start in it; and the longest idle gaps."""
    ls, hs = launch_starts, host_starts
    if not len(ls) and not len(hs):
        return None
    t0 = min(float(a[0]) for a in (ls, hs) if len(a))
    ends = [float(np.nanmax(t["start_us"].to_numpy(float) + np.nan_to_num(t["duration_us"].to_numpy(float))))
            for t in (k, copies) if len(t)]
    t1 = max([float(a[-1]) for a in (ls, hs) if len(a)] + ends)
    width = max((t1 - t0) / OVERVIEW_BINS, 1e-3)
    edges = t0 + width * np.arange(OVERVIEW_BINS + 1)
    busy = np.diff(_covered(k, copies, edges, ls)) / width
    count = lambda a: np.diff(np.searchsorted(a, edges, "left")).tolist() if len(a) else [0] * OVERVIEW_BINS  # noqa: E731
    launches, host = count(ls), count(hs)
    launches[-1] += int(len(ls) - sum(launches))    # the last row starts on the closing edge
    host[-1] += int(len(hs) - sum(host))
    g = tl.gaps if tl is not None and len(tl.gaps) else None
    longest = _longest(g, OVERVIEW_GAPS).to_dict("records") if g is not None else []
    gaps = [{"start_us": num(r.get("start_us")), "duration_us": num(r.get("duration_us")),
             "device": _str(r.get("device")), "cause": _str(r.get("cause")),
             "label": f"{fmt_us(num(r.get('duration_us')) or 0)} idle at {fmt_us((num(r.get('start_us')) or t0) - t0)}"
                      + (f" ({r['cause']})" if _str(r.get("cause")) else "")}
            for r in longest]
    return {"start_us": t0, "end_us": t1, "bin_us": width,
            "busy": np.round(np.minimum(busy, 1.0), 3).tolist(), "launches": launches, "host_spans": host,
            "gaps": gaps}


def _longest(gaps: pd.DataFrame, n: int) -> pd.DataFrame:
    """``gaps.nlargest(n, "duration_us")``: only the rows at or above the n-th longest sorted (a
    5M-event trace has hundreds of thousands of gaps)."""
    if gaps["duration_us"].dtype != np.float64 or len(gaps) <= 4 * n:
        return gaps.nlargest(n, "duration_us")
    d = gaps["duration_us"].to_numpy()
    rows = np.flatnonzero(~np.isnan(d))
    if len(rows) <= n:          # nlargest then takes missing ones too
        return gaps.nlargest(n, "duration_us")
    rows = rows[d[rows] >= np.partition(d[rows], len(rows) - n)[len(rows) - n]]
    # Longest first; of equal ones the earlier row first (nlargest's keep="first").
    return gaps.iloc[rows[np.lexsort((rows, -d[rows]))][:n]]


def _covered(k: pd.DataFrame, copies: pd.DataFrame, edges: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """At each edge t, the kernel and copy time before t (the sum over intervals of their part
    before t): the sum over starts s < t of t - s, less that over ends e < t of t - e.
    ``starts``: the tables' start times sorted, when at hand (``_sorted_starts``)."""
    st = np.concatenate([t["start_us"].to_numpy(float) for t in (k, copies) if len(t)] or [np.empty(0)])
    en = st + np.nan_to_num(np.concatenate([t["duration_us"].to_numpy(float) for t in (k, copies) if len(t)]
                                           or [np.empty(0)]))
    ok = ~np.isnan(st)
    if starts is None or any(t["start_us"].dtype != np.float64 for t in (k, copies) if len(t)):
        starts = np.sort(st[ok], kind="stable")
    out = np.zeros(len(edges))
    for a, sign in ((starts, 1.0), (np.sort(en[ok], kind="stable"), -1.0)):
        n = np.searchsorted(a, edges, "left")
        before = np.r_[0.0, np.cumsum(a)][n]
        out += sign * (n * edges - before)
    return out


def host_spans(ops: pd.DataFrame, runtime: pd.DataFrame, depth, lo=None, until=None) -> pd.DataFrame:
    """Every CPU op with its depth in its thread's call tree (``Report.op_tree``'s ``depth``,
    per row of ``ops``), drawn nested as Perfetto draws a thread, plus the CUDA runtime calls,
    so the timeline shows what the host was doing while the GPU idled and which call launched
    which kernel. With ``until``: those that overlap [``lo``, ``until``) only."""
    parts = []
    if len(ops):
        o = ops.reset_index(drop=True)
        # Only the columns sent (a window's rows are taken from every op).
        o = o[["name", "tid", "start_us", "duration_us"] + (["cat"] if "cat" in o.columns else [])].assign(depth=depth)
        if until is not None:
            o = within(o, lo, until, overlapping=True)
        annotation = (o["cat"] == "user_annotation").to_numpy(dtype=bool) if "cat" in o.columns else False
        kind = _labels(("op", "annotation"), annotation, o)
        o = o[["name", "tid", "start_us", "duration_us", "depth"]].assign(tid=_text(o["tid"]), kind=kind)
        parts.append(o.dropna(subset=["start_us"]))
    if len(runtime):
        r = runtime[["name", "tid", "start_us", "duration_us", "correlation"]].dropna(subset=["start_us"])
        if until is not None:
            r = within(r, lo, until, overlapping=True)
        kind = _labels(("runtime", "sync"), r["name"].isin(list(SYNC_CALLS)).to_numpy(dtype=bool), r)
        parts.append(r.assign(tid=_text(r["tid"]), kind=kind, depth=0))
    if not parts:
        return pd.DataFrame({c: [] for c in HOST_SPAN_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def _text(col: pd.Series) -> pd.Series:
    """``col.astype(str)``; for integers (thread ids) made once per distinct value, as objects
    (equal texts one object: the payload codes them by identity)."""
    arr = col.to_numpy()
    if col.dtype != object or not len(arr) or type(arr[0]) is not int \
            or pd.api.types.infer_dtype(arr, skipna=False) != "integer":
        return col.astype(str)
    try:
        codes, uniq = pd.factorize(arr.astype(np.int64))
    except OverflowError:
        return col.astype(str)
    return pd.Series(np.array([str(u) for u in uniq.tolist()], dtype=object)[codes], index=col.index, dtype=object)


def _labels(labels: tuple, second, like: pd.DataFrame) -> pd.Series:
    """Per row of ``like``: ``labels[1]`` where ``second``, else ``labels[0]``, as one object per
    label (not a text column, which would copy the text into each row)."""
    pick = np.zeros(len(like), np.int64) if second is False else np.asarray(second, dtype=np.int64)
    return pd.Series(np.array(labels, dtype=object)[pick], index=like.index, dtype=object)
