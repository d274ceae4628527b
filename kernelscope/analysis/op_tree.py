"""CPU ops as the call tree they were: each op's parent and depth on its thread, its self time,
and the GPU time of the kernels it launched itself (self) or through the ops nested in it
(inclusive), as TensorBoard's operator view counted them.

Nesting comes from the times alone (an op that starts inside another op of its thread, before
that one ends, is its child), so it holds for any reader's ops table. Kernels point at the
innermost op that launched them (``op_index``, the join of the reader).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import factorize, text_codes
from kernelscope.trace.model import float_values

TREE_COLUMNS = ["parent", "depth", "self_us", "outermost_of_name"]
# Times are float microseconds: an op that ends within this of its parent's end still nests.
_EPS_US = 1e-3


def op_tree(ops: pd.DataFrame) -> pd.DataFrame:
    """Per op (same index as ``ops``): ``parent`` (row position of the enclosing op, -1 for an
    outermost one), ``depth`` (0 outermost), ``self_us`` (host time not spent in nested ops) and
    ``outermost_of_name`` (no enclosing op has the same name: sums over these count each
    nested call of a recursive op once).

    >>> ops = pd.DataFrame({"name": ["step", "aten::mm", "aten::addmm"], "tid": [1, 1, 1],
    ...                     "start_us": [0.0, 1.0, 2.0], "duration_us": [10.0, 4.0, 2.0]})
    >>> op_tree(ops)[["parent", "depth", "self_us"]].values.tolist()
    [[-1.0, 0.0, 6.0], [0.0, 1.0, 2.0], [1.0, 2.0, 2.0]]
    """
    n = len(ops)
    if not n:
        return pd.DataFrame({"parent": np.zeros(0, np.int64), "depth": np.zeros(0, np.int64), "self_us": np.zeros(0),
                             "outermost_of_name": np.zeros(0, bool)}, index=ops.index)
    start = float_values(ops["start_us"])
    dur = np.nan_to_num(float_values(ops["duration_us"]), nan=0.0)
    # Threads told apart by their text (7 and "7" are one thread).
    tid = text_codes(ops["tid"]) if "tid" in ops.columns else np.zeros(n, np.int64)
    placed = np.flatnonzero(~np.isnan(start))   # an op with no start time is not in the tree
    # Per thread by start; at equal starts the longer op encloses the shorter.
    got: list = []
    order = _thread_order(placed, tid, start, dur, got)
    t_s, s_s, d_s = got or (tid[order], start[order], dur[order])     # the columns in that order
    del tid, placed, got     # freed as soon as they are spent: 2.7M ops hold ~8 bytes per op each
    par_sorted = _open_parent(s_s, s_s + d_s, t_s)
    del t_s, s_s, d_s
    # The walk with a stack this replaces (and gives the same answers as, on every real trace:
    # tests/analysis/test_op_tree.py): an op's parent is the nearest op before it, on its thread,
    # still open when it starts (ending more than _EPS_US after its start).
    depth_sorted = _depth(par_sorted)
    nested = par_sorted >= 0
    # Names matter only below another op (a flat trace has none to compare).
    outer_sorted = ~_same_name_above(par_sorted, text_codes(ops["name"], use_na_sentinel=False)[order]) if nested.any() \
        else np.ones(len(order), dtype=bool)
    parent = np.full(n, -1, dtype=np.int64)
    parent[order] = np.where(par_sorted >= 0, order[np.maximum(par_sorted, 0)], -1)
    depth = np.zeros(n, dtype=np.int64)
    depth[order] = depth_sorted
    outer = np.ones(n, dtype=bool)
    outer[order] = outer_sorted
    has = parent >= 0
    # bincount adds in row order, as np.add.at does (the same sums), in one pass.
    child = np.bincount(parent[has], weights=dur[has], minlength=n).astype(float, copy=False)
    self_us = np.maximum(dur - child, 0.0)
    return pd.DataFrame({"parent": parent, "depth": depth, "self_us": self_us, "outermost_of_name": outer},
                        index=ops.index)


def _thread_order(placed: np.ndarray, tid: np.ndarray, start: np.ndarray, dur: np.ndarray,
                  gathered: list | None = None) -> np.ndarray:
    """``placed`` sorted by (thread, start, longer first), stably: the ops grouped by thread, then
    sorted only where a thread's ops are not in that order already (a trace writes each
    thread's ops by start: most often one stable pass by thread is the whole sort).
    ``gathered``: a list that receives ``tid``, ``start`` and ``dur`` in that order, when the one
    pass was the sort (the caller then need not take them again: 2.7M ops take ~0.1 s).

    >>> _thread_order(np.arange(4), np.array([1, 0, 1, 0]), np.array([0.0, 5.0, 2.0, 1.0]),
    ...               np.array([1.0, 1.0, 1.0, 1.0])).tolist()
    [3, 1, 0, 2]
    """
    order = placed[np.argsort(tid[placed], kind="stable")]
    t, s, d = tid[order], start[order], dur[order]
    same = t[1:] == t[:-1]
    if ((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] <= d[:-1])) | ~same).all():
        if gathered is not None:
            gathered.extend((t, s, d))
        return order
    return placed[np.lexsort((-dur[placed], start[placed], tid[placed]))]


def _open_parent(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For ops sorted by (thread, start, longer first): the sorted position of each one's
    parent (-1: none), the nearest earlier op of its thread still open at its start, as a walk
    with a stack finds it (pop while the top ends by the new op's start), for all ops at once.

    A candidate that has closed is replaced by its own candidate: every op between the two
    closed before the candidate started (the walk popped it), so before this op starts too,
    and the gap to the parent closes in O(log n) rounds of array operations.

    >>> _open_parent(np.array([0.0, 1.0, 5.0, 0.0]), np.array([10.0, 4.0, 9.0, 3.0]),
    ...              np.array([0, 0, 0, 1])).tolist()
    [-1, 0, 0, -1]
    """
    n = len(start)
    cand = np.arange(-1, n - 1)
    if n:
        cand[np.flatnonzero(np.r_[True, group[1:] != group[:-1]])] = -1
    close = end - _EPS_US
    # The ops whose candidate (the op before, on their thread) has closed: compared shifted,
    # not gathered.
    todo = np.flatnonzero((cand >= 0) & np.r_[False, start[1:] >= close[:-1]])
    # An op that starts after every earlier op of its thread has closed has no parent: the walk
    # pops the whole stack. Settled at once (most ops of a flat trace), the jumping below is left
    # with the ops that sit inside an open one.
    if len(todo):
        firsts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        latest = np.empty(n)
        for a, b in zip(firsts.tolist(), np.r_[firsts[1:], n].tolist()):
            latest[a:b] = np.maximum.accumulate(close[a:b])     # the latest close so far, per thread
        top = start[todo] >= latest[todo - 1]                    # todo's ops are never a thread's first
        cand[todo[top]] = -1
        todo = todo[~top]
    while len(todo):
        up = cand[cand[todo]]
        cand[todo] = up
        keep = up >= 0
        todo, up = todo[keep], up[keep]
        todo = todo[start[todo] >= close[up]]
    return cand


