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
    start = pd.to_numeric(ops["start_us"], errors="coerce").to_numpy(dtype=float)
    dur = np.nan_to_num(pd.to_numeric(ops["duration_us"], errors="coerce").to_numpy(dtype=float), nan=0.0)
    end = start + dur
    tid = ops["tid"].astype(str).to_numpy() if "tid" in ops.columns else np.full(n, "", dtype=object)
    names = ops["name"].astype(str).to_numpy()
    # Per thread by start; at equal starts the longer op encloses the shorter.
    order = np.lexsort((-dur, start, tid))
    # Plain lists in the loop: indexing numpy arrays element by element costs 3-4x as much.
    st, en, nm, td = start.tolist(), end.tolist(), names.tolist(), tid.tolist()
    par, dep, out = [-1] * n, [0] * n, [True] * n
    stack: list[int] = []
    open_names: dict[str, int] = {}
    cur_tid = None
    for i in order.tolist():
        s_i = st[i]
        if s_i != s_i:        # no start time: not placed in the tree
            continue
        if td[i] != cur_tid:
            stack.clear()
            open_names.clear()
            cur_tid = td[i]
        while stack and s_i >= en[stack[-1]] - _EPS_US:
            j = stack.pop()
            c = open_names[nm[j]] - 1
            if c:
                open_names[nm[j]] = c
            else:
                del open_names[nm[j]]
        if stack:
            par[i] = stack[-1]
            dep[i] = len(stack)
        name = nm[i]
        out[i] = name not in open_names
        stack.append(i)
        open_names[name] = open_names.get(name, 0) + 1
    parent = np.array(par, dtype=np.int64)
    depth = np.array(dep, dtype=np.int64)
    outer = np.array(out, dtype=bool)
    child = np.zeros(n)
    has = parent >= 0
    np.add.at(child, parent[has], dur[has])
    self_us = np.maximum(dur - child, 0.0)
    return pd.DataFrame({"parent": parent, "depth": depth, "self_us": self_us, "outermost_of_name": outer},
                        index=ops.index)


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
    count = np.zeros(n)
    gpu = np.zeros(n)
    if len(kernels) and "op_index" in kernels.columns:
        idx = pd.to_numeric(kernels["op_index"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        d = np.nan_to_num(pd.to_numeric(kernels["duration_us"], errors="coerce").to_numpy(dtype=float), nan=0.0)
        ok = np.isfinite(idx) & (idx >= 0) & (idx < n)
        np.add.at(count, idx[ok].astype(np.int64), 1)
        np.add.at(gpu, idx[ok].astype(np.int64), d[ok])
    inc_count, inc_gpu = count.copy(), gpu.copy()
    parent = tree["parent"].to_numpy()
    depth = tree["depth"].to_numpy()
    # Deepest first: each level adds its (already inclusive) totals into its parents.
    for level in range(int(depth.max()) if n else 0, 0, -1):
        rows = np.flatnonzero(depth == level)
        np.add.at(inc_count, parent[rows], inc_count[rows])
        np.add.at(inc_gpu, parent[rows], inc_gpu[rows])
    return pd.DataFrame({"kernels": count.astype(np.int64), "gpu_us": gpu,
                         "kernels_inclusive": inc_count.astype(np.int64), "gpu_inclusive_us": inc_gpu},
                        index=ops.index)


def op_summary(ops: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """Per op name, costliest host time first: ``calls``, host time (``total_us``, nested ops
    counting in their parents too; ``self_us`` without them; ``mean_us``), and the GPU time of
    the kernels launched by the op itself (``kernels``, ``gpu_us``) or by it and the ops nested
    in it (``kernels_inclusive``, ``gpu_inclusive_us``; a recursive op's kernels count once).

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
    tree = op_tree(ops)
    gpu = op_gpu_time(ops, kernels, tree)
    frame = pd.concat([ops[["name", "duration_us"]], tree[["self_us", "outermost_of_name"]], gpu], axis=1)
    g = frame.groupby("name", sort=False)
    out = pd.DataFrame({"calls": g.size(), "total_us": g["duration_us"].sum(), "self_us": g["self_us"].sum(),
                        "mean_us": g["duration_us"].mean(), "kernels": g["kernels"].sum(), "gpu_us": g["gpu_us"].sum()})
    outer = frame[frame["outermost_of_name"]].groupby("name", sort=False)
    out["kernels_inclusive"] = outer["kernels_inclusive"].sum().reindex(out.index).fillna(0).astype(np.int64)
    out["gpu_inclusive_us"] = outer["gpu_inclusive_us"].sum().reindex(out.index).fillna(0.0)
    out = out.sort_values("total_us", ascending=False, kind="stable").reset_index()
    return out[cols]
