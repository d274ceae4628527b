"""Pure functions over a Trace's tables: backends, occupancy, timeline, findings, diff."""
from __future__ import annotations

import pandas as pd


def annotate_kernels(trace) -> pd.DataFrame:
    """The kernels table with the analysis columns added (a new frame): ``device``,
    ``device_type``, ``short_name``, ``backend`` and the occupancy columns.

    >>> k = annotate_kernels(ks.load("attention.pt.trace.json.gz").trace)   # doctest: +SKIP
    >>> k[["short_name", "backend", "theoretical_occupancy"]]                 # doctest: +SKIP
    """
    from .backends import annotate_backends
    from .devices import annotate_devices
    from .occupancy import annotate_occupancy

    k = annotate_devices(trace.kernels.copy(), trace.devices)
    k = annotate_backends(k, trace)
    k = annotate_occupancy(k, trace.devices)
    return k


def annotate_copies(trace) -> pd.DataFrame:
    """The copies table with ``device`` and ``device_type`` added (a new frame), labelled as
    the kernels are.

    >>> annotate_copies(ks.load("copies_streams.pt.trace.json.gz").trace)["device"].unique()  # doctest: +SKIP
    array(['cuda:0'], dtype=object)
    """
    from .devices import annotate_devices
    return annotate_devices(trace.copies.copy(), trace.devices)
