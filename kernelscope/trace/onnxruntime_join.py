"""The nodes of an ONNX Runtime session joined to the CUDA kernels CUPTI recorded while it ran.

The stock ``onnxruntime-gpu`` wheel's profile (``SessionOptions.enable_profiling``) says which
execution provider ran each node and for how long on the host, but not which kernels a node
launched (that needs an onnxruntime built with ``--enable_cuda_profiling``). torch.profiler's
CUPTI recording of the same process has every kernel ONNX Runtime launched, with its launch
call, grid, block and registers, but no op above it. This joins the two on one clock:

- the profile's times count from the session's profiling start, which
  ``InferenceSession.get_profiling_start_time_ns()`` gives on the system clock, the clock a
  Kineto trace's ``time_origin_ns`` is on;
- each node run becomes a CPU op (cat ``ort_node``: its name, the provider as
  ``kernel_backend``, shapes and types);
- a kernel or copy whose launch call falls inside a node run (on the launching thread where
  ONNX Runtime's thread id is the trace's, else any) gets that node: ``op`` its op type
  (``Conv``, ``Gemm``...), ``ort_node`` the node's name, ``op_index`` its row, ``provider`` its
  execution provider.

Kernels torch's own ops launched keep their aten op. A kernel's backend still comes from its
name (cuDNN, cuBLAS, ...), so cuDNN's kernels under an ORT ``Conv`` node read cuDNN and ORT's
own kernels (``onnxruntime::cuda::...``) read ``ORT CUDA``.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from kernelscope.errors import TraceError
from kernelscope.jsonable import whole
from kernelscope.trace.model import OP_COLUMNS, frame
from kernelscope.trace.onnxruntime import model_runs, node_fields, read_onnxruntime_bytes, sorted_events


def join_session(trace, events, start_ns, label="<onnxruntime profile>"):
    """``trace`` (a CUPTI recording) with the nodes of an ONNX Runtime profile's ``events``
    (the decoded JSON list) placed over the kernels they launched; ``start_ns`` is
    ``get_profiling_start_time_ns()`` of the session that wrote them.

    >>> from kernelscope.trace.model import Trace
    >>> join_session(Trace.empty({"time_origin_ns": 0}), [], 1)
    Traceback (most recent call last):
    ...
    kernelscope.errors.TraceError: <onnxruntime profile>: joining ONNX Runtime nodes needs ...
    """
    start = whole(start_ns)
    origin = whole(trace.meta.get("time_origin_ns"))
    if start is None or not origin:
        raise TraceError(label, "joining ONNX Runtime nodes needs the session's profiling start "
                         "(get_profiling_start_time_ns()) and a trace with a time origin")
    notes: list = []
    _, nodes, _ = sorted_events(events, notes)
    shift = (start - origin) / 1000.0          # profile time + shift = trace time, in us
    # Node runs inside the recording only: a session's earlier runs (warm-up) are in its profile too.
    span = trace.meta.get("span_us") or 0.0
    nodes = [n for n in nodes if (n[0].get("args") or {}).get("op_name") is not None
             and n[1] + n[2] + shift >= 0 and n[1] + shift <= span]
    if not nodes:
        raise TraceError(label, "the ONNX Runtime profile has no node run inside the recording")
    runs, threads = model_runs([]), {}
    orow: dict = {c: [] for c in OP_COLUMNS}
    spans = []
    for e, ts, dur, args in sorted(nodes, key=lambda n: n[1]):
        node = node_fields(e, ts + shift, dur, args, threads, runs)
        spans.append((node["start_us"], node["start_us"] + dur, node["tid"], len(trace.ops) + len(orow["name"]),
                      node["op"], node["provider"], node["name"]))
        for c in OP_COLUMNS:
            orow[c].append({**node, "cat": "ort_node", "pid": None, "kernel_backend": node["provider"]}.get(c))
    added = frame(orow, OP_COLUMNS)
    ops = pd.concat([trace.ops, added], ignore_index=True) if len(trace.ops) else added
    kernels, placed_k = _place(trace.kernels, spans)
    copies, placed_c = _place(trace.copies, spans)
    meta = {**trace.meta, "notes": [*trace.meta.get("notes", []), *notes,
            f"ONNX Runtime's profile ({label}) joined: {len(nodes):,} node runs; {placed_k:,} kernels and "
            f"{placed_c:,} copies launched inside one have its node as their op (op type, provider)"],
            "onnxruntime_joined": {"profile": str(label), "start_ns": start, "node_runs": len(nodes),
                                   "kernels": placed_k, "copies": placed_c}}
    return dataclasses.replace(trace, kernels=kernels, copies=copies, ops=ops, meta=meta)


def _place(table, spans):
    """``table`` with ``op``/``op_index``/``provider``/``ort_node`` set for the rows (without an op)
    whose launch call starts inside a node run; and how many were placed."""
    out = table.copy()
    for c in ("provider", "ort_node"):
        if c not in out:
            out[c] = pd.Series([None] * len(out), dtype=object, index=out.index)
    if not len(out) or "launch_start_us" not in out:
        return out, 0
    starts = np.array([s[0] for s in spans])
    launch = out["launch_start_us"].to_numpy(dtype=float, na_value=np.nan)
    tids = out["launch_tid"].astype(object).to_numpy() if "launch_tid" in out else [None] * len(out)
    free = out["op"].isna().to_numpy()
    hits = {}
    for i in np.flatnonzero(free & ~np.isnan(launch)):
        hit = _holder(spans, starts, launch[i], tids[i])
        if hit is not None:
            hits[out.index[i]] = hit
    if hits:
        idx = list(hits)
        out.loc[idx, "op"] = [spans[h][4] for h in hits.values()]
        out.loc[idx, "op_index"] = [spans[h][3] for h in hits.values()]
        out.loc[idx, "provider"] = [spans[h][5] for h in hits.values()]
        out.loc[idx, "ort_node"] = [spans[h][6] for h in hits.values()]
    return out, len(hits)


def _holder(spans, starts, t, tid):
    """The node run holding launch time ``t``: on the launching thread if one there does, else
    the latest started (nodes of one run follow each other on the caller's thread)."""
    last = int(np.searchsorted(starts, t, side="right")) - 1
    holding = [j for j in range(last, max(last - 8, -1), -1) if t <= spans[j][1]]
    same = [j for j in holding if tid is not None and spans[j][2] == str(tid)]
    return (same or holding or [None])[0]


def read_session_profile(path):
    """The decoded events of an ONNX Runtime profile file (``.json`` or ``.json.gz``), checked to be
    one (a :class:`~kernelscope.TraceError` naming the file otherwise)."""
    import msgspec

    from kernelscope.trace.files import read_bytes
    raw = read_bytes(path)
    read_onnxruntime_bytes(raw, str(path), [])          # validates, with the reader's own messages
    return msgspec.json.decode(raw)



