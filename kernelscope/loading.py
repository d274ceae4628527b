"""Opening recordings: Kineto traces, our own report files, live profilers, ncu exports."""
from __future__ import annotations

import os

import msgspec

from .errors import TraceError
from .report import REPORT_FORMAT, Report
from .trace.decode import ForeignFormat, NotJSON
from .trace.files import read_bytes

# What a saved report is named (Report.save does not insist, JupyterLab opens these as reports).
_REPORT_SUFFIXES = (".ksreport.json", ".ksreport.json.gz")


def load(source):
    """Open a recording as a :class:`~kernelscope.Report`.

    ``source`` is a torch.profiler Chrome trace (``.json`` or ``.json.gz``), a report saved
    with ``Report.save``, or a stopped ``torch.profiler.profile`` object. Which kind of file it
    is comes from its parsed top level (a saved report's ``"format"`` key), not from its name.

    >>> import kernelscope as ks
    >>> rep = ks.load("launch_bound.pt.trace.json.gz")    # doctest: +SKIP
    >>> len(rep.kernels)                                 # doctest: +SKIP
    2000
    """
    if hasattr(source, "export_chrome_trace") and hasattr(source, "profiler"):
        from .capture.live import trace_from_profiler
        return Report(trace_from_profiler(source))
    if not isinstance(source, (str, os.PathLike)):
        raise TraceError(repr(source)[:80], "expected a file path or a stopped torch.profiler.profile")
    path = os.fspath(source)
    from .trace.kineto import read_kineto
    try:
        trace = read_kineto(path)
    except ForeignFormat as e:
        if e.format != REPORT_FORMAT:
            raise
        return _report(read_bytes(path), path)
    except NotJSON as e:
        # No top level to read the kind from: a file named as a report is a damaged report.
        if path.endswith(_REPORT_SUFFIXES):
            raise TraceError(path, f"the report file is damaged ({e.problem})") from None
        raise
    return Report(trace)


def _report(raw: bytes, path: str) -> Report:
    try:
        d = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        raise TraceError(path, f"the report file is damaged ({e})") from None
    return Report.from_dict(d, source=path)


def load_ncu(path, *, kernels_report=None):
    """Open an Nsight Compute CSV export (``ncu --csv --page details`` or ``--page raw``).

    Without ``kernels_report``: a Report whose kernels are ncu's launches (name, grid, block,
    registers, shared memory, duration, device), ``report.ncu`` the tidy table, and the ncu
    metrics also on ``report.kernels`` as ``ncu_*`` columns. With ``kernels_report`` (a Kineto
    Report of the same workload): that report with ncu's measured metrics merged onto its
    kernels instead.

    >>> rep = load_ncu("tests/data/ncu_triton_kernels.csv")
    >>> len(rep.kernels), float(rep.kernels["ncu_theoretical_occupancy_pct"].iloc[0])
    (7, 62.5)
    """
    from .trace.ncu import read_ncu, trace_from_ncu
    table = read_ncu(path)
    if kernels_report is not None:
        return Report(kernels_report.trace, ncu=table)
    return Report(trace_from_ncu(table, source=os.fspath(path)), ncu=table)
