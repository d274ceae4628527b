"""Is the GPU busy, and if not, why: busy time, idle gaps and their causes, stream overlap,
launch statistics. Pure functions over a report's tables (kernels, copies, syncs).

Times are microseconds on the trace's clock. "Busy" is the union of kernel, memcpy and memset
intervals (overlapping work on two streams counts once). The denominator is the *active window*:
from the first GPU activity's start to the last one's end. The profiler's span also holds its own
start-up (CUPTI initializes on the first launch, 0.3-0.9 ms in our H200 recordings) and host work
before the first launch, which says nothing about whether the GPU was kept fed; it is reported
separately as ``lead_in_us``. The interval arithmetic (union, coverage, overlap) is
:mod:`kernelscope.analysis.intervals`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from kernelscope.analysis.devices import annotate_devices
from kernelscope.analysis.distinct import by_distinct, factorize
from kernelscope.analysis.intervals import covered_length, intersection_length, merge_intervals, union_length
from kernelscope.trace.model import SYNC_CALLS


class Cause(NamedTuple):
    """An idle gap's cause: what it means, the word the timeline's legend uses (None: not in
    the legend) and the colour of its idle spans (``#rrggbbaa``: drawn see-through over the lanes).

    >>> CAUSES["host"].color, CAUSES["host"].solid
    ('#b22222f2', '#b22222')
    """

    text: str
    legend: str | None
    color: str

    @property
    def solid(self) -> str:
        """The colour without its transparency (a chart's legend swatch)."""
        return self.color[:7]


# Causes of an idle gap (the ``cause`` column of the gaps table). The browser gets this table
# in the view's payload.
CAUSES = {
    # Firebrick, near opaque: a see-through red read as the pink of host-to-device copies
    # (backend_rules.COPY_COLORS) in the legend and on the lanes.
    "host": Cause("waiting on the host: the next launch came after the GPU went idle",
                  "host", "#b22222f2"),
    "sync": Cause("the host was blocked in a synchronization (or a blocking copy) while the GPU drained",
                  "sync", "#9467bd73"),
    "streams": Cause("the next work was queued on another stream, waiting on a cross-stream dependency",
                     "another stream", "#ff7f0e66"),
    "queued": Cause("the next work was already queued on the same stream (GPU-side launch latency)",
                    "queued", "#7f7f7f4d"),
    "unknown": Cause("the next activity's launch call is not in the trace", None, "#b0b0b033"),
}

# Host-blocking copy calls: with pageable host memory cudaMemcpyAsync is synchronous for the host
# (the driver stages through a pinned buffer), which is documented CUDA behaviour.
_BLOCKING_MEMORY = "Pageable"

ACTIVITY_COLUMNS = ["kind", "name", "device", "device_index", "stream", "start_us", "end_us",
                    "duration_us", "launch_api", "launch_start_us", "launch_end_us", "op",
                    "graph_launch", "bytes"]


@dataclass
class Timeline:
    """Everything :func:`timeline` computes for one report (see the tables' docstrings)."""

    activities: pd.DataFrame
    busy: pd.DataFrame
    gaps: pd.DataFrame
    overlap: pd.DataFrame
    blocking: pd.DataFrame
    launch_stats: pd.DataFrame
    window: dict = field(default_factory=dict)

    def device(self, device=None) -> dict:
        """The busy row of one device (the first when ``device`` is None) as a dict.

        >>> rep.timeline.device()["busy_share"]
        0.12736228453993695
        """
        rows = self.busy[self.busy["stream"].isna()]
        if device is not None:
            rows = rows[rows["device"] == device]
        return rows.iloc[0].to_dict() if len(rows) else {}


# -- tables ---------------------------------------------------------------------------------------

def activities(kernels: pd.DataFrame, copies: pd.DataFrame) -> pd.DataFrame:
    """Kernels, memcpys and memsets as one table of GPU activities, sorted by start.

    >>> a = activities(rep.kernels, rep.copies)
    >>> a[["kind", "stream", "start_us", "end_us"]].head(3)
         kind  stream   start_us     end_us
    0  memcpy       7  2586.0254  2733.2254
    1  kernel       7  2972.5850  2973.8970
    2  kernel       7  3003.4336  3009.5456
    """
    parts = []
    for kind_col, df in (("kernel", kernels), (None, copies)):
        if not len(df):
            continue
        t = pd.DataFrame({
            "kind": "kernel" if kind_col else df["kind"].astype(object),
            "name": df["name"].astype(object),
            "device_index": df["device_index"].astype("Int64"),
            "stream": df["stream"].astype("Int64"),
            "start_us": df["start_us"].astype(float),
            "duration_us": df["duration_us"].astype(float),
            "launch_api": df["launch_api"].astype(object),
            "launch_start_us": df["launch_start_us"].astype(float),
            "op": df["op"].astype(object),
        })
        t["end_us"] = t["start_us"] + t["duration_us"]
        t["launch_end_us"] = t["launch_start_us"] + df["launch_duration_us"].astype(float)
        t["graph_launch"] = (df["graph_launch"].fillna(False).astype(bool)
                             if "graph_launch" in df.columns else False)
        t["bytes"] = df["bytes"].astype("Int64") if "bytes" in df.columns else pd.NA
        # The labels of Report.kernels/copies (analysis.devices); raw tables are labelled here.
        t["device"] = (df["device"].astype(object) if "device" in df.columns
                       else annotate_devices(t[["device_index"]].copy(), None)["device"])
        parts.append(t)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ACTIVITY_COLUMNS})
    # Each step below copies every row, so each is skipped where it would change nothing (a large
    # trace's kernels alone, timed and in time order already, are copied once).
    a = (pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0])[ACTIVITY_COLUMNS]
    # Activities without a time (e.g. kernels known only from an Nsight Compute export) have no
    # place on a timeline.
    timed = (a["start_us"].notna() & a["duration_us"].notna()).to_numpy()
    if not timed.all():
        a = a[timed]
    s, e = a["start_us"].to_numpy(float), a["end_us"].to_numpy(float)
    if not ((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (e[1:] >= e[:-1]))).all():
        a = a.sort_values(["start_us", "end_us"], kind="stable")
    return a.reset_index(drop=True)


