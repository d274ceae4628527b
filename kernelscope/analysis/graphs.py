"""CUDA graphs in a recording: where streams were captured, and what each replay ran.

A launch made while its stream is capturing adds a node to a graph and runs nothing; the graph's
kernels run later, each time ``cudaGraphLaunch`` replays it, with no CPU op of their own.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.trace.model import CAPTURE_BEGIN_CALLS, CAPTURE_END_CALLS


def capture_windows(runtime: pd.DataFrame) -> pd.DataFrame:
    """The stream captures a recording holds: per capture its thread, the begin call's start and
    the end call's end (``tid``, ``start_us``, ``end_us``), in time order. A capture still open
    when the recording ends runs to the end of the recording.

    >>> capture_windows(rep.trace.runtime)   # the MLP step captured no graph
    Empty DataFrame
    Columns: [tid, start_us, end_us]
    Index: []
    """
    names = runtime["name"].to_numpy(dtype=object)
    begin = np.isin(names, CAPTURE_BEGIN_CALLS)
    end = np.isin(names, CAPTURE_END_CALLS)
    rows = []
    if begin.any():
        ev = runtime.loc[begin | end, ["name", "tid", "start_us", "duration_us"]].sort_values("start_us")
        last = float((runtime["start_us"] + runtime["duration_us"]).max())
        open_at: dict = {}
        for name, tid, start, dur in ev.itertuples(index=False):
            if name in CAPTURE_BEGIN_CALLS:
                open_at.setdefault(tid, float(start))
            elif tid in open_at:
                rows.append((tid, open_at.pop(tid), float(start + dur)))
        rows += [(tid, s, last) for tid, s in open_at.items()]
    out = pd.DataFrame(rows, columns=["tid", "start_us", "end_us"])
    return out.sort_values("start_us", ignore_index=True)


def in_capture(runtime: pd.DataFrame, windows: pd.DataFrame | None = None) -> np.ndarray:
    """Which runtime calls were made inside a stream capture on their own thread (a boolean per
    row of ``runtime``).

    >>> int(in_capture(rep.trace.runtime).sum())
    0
    """
    windows = capture_windows(runtime) if windows is None else windows
    out = np.zeros(len(runtime), dtype=bool)
    tids = runtime["tid"].to_numpy(dtype=object)
    starts = runtime["start_us"].to_numpy(dtype=float)
    for tid, s, e in windows.itertuples(index=False):
        out |= (tids == tid) & (starts >= s) & (starts <= e)
    return out


# -- what each replay ran, and what captured it ------------------------------------------------
# The kind of graph node a launch call made while its stream captured.
def launch_kind(api) -> str | None:
    """``kernel``, ``memset`` or ``memcpy`` for a launch call that adds a graph node, else None.

    >>> launch_kind("cuLaunchKernelEx"), launch_kind("cudaMemsetAsync"), launch_kind("cudaEventRecord")
    ('kernel', 'memset', None)
    """
    api = str(api)
    if "LaunchKernel" in api or "LaunchCooperativeKernel" in api:
        return "kernel"
    if "Memset" in api:
        return "memset"
    if "Memcpy" in api:
        return "memcpy"
    return None


# Kernel-name families an op's kernels must belong to, for the ops whose kernels have telling
# names: a captured launch placed on a kernel of another family is a wrong placement.
_GEMM = r"gemm|nvjet|cutlass|xmma|cublas|gemv|splitk|sm\d+_|s\d+gemm|hgemm|ampere|hopper|matmul|dot"
NAME_FAMILIES = {
    "aten::mm": _GEMM, "aten::addmm": _GEMM, "aten::bmm": _GEMM, "aten::baddbmm": _GEMM,
    "aten::matmul": _GEMM, "aten::linear": _GEMM, "aten::_scaled_mm": _GEMM,
    "aten::layer_norm": r"norm", "aten::native_layer_norm": r"norm", "aten::_fused_rms_norm": r"norm",
    "aten::_softmax": r"softmax", "aten::softmax": r"softmax",
    "aten::convolution": r"conv|cudnn|implicit|winograd|fft|xmma|sm\d+_|nchw|nhwc|gemm",
    "aten::cudnn_convolution": r"conv|cudnn|implicit|winograd|fft|xmma|sm\d+_|nchw|nhwc|gemm",
    "aten::_scaled_dot_product_flash_attention": r"flash|fmha|attention|sdpa",
    "aten::_scaled_dot_product_cudnn_attention": r"cudnn|flash|fmha|sdpa",
    "aten::_scaled_dot_product_efficient_attention": r"fmha|attention|efficient|cutlass",
}


def name_fits(op, kernel_name) -> bool:
    """Whether a kernel's name fits the op said to launch it (True for ops without a family).

    >>> name_fits("aten::mm", "nvjet_sm90_tst_64x64_64x13_4x2_h_bz_TNT"), name_fits("aten::mm", "softmax_warp_forward")
    (True, False)
    """
    import re
    fam = NAME_FAMILIES.get(str(op))
    return fam is None or re.search(fam, str(kernel_name), re.IGNORECASE) is not None


GRAPH_COLUMNS = ["graph", "captured", "replays", "kernels_per_replay", "replay_us", "kernel_us_per_replay",
                 "total_us", "capture_us", "attributed", "ops", "unmatched"]


def graph_table(trace, kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per CUDA graph the recording replayed: where it was captured (in the recording,
    or before it, as the graph watch saw), its replays, kernels per replay, the GPU time a
    replay spans (median, first kernel start to last kernel end) and its kernels' time, the
    capture's own cost (the capturing thread's time from the capture's start to its end, and for
    the watch's records to the instantiated graph), the share of its kernels given the op that
    captured them, its top captured ops, and why any kernel is unmatched.

    >>> len(graph_table(rep.trace, rep.kernels))   # the MLP step replayed no graph
    0
    """
    if "graph" not in kernels.columns:
        return pd.DataFrame(columns=GRAPH_COLUMNS)
    from kernelscope.analysis.graph_match import trace_captures, watch_captures
    cost = {c.label: (c.capture_us, "before the recording (graph watch)" if not getattr(c, "in_region", False)
                      else "in the recording (graph watch)")
            for c in watch_captures(trace.meta)}
    cost.update({c.label: (c.capture_us, "in the recording") for c in trace_captures(trace)})
    g = kernels[kernels["graph_launch"].fillna(False).astype(bool)].copy()
    if not len(g):
        return pd.DataFrame(columns=GRAPH_COLUMNS)
    n_per = g.groupby("correlation")["name"].transform("size")
    g["label"] = g["graph"].where(g["graph"].notna(), "unattributed graph (" + n_per.astype(str) + " kernels)")
    g["end_us"] = g["start_us"] + g["duration_us"]
    rows = []
    for label, part in g.groupby("label", sort=False):
        per = part.groupby("correlation").agg(first=("start_us", "min"), last=("end_us", "max"),
                                              n=("name", "size"), busy=("duration_us", "sum"))
        ops = part.loc[part["graph_unmatched"].isna(), "op"].dropna().value_counts().head(3)
        why = part["graph_unmatched"].dropna()
        c_us, where = cost.get(label, (None, "unknown: not attributed"))
        rows.append({"graph": label, "captured": where, "replays": len(per),
                     "kernels_per_replay": int(per["n"].median()),
                     "replay_us": float((per["last"] - per["first"]).median()),
                     "kernel_us_per_replay": float(per["busy"].median()),
                     "total_us": float(part["duration_us"].sum()), "capture_us": c_us,
                     "attributed": float(part["graph_unmatched"].isna().mean()) if label in cost else 0.0,
                     "ops": ", ".join(f"{o} ×{n}" for o, n in ops.items()),
                     "unmatched": why.iloc[0] if len(why) else None})
    out = pd.DataFrame(rows, columns=GRAPH_COLUMNS)
    return out.sort_values("total_us", ascending=False, ignore_index=True)