def _depth(parent: np.ndarray) -> np.ndarray:
    """How many ancestors each op has (``parent``: positions, -1 at the top), by pointer
    doubling: each round adds the distance to the node above and jumps twice as far.

    >>> _depth(np.array([-1, 0, 1, 0, -1, 2])).tolist()
    [0, 1, 2, 1, 0, 3]
    """
    depth = (parent >= 0).astype(np.int64)
    up = parent.copy()
    live = np.flatnonzero(up >= 0)
    while len(live):
        a = up[live]
        depth[live] = depth[live] + depth[a]
        up[live] = up[a]
        live = live[up[live] >= 0]
    return depth


def _same_name_above(parent: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Whether an op has an ancestor of its own name (a recursive op's nested calls)."""
    found = np.zeros(len(parent), dtype=bool)
    idx = np.flatnonzero(parent >= 0)
    anc = parent[idx]
    while len(idx):
        hit = names[anc] == names[idx]
        found[idx[hit]] = True
        keep = ~hit & (parent[anc] >= 0)
        idx, anc = idx[keep], parent[anc[keep]]
    return found


def op_gpu_time(ops: pd.DataFrame, kernels: pd.DataFrame, tree: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per op (same index as ``ops``): ``kernels`` and ``gpu_us`` of the kernels it launched
    itself, and ``kernels_inclusive`` / ``gpu_inclusive_us`` with those of every op nested in it.

    >>> ops = pd.DataFrame({"name": ["step", "aten::mm"], "tid": [1, 1], "start_us": [0.0, 1.0],
    ...                     "duration_us": [10.0, 4.0]})
    >>> k = pd.DataFrame({"op_index": [1, 1, 0], "duration_us": [5.0, 3.0, 1.0]})
    >>> op_gpu_time(ops, k)[["gpu_us", "gpu_inclusive_us"]].values.tolist()
    [[1.0, 9.0], [8.0, 8.0]]
    """
    tree = op_tree(ops) if tree is None else tree
    n = len(ops)
    count = np.zeros(n, np.int64)      # counts as integers: summed exactly
    gpu = np.zeros(n)
    if len(kernels) and "op_index" in kernels.columns:
        idx = float_values(kernels["op_index"])
        d = np.nan_to_num(float_values(kernels["duration_us"]), nan=0.0)
        ok = np.isfinite(idx) & (idx >= 0) & (idx < n)
        at = idx[ok].astype(np.int64)
        # bincount adds in row order, as np.add.at does, in one pass.
        count = np.bincount(at, minlength=n).astype(np.int64, copy=False)
        gpu = np.bincount(at, weights=d[ok], minlength=n).astype(float, copy=False)   # int when empty
    inc_count, inc_gpu = count.copy(), gpu.copy()
    parent = tree["parent"].to_numpy()
    depth = tree["depth"].to_numpy()
    # Deepest first: each level adds its (already inclusive) totals into its parents.
    for level in range(int(depth.max()) if n else 0, 0, -1):
        rows = np.flatnonzero(depth == level)
        np.add.at(inc_count, parent[rows], inc_count[rows])
        np.add.at(inc_gpu, parent[rows], inc_gpu[rows])
    # The arrays themselves, not copies (2.7M ops: ~30 bytes an op saved at the peak).
    return pd.DataFrame({"kernels": count, "gpu_us": gpu, "kernels_inclusive": inc_count,
                         "gpu_inclusive_us": inc_gpu}, index=ops.index, copy=False)


def op_summary(ops: pd.DataFrame, kernels: pd.DataFrame, tree: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per op name, costliest host time first: ``calls``, host time (``total_us``, nested ops
    counting in their parents too; ``self_us`` without them; ``mean_us``), and the GPU time of
    the kernels launched by the op itself (``kernels``, ``gpu_us``) or by it and the ops nested
    in it (``kernels_inclusive``, ``gpu_inclusive_us``; a recursive op's kernels count once).
    ``tree``: :func:`op_tree` of ``ops``, when already computed.

    >>> op_summary(rep.ops, rep.kernels).iloc[0][["name", "calls", "total_us", "gpu_us"]]
    name        aten::div
    calls               4
    total_us     4703.878
    gpu_us          5.248
    Name: 0, dtype: object
    """
    cols = ["name", "calls", "total_us", "self_us", "mean_us", "kernels", "gpu_us",
            "kernels_inclusive", "gpu_inclusive_us"]
    if not len(ops):
        return pd.DataFrame(columns=cols)
    ops = ops.reset_index(drop=True)
    tree = op_tree(ops) if tree is None else tree.reset_index(drop=True)
    gpu = op_gpu_time(ops, kernels, tree)
    # One frame over the columns' own arrays (not a copy of each: 2.7M ops are ~60 bytes an op).
    frame = pd.DataFrame({"duration_us": ops["duration_us"].to_numpy(),
                          **{c: tree[c].to_numpy() for c in ("self_us", "outermost_of_name")},
                          **{c: gpu[c].to_numpy() for c in gpu.columns}}, copy=False)
    del gpu
    # Grouped by the names' codes (one factorize for both groupings); a missing name is dropped,
    # as groupby("name") drops it.
    codes, uniq = factorize(ops["name"], use_na_sentinel=True)
    if not (codes >= 0).all():
        frame, codes = frame[codes >= 0], codes[codes >= 0]
    g = frame.groupby(codes, sort=False)
    sums = g[["duration_us", "self_us", "kernels", "gpu_us"]].sum()     # one pass for the four
    out = pd.DataFrame({"calls": g.size(), "total_us": sums["duration_us"], "self_us": sums["self_us"],
                        "mean_us": g["duration_us"].mean(), "kernels": sums["kernels"], "gpu_us": sums["gpu_us"]})
    m = frame["outermost_of_name"].to_numpy(dtype=bool)
    inc = frame[["kernels_inclusive", "gpu_inclusive_us"]]     # only the two summed: the rows cut from them
    inc = (inc if m.all() else inc[m]).groupby(codes if m.all() else codes[m], sort=False).sum().reindex(out.index)
    out["kernels_inclusive"] = inc["kernels_inclusive"].fillna(0).astype(np.int64)
    out["gpu_inclusive_us"] = inc["gpu_inclusive_us"].fillna(0.0)
    out.index = pd.Index(np.asarray(uniq, dtype=object)[out.index.to_numpy()], name="name")   # typed as groupby's
    out = out.sort_values("total_us", ascending=False, kind="stable").reset_index()
    return out[cols]

