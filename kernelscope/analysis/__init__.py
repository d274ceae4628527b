"""Pure functions over a Trace's tables: backends, occupancy, timeline, findings, diff."""
from __future__ import annotations

import numpy as np
import pandas as pd

_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3


def analyze_kernels(trace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the kernels table with the analysis columns added, as a new frame; the launch-shapes
    table). Columns added: ``device``, ``device_type``, ``short_name``, ``backend``,
    ``tensor_cores``, ``backend_rule``, the producer and its knobs (``producer``, ``num_warps``,
    ``num_stages``, ``config``, ``spills``, ...: :mod:`kernelscope.analysis.producers`), the
    occupancy columns and ``shape`` (the launch's row of the shapes table,
    :mod:`kernelscope.analysis.shapes`).

    >>> k, shapes = analyze_kernels(ks.load("attention.pt.trace.json.gz").trace)
    >>> k[["short_name", "backend", "theoretical_occupancy"]].head(3)
                               short_name backend  theoretical_occupancy
    0  cuDNN flash attention fprop (sm90)   cuDNN                 0.1875
    1          cuBLAS GEMM 256x128 (sm90)  cuBLAS                 0.1875
    2     elementwise Mul (vectorized x8)    ATen                 1.0000
    """
    from kernelscope.analysis.backends import annotate_backends
    from kernelscope.analysis.devices import annotate_devices
    from kernelscope.analysis.shapes import annotate_occupancy, launch_shapes

    # A new frame (the trace's own table is left as read). Copy-on-write pandas (3 and later)
    # copies a column only when it is changed; older pandas needs the deep copy.
    k = annotate_devices(trace.kernels.copy(deep=not _COPY_ON_WRITE), trace.devices)
    k = annotate_backends(k, trace)
    from kernelscope.analysis.producers import annotate_producers
    k = annotate_producers(k, trace)
    codes, shapes = launch_shapes(k, trace.devices)
    k = annotate_occupancy(k, trace.devices, shapes=(codes, shapes))
    if "reported_occupancy" in k.columns:
        # A profiler's own theoretical occupancy (XLA's) fills in where ours cannot be computed.
        # (np.array(None): None as numpy's type stubs take it; an object array either way)
        ours = k["theoretical_occupancy"].notna()
        k["occupancy_source"] = np.where(ours, "kernelscope", np.where(
            k["reported_occupancy"].notna(), "XLA profiler (CUDA occupancy API on the recording GPU)", np.array(None)))
        k["theoretical_occupancy"] = k["theoretical_occupancy"].fillna(k["reported_occupancy"])
    counters = getattr(trace, "counters", None)
    if counters is not None and len(counters):
        from kernelscope.analysis.counters import annotate_counters
        k = annotate_counters(k, counters)
    return k, shapes


def annotate_kernels(trace) -> pd.DataFrame:
    """The kernels table with the analysis columns added (see :func:`analyze_kernels`).

    >>> annotate_kernels(ks.load("attention.pt.trace.json.gz").trace)["backend"].unique()
    array(['cuDNN', 'cuBLAS', 'ATen'], dtype=object)
    """
    return analyze_kernels(trace)[0]


def annotate_copies(trace) -> pd.DataFrame:
    """The copies table with ``device`` and ``device_type`` added (a new frame), labelled as
    the kernels are.

    >>> annotate_copies(ks.load("copies_streams.pt.trace.json.gz").trace)["device"].unique()
    array(['cuda:0'], dtype=object)
    """
    from kernelscope.analysis.devices import annotate_devices
    return annotate_devices(trace.copies.copy(deep=not _COPY_ON_WRITE), trace.devices)


def annotate(trace, ncu: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(kernels, copies, shapes): every column analysis adds to a trace's launches, in one place.
    Kernels as :func:`analyze_kernels` gives them, then Nsight Compute's measurements merged by
    name and launch order (``ncu_*`` columns, when ``ncu`` is given) and each kernel's top warp
    stall (when the trace holds stall samples); copies with their device label and, when the run
    sampled PM counters, the per-copy counter columns.

    >>> k, copies, shapes = annotate(ks.load("copies_streams.pt.trace.json.gz").trace)
    >>> sorted(set(copies["device"])), int(shapes["theoretical_occupancy"].notna().sum()) > 0
    (['cuda:0'], True)
    """
    kernels, shapes = analyze_kernels(trace)
    copies = annotate_copies(trace)
    if ncu is not None and len(ncu):
        from kernelscope.trace.ncu.export import merge_ncu
        kernels = merge_ncu(kernels, ncu)
        from kernelscope.analysis.shapes import CARVEOUT, annotate_occupancy, launch_shapes
        if CARVEOUT in kernels.columns and kernels[CARVEOUT].notna().any():
            # Nsight Compute measured the carveout the driver chose: those launches' occupancy is
            # computed with it, so that every shared-memory block limit shown is ncu's.
            codes, shapes = launch_shapes(kernels, trace.devices)
            kernels = annotate_occupancy(kernels, trace.devices, shapes=(codes, shapes))
    if len(trace.counters):
        from kernelscope.analysis.counters import annotate_counters
        copies = annotate_counters(copies, trace.counters)
    if len(trace.stalls):
        from kernelscope.analysis.stalls import annotate_top_stall
        kernels = annotate_top_stall(kernels, trace.stalls)
    return kernels, copies, shapes
