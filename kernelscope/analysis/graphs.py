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

