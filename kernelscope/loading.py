"""Opening recordings: Kineto traces, our own report files, live profilers, ncu exports."""
from __future__ import annotations

import gzip
import os
import zlib

import msgspec

from .errors import TraceError

_REPORT_MARK = b'"format":"kernelscope.report"'


def load(source):
    """Open a recording as a :class:`~kernelscope.Report`.

    ``source`` is a torch.profiler Chrome trace (``.json`` or ``.json.gz``), a report saved
    with ``Report.save``, or a stopped ``torch.profiler.profile`` object.

    >>> import kernelscope as ks
    >>> rep = ks.load("launch_bound.pt.trace.json.gz")    # doctest: +SKIP
    >>> len(rep.kernels)                                 # doctest: +SKIP
    2000
    """
    from .report import Report
    if hasattr(source, "export_chrome_trace") and hasattr(source, "profiler"):
        from .capture.live import trace_from_profiler
        return Report(trace_from_profiler(source))
    if not isinstance(source, (str, os.PathLike)):
        raise TraceError(repr(source)[:80], "expected a file path or a stopped torch.profiler.profile")
    path = os.fspath(source)
    from .trace.kineto import _read_bytes, read_kineto
    notes = []
    raw = _read_bytes(path, notes)
    if _REPORT_MARK in raw[:200]:
        try:
            d = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError) as e:
            raise TraceError(path, f"the report file is damaged ({e})") from None
        if not isinstance(d, dict):
            raise TraceError(path, "the report file is damaged (its top level is not a JSON object)")
        return Report.from_dict(d, source=path)
    trace = read_kineto(raw, name=path)
    trace.meta["notes"][:0] = notes
    return Report(trace)


def load_ncu(path, *, kernels_report=None):
    """Open an Nsight Compute CSV export (``ncu --csv --page details`` or ``--page raw``).

    Returns a Report whose kernels are ncu's launches; ``rep.ncu`` holds the tidy metrics.
    Pass ``kernels_report`` (a Kineto Report of the same workload) to merge ncu's measured
    metrics onto its kernels instead.

    >>> ncu = ks.load_ncu("kernels.csv")                 # doctest: +SKIP
    """
    from .trace.ncu import load_ncu as _load_ncu
    return _load_ncu(path, kernels_report=kernels_report)