def outer_ops(ops: pd.DataFrame, tids, times) -> list:
    """For each (thread, time), the outermost CPU op running there (e.g. ``aten::to`` around the
    ``aten::copy_`` that synchronized), or None.

    >>> outer_ops(rep.ops, rep.syncs["tid"], rep.syncs["start_us"])
    ['aten::to', 'aten::to', None, None]
    """
    out = [None] * len(times)
    if ops is None or not len(ops) or not len(out):
        return out
    wanted = set(tids)
    wanted.discard(None)
    # Category and thread tested once per distinct value (a million ops hold a few of each).
    keep = (by_distinct(ops["cat"], lambda c: c == "cpu_op", bool, True)
            & by_distinct(ops["tid"], lambda t: t in wanted, bool, False))
    tid = ops["tid"].to_numpy(object)[keep]
    s_all = ops["start_us"].to_numpy(float)[keep]
    e_all = s_all + ops["duration_us"].to_numpy(float)[keep]
    n_all = ops["name"].to_numpy(object)[keep]
    tcodes, tuniq = factorize(tid, use_na_sentinel=True)
    by_tid = {}
    for t in wanted:
        m = np.isin(tcodes, [i for i, u in enumerate(tuniq.tolist()) if u == t])
        if not m.any():
            continue
        o = np.argsort(s_all[m], kind="stable")
        s, e, names = s_all[m][o], e_all[m][o], n_all[m][o]
        # Top level: an op that starts after every earlier op on its thread has ended.
        prev_end = np.concatenate([[-np.inf], np.maximum.accumulate(e)[:-1]])
        top = s >= prev_end
        by_tid[t] = (s[top], e[top], names[top])
    # The queries of each thread looked up together (rows coded by thread: ~100k queries of a
    # copy-heavy trace; a missing thread, None or NaN, is no thread of ``by_tid``).
    qcodes, quniq = pd.factorize(pd.Series(list(tids), dtype=object), use_na_sentinel=True)
    when_all = np.array(times, dtype=float)          # None -> NaN
    found_names = np.full(len(out), None, dtype=object)
    for k, t in enumerate(quniq.tolist()):
        if t not in by_tid:
            continue
        hs, he, hn = by_tid[t]
        if not len(hs):
            continue
        at = np.flatnonzero(qcodes == k)
        when = when_all[at]
        j = np.searchsorted(hs, when, side="right") - 1
        jj = np.maximum(j, 0)
        found = ~np.isnan(when) & (j >= 0) & (when <= he[jj])
        found_names[at[found]] = hn[jj[found]]
    return found_names.tolist()


