"""Pure functions over a Trace's tables: backends, occupancy, timeline, findings, diff."""
from __future__ import annotations

import pandas as pd


def annotate_kernels(trace) -> pd.DataFrame:
    """The kernels table with DESIGN.md's analysis columns added (a new frame).

    >>> k = annotate_kernels(ks.load("attention.pt.trace.json.gz").trace)   # doctest: +SKIP
    >>> k[["short_name", "backend", "theoretical_occupancy"]]                 # doctest: +SKIP
    """
    from .backends import annotate_backends
    from .occupancy import annotate_occupancy

    k = trace.kernels.copy()
    dev_type = dict(zip(trace.devices["index"].tolist(), trace.devices["device_type"].tolist()))
    k["device"] = [
        f"{'rocm' if dev_type.get(i) == 'ROCm' else 'cuda'}:{i}" if i is not pd.NA else "cuda:?"
        for i in k["device_index"].tolist()
    ]
    k["device_type"] = [dev_type.get(i, "CUDA") for i in k["device_index"].tolist()]
    k = annotate_backends(k, trace)
    k = annotate_occupancy(k, trace.devices)
    counters = getattr(trace, "counters", None)
    if counters is not None and len(counters):
        from .counters import annotate_counters
        k = annotate_counters(k, counters)
    return k