def host_blocking(syncs: pd.DataFrame, copies: pd.DataFrame, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Host calls that block until the GPU catches up: synchronizations and pageable copies.

    Columns: name, kind (``sync`` or ``copy``), start_us, end_us, duration_us, op (the op that
    made the call), outer_op (the outermost op around it, e.g. ``aten::to`` for ``.cuda()``;
    needs ``ops``).

    >>> host_blocking(rep.syncs, rep.copies)[["name", "duration_us", "op"]].head(3)
                                          name  duration_us           op
    0  cudaMemcpyAsync (Memcpy HtoD (Pageab...      287.914  aten::copy_
    1                    cudaStreamSynchronize       22.736  aten::copy_
    2  cudaMemcpyAsync (Memcpy HtoD (Pageab...      269.715  aten::copy_
    """
    parts = []
    # Only host API calls: GPU-side "cuda_sync" records have no host interval to block.
    s = syncs[syncs["name"].isin(list(SYNC_CALLS))]
    if len(s):
        parts.append(pd.DataFrame({
            "name": s["name"].astype(object), "kind": "sync",
            "start_us": s["start_us"].astype(float), "duration_us": s["duration_us"].astype(float),
            "op": s["op"].astype(object), "tid": s["tid"].astype(object)}))
    if len(copies):
        pageable = (copies["src_memory"] == _BLOCKING_MEMORY) | (copies["dst_memory"] == _BLOCKING_MEMORY)
        c = copies[pageable & copies["launch_start_us"].notna()]
        if len(c):
            parts.append(pd.DataFrame({
                "name": pd.Series([f"{a} ({n})" for a, n in zip(c["launch_api"], c["name"])],
                                  index=c.index, dtype=object),
                "kind": "copy", "start_us": c["launch_start_us"].astype(float),
                "duration_us": c["launch_duration_us"].astype(float), "op": c["op"].astype(object),
                "tid": c["launch_tid"].astype(object)}))
    cols = ["name", "kind", "start_us", "end_us", "duration_us", "op", "outer_op"]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=float if c.endswith("_us") else object) for c in cols})
    b = pd.concat(parts, ignore_index=True)
    b["end_us"] = b["start_us"] + b["duration_us"]
    outer = outer_ops(ops, b["tid"].tolist(), b["start_us"].tolist()) if ops is not None else [None] * len(b)
    b["outer_op"] = pd.Series(outer, index=b.index, dtype=object)
    return b[cols].sort_values("start_us", kind="stable").reset_index(drop=True)


def busy_table(acts: pd.DataFrame, wall_us: float | None = None) -> pd.DataFrame:
    """Busy time per device (``stream`` is NA) and per stream within it.

    Columns: device, stream, activities, kernels, copies, window_start_us, window_end_us,
    window_us, busy_us, busy_share (of the active window), wall_busy_share (of ``wall_us``, the
    region's wall time, when given), idle_us.

    >>> b = busy_table(activities(rep.kernels, rep.copies))
    >>> b.loc[b["stream"].isna(), "busy_share"]
    0    0.1274
    Name: busy_share, dtype: float64
    """
    rows = []
    for dev, d in acts.groupby("device", sort=True):
        w0, w1 = float(d["start_us"].min()), float(d["end_us"].max())
        win = w1 - w0
        groups = [(pd.NA, d)] + [(s, g) for s, g in d.groupby("stream", sort=True)]
        for stream, g in groups:
            busy = union_length(g["start_us"], g["end_us"])
            kernels = int((g["kind"] == "kernel").sum())     # the rest (!= "kernel", missing too) are copies
            rows.append({
                "device": dev, "stream": stream, "activities": len(g),
                "kernels": kernels, "copies": len(g) - kernels,
                "window_start_us": w0, "window_end_us": w1, "window_us": win, "busy_us": busy,
                "busy_share": busy / win if win > 0 else np.nan,
                "wall_busy_share": busy / wall_us if wall_us else np.nan,
                "idle_us": win - busy,
            })
    out = pd.DataFrame(rows, columns=["device", "stream", "activities", "kernels", "copies",
                                      "window_start_us", "window_end_us", "window_us", "busy_us",
                                      "busy_share", "wall_busy_share", "idle_us"])
    out["stream"] = out["stream"].astype("Int64")
    return out


GAP_COLUMNS = ["device", "start_us", "end_us", "duration_us", "cause", "before", "before_stream",
               "after", "after_kind", "after_stream", "after_op", "after_launch_start_us",
               "blocking_call", "blocking_op"]


def gaps_table(acts: pd.DataFrame, blocking: pd.DataFrame | None = None) -> pd.DataFrame:
    """Idle gaps of each device inside its active window, each with its cause (see ``CAUSES``).

    A gap runs from the moment every stream of the device is idle to the next activity's start.
    Its cause: ``host`` when that activity's launch call started after the gap began; ``sync``
    when, in addition, the host sat in a blocking call (a synchronization or a pageable copy)
    during the gap before that launch, so it could not queue work ahead; ``streams`` when the
    work was queued before the gap on another stream than the work before it; ``queued`` when
    it was queued on the same stream.

    >>> g = gaps_table(activities(rep.kernels, rep.copies), host_blocking(rep.syncs, rep.copies))
    >>> g.groupby("cause")["duration_us"].sum()
    cause
    host      6564.3449
    queued      56.1914
    sync       426.8804
    Name: duration_us, dtype: float64
    """
    parts = []
    # Only the columns read: each device's rows are copied (and sorted) once.
    cols = ["device", "start_us", "end_us", "launch_start_us", "stream", "name", "kind", "op"]
    for dev, d in acts[cols].groupby("device", sort=True):
        parts.append(_device_gaps(dev, d.reset_index(drop=True), blocking))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in GAP_COLUMNS})
    return pd.concat(parts, ignore_index=True)[GAP_COLUMNS]


_GAP_CAUSES = np.array(["unknown", "sync", "host", "streams", "queued"], dtype=object)


def _device_gaps(dev, d: pd.DataFrame, blocking) -> pd.DataFrame:
    st = d["start_us"].to_numpy(float)
    if not (st[1:] >= st[:-1]).all():       # activities() sorts them already
        d = d.iloc[np.argsort(st, kind="stable")].reset_index(drop=True)
    s = d["start_us"].to_numpy(float)
    e = d["end_us"].to_numpy(float)
    cm = np.maximum.accumulate(e)
    # Index of the activity holding the running maximum end: the last one busy before a gap.
    holder = np.maximum.accumulate(np.where(e >= cm, np.arange(len(e)), 0))
    nxt = np.flatnonzero(s[1:] > cm[:-1]) + 1
    prev = holder[nxt - 1]
    g0, g1 = cm[nxt - 1], s[nxt]
    ls = d["launch_start_us"].to_numpy(float)[nxt]
    stream = d["stream"].astype("float64").to_numpy()
    late = ls > g0
    blocked = np.zeros(len(nxt), dtype=bool)
    call = np.full(len(nxt), None, dtype=object)
    call_op = np.full(len(nxt), None, dtype=object)
    if blocking is not None and len(blocking) and len(nxt):
        # Any blocking call overlapping (gap start, next launch)? Calls sorted by start with a
        # running maximum of their ends answer that for all gaps at once.
        bs = blocking["start_us"].to_numpy(float)
        be = blocking["end_us"].to_numpy(float)
        bo = np.argsort(bs, kind="stable")
        bs, be = bs[bo], be[bo]
        bcm = np.maximum.accumulate(be)
        bholder = np.maximum.accumulate(np.where(be >= bcm, np.arange(len(be)), 0))
        upto = np.minimum(g1, np.where(np.isnan(ls), g1, ls))
        k = np.searchsorted(bs, upto, side="left") - 1
        ok = k >= 0
        kk = np.where(ok, k, 0)
        blocked = ok & (bcm[kk] > g0)
        idx = bo[bholder[kk]]
        names = blocking["name"].to_numpy(object)
        ops = blocking["op"].to_numpy(object)
        call = np.where(blocked, names[idx], None)
        call_op = np.where(blocked, ops[idx], None)
    # Causes as codes into _GAP_CAUSES: no text made per gap (a launch-bound trace has one per kernel).
    code = np.where(np.isnan(ls), 0, np.where(late, np.where(blocked, 1, 2),
                                              np.where(stream[nxt] != stream[prev], 3, 4)))
    cause = _GAP_CAUSES[code]
    sync = code == 1
    # (np.array(None): None as numpy's type stubs take it; an object array either way)
    call = np.where(sync, call, np.array(None))
    call_op = np.where(sync, call_op, np.array(None))
    names = d["name"].to_numpy(object)
    streams = d["stream"].to_numpy(object)     # once (Python ints made per row) for both sides

    def obj(a):
        # Plain object columns: letting pandas infer a string dtype copies every name again.
        return pd.Series(a, dtype=object)

    return pd.DataFrame(copy=False, data={     # its own arrays: not copied into blocks
        "device": obj(np.full(len(nxt), dev, dtype=object)), "start_us": g0, "end_us": g1,
        "duration_us": g1 - g0, "cause": obj(cause),
        "before": obj(names[prev]), "before_stream": streams[prev],
        "after": obj(names[nxt]), "after_kind": obj(d["kind"].to_numpy(object)[nxt]),
        "after_stream": streams[nxt], "after_op": obj(d["op"].to_numpy(object)[nxt]),
        "after_launch_start_us": ls, "blocking_call": obj(call), "blocking_op": obj(call_op),
    })


def overlap_table(acts: pd.DataFrame) -> pd.DataFrame:
    """How long each pair of streams of a device ran at the same time.

    Columns: device, stream_a, stream_b, busy_a_us, busy_b_us, overlap_us, share_of_a,
    share_of_b (the overlap as a share of each stream's busy time).

    >>> overlap_table(activities(cs.kernels, cs.copies))[["stream_a", "stream_b", "overlap_us"]]
       stream_a  stream_b  overlap_us
    0         7        38       0.000
    1         7        42       0.000
    2        38        42    5379.321
    """
    rows = []
    for dev, d in acts.groupby("device", sort=True):
        by = {s: (g["start_us"].to_numpy(float), g["end_us"].to_numpy(float))
              for s, g in d.groupby("stream", sort=True)}
        keys = list(by)
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                la, lb = union_length(*by[a]), union_length(*by[b])
                ov = intersection_length(by[a], by[b])
                rows.append({"device": dev, "stream_a": a, "stream_b": b, "busy_a_us": la,
                             "busy_b_us": lb, "overlap_us": ov,
                             "share_of_a": ov / la if la else np.nan,
                             "share_of_b": ov / lb if lb else np.nan})
    return pd.DataFrame(rows, columns=["device", "stream_a", "stream_b", "busy_a_us", "busy_b_us",
                                       "overlap_us", "share_of_a", "share_of_b"])


def gpu_busy_share(dev: dict):
    """A device's busy share as the first screen shows it: of the wall time when known (never
    above 1: a wall time shorter than the GPU's active window gives way to it), else of the active
    window.

    >>> gpu_busy_share({"busy_share": 0.93, "wall_busy_share": 0.40})
    0.4
    """
    w, b = dev.get("wall_busy_share"), dev.get("busy_share")
    if w is not None and w == w:
        return min(float(w), float(b)) if b is not None and b == b else float(w)
    return b


def gpu_busy_note(dev: dict) -> str:
    """What the GPU-busy figure is a share of, in words (the view's tooltip)."""
    w, b = dev.get("wall_busy_share"), dev.get("busy_share")
    if w is not None and w == w:
        return (f"union of kernel and copy time over the region's wall time; {b:.1%} of the active window "
                "(first to last GPU activity)" if b is not None and b == b else
                "union of kernel and copy time over the region's wall time")
    return "union of kernel and copy time over the active window (first to last GPU activity): no wall time recorded"


def host_in_gaps(ops: pd.DataFrame, gaps: pd.DataFrame, top: int = 3) -> dict:
    """What the host did while the GPU idled: how much of the idle gaps the recorded CPU ops
    cover, how much no op covers (Python or other host code the profiler does not record: numpy,
    JAX's dispatch), and the outermost ops that cover the most.

    Returns ``{"idle_us", "covered_us", "uncovered_us", "top_ops": [{"op", "us"}]}``.

    >>> host_in_gaps(rep.ops, rep.gaps)["uncovered_us"]             # doctest: +SKIP
    """
    out: dict = {"idle_us": 0.0, "covered_us": 0.0, "uncovered_us": 0.0, "top_ops": []}
    if gaps is None or not len(gaps):
        return out
    gs, ge = merge_intervals(gaps["start_us"], gaps["end_us"])
    out["idle_us"] = float((ge - gs).sum())
    if ops is None or not len(ops):
        out["uncovered_us"] = out["idle_us"]
        return out
    # Plain arrays of the four columns read (filtering and sorting the whole ops table copies
    # every column of every op: 534k of them in a large trace).
    keep = np.ones(len(ops), dtype=bool)
    if "cat" in ops:
        # cell/step markers span everything (tested once per distinct category)
        keep = ~by_distinct(ops["cat"], lambda c: "annotation" in str(c), bool, False)
    if not keep.any():
        out["uncovered_us"] = out["idle_us"]
        return out
    tid = ops["tid"].to_numpy()[keep]
    s = ops["start_us"].to_numpy(float)[keep]
    e = s + ops["duration_us"].fillna(0).to_numpy(float)[keep]
    names = ops["name"].to_numpy()[keep]
    # By thread, then start (the order of sort_values(["tid", "start_us"], kind="stable"): the
    # sums per name below add in that order).
    tcodes, tuniq = factorize(tid, use_na_sentinel=True)
    rank = np.append(pd.Categorical(tuniq, ordered=True).codes, len(tuniq))   # a missing tid last
    o = np.lexsort((s, rank[tcodes]))
    tc, s, e, names = tcodes[o], s[o], e[o], names[o]
    # Top level: an op starting at or after every earlier op of its thread has ended (the running
    # maximum skips a missing end, as pandas' cummax does).
    prev_end = np.full(len(s), np.nan)
    bounds = np.flatnonzero(np.r_[True, tc[1:] != tc[:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if tc[a] < 0:
            continue         # no thread: no earlier op to be inside of (groupby drops a missing key)
        cm = np.fmax.accumulate(e[a:b])
        cm[np.isnan(e[a:b])] = np.nan
        prev_end[a + 1:b] = cm[:-1]
    outer = ~(s < np.nan_to_num(prev_end, nan=-np.inf))
    s, e, names = s[outer], e[outer], pd.Series(names[outer]).astype(str).to_numpy()
    ms, me = merge_intervals(s, e)
    out["covered_us"] = float(covered_length(gs, ge, ms, me).sum())
    out["uncovered_us"] = max(out["idle_us"] - out["covered_us"], 0.0)
    each = covered_length(gs, ge, s, e)
    by = pd.Series(each).groupby(names).sum().sort_values(ascending=False)
    out["top_ops"] = [{"op": str(n), "us": float(v)} for n, v in by.head(top).items() if v > 0]
    return out


def launch_stats(acts: pd.DataFrame, gaps: pd.DataFrame) -> pd.DataFrame:
    """Per device: how fast work was launched and how it compares to the kernels' length.

    Columns: device, launches (kernels + copies), kernels, window_us, launches_per_ms,
    median_kernel_us, median_gap_us (idle time before each activity, 0 when it started while the
    GPU was busy), median_launch_call_us (CPU cost of one launch call), median_launch_interval_us
    (host time between consecutive launch calls), graph_kernels (kernels from CUDA-graph replays),
    graph_launches, idle_host_us / idle_sync_us / idle_streams_us / idle_queued_us /
    idle_unknown_us (gap time by cause).

    >>> a = activities(before.kernels, before.copies)
    >>> round(float(launch_stats(a, gaps_table(a)).iloc[0]["launches_per_ms"]), 1)
    77.6
    """
    rows = []
    for dev, d in acts.groupby("device", sort=True):
        s = d["start_us"].to_numpy(float)
        if not (s[1:] >= s[:-1]).all():       # activities() sorts them already
            d = d.sort_values("start_us", kind="stable")
        s, e = d["start_us"].to_numpy(float), d["end_us"].to_numpy(float)
        cm = np.maximum.accumulate(e)
        idle_before = np.maximum(0.0, s[1:] - cm[:-1])
        # (only the columns read: the activities are a row per launch)
        k = d.loc[d["kind"] == "kernel", ["duration_us", "graph_launch", "launch_start_us", "launch_end_us"]]
        win = float(e.max() - s.min())
        own = k[~k["graph_launch"]]
        calls = (d[["launch_start_us", "launch_api"]].drop_duplicates()
                 if len(d) else d)  # a graph replay is one call for many kernels
        ls = np.sort(calls["launch_start_us"].dropna().to_numpy(float))
        g = gaps.loc[gaps["device"] == dev, ["cause", "duration_us"]] if len(gaps) else gaps
        row = {
            "device": dev, "launches": len(d), "kernels": len(k), "window_us": win,
            "launches_per_ms": len(d) / (win / 1e3) if win > 0 else np.nan,
            "median_kernel_us": float(k["duration_us"].median()) if len(k) else np.nan,
            "median_gap_us": float(np.median(idle_before)) if len(idle_before) else np.nan,
            "median_launch_call_us": float((own["launch_end_us"] - own["launch_start_us"]).median())
            if len(own) else np.nan,
            "median_launch_interval_us": float(np.median(np.diff(ls))) if len(ls) > 1 else np.nan,
            "graph_kernels": int(k["graph_launch"].sum()),
            "graph_launches": int(k.loc[k["graph_launch"], "launch_start_us"].nunique()),
        }
        # Each cause's rows picked by code (one pass over the causes' text, not one per cause).
        codes, uniq = factorize(g["cause"]) if len(g) else (np.zeros(0, np.int64), np.zeros(0, dtype=object))
        for c in CAUSES:
            at = [i for i, u in enumerate(uniq.tolist()) if u == c]
            row[f"idle_{c}_us"] = float(g["duration_us"][np.isin(codes, at)].sum()) if len(g) else 0.0
        rows.append(row)
    cols = ["device", "launches", "kernels", "window_us", "launches_per_ms", "median_kernel_us",
            "median_gap_us", "median_launch_call_us", "median_launch_interval_us", "graph_kernels",
            "graph_launches"] + [f"idle_{c}_us" for c in CAUSES]
    return pd.DataFrame(rows, columns=cols)


def timeline(report) -> Timeline:
    """All timeline tables of a report (``report.timeline`` caches this).

    >>> tl = timeline(ks.load("launch_bound.pt.trace.json.gz"))
    >>> round(tl.device()["busy_share"], 3)
    0.071
    """
    acts = activities(report.kernels, report.copies)
    wall = report.wall_time_us
    blocking = host_blocking(report.syncs, report.copies, report.ops)
    busy = busy_table(acts, wall)
    gaps = gaps_table(acts, blocking)
    window = {"wall_us": wall, "span_us": report.meta.get("span_us")}
    if len(acts):
        window.update(start_us=float(acts["start_us"].min()), end_us=float(acts["end_us"].max()))
        window["active_us"] = window["end_us"] - window["start_us"]
        # The trace clock starts at the recorded region's start (see trace.model).
        window["lead_in_us"] = window["start_us"]
    return Timeline(activities=acts, busy=busy, gaps=gaps, overlap=overlap_table(acts),
                    blocking=blocking, launch_stats=launch_stats(acts, gaps), window=window)
