"""Opening recordings: Kineto traces, our own report files, live profilers, ncu exports."""
from __future__ import annotations

import gzip
import os
import stat
import zlib

import msgspec

from .errors import TraceError

_REPORT_MARK = b'"format":"kernelscope.report"'


def load(source):
    """Open a recording as a :class:`~kernelscope.Report`.

    ``source`` is a torch.profiler Chrome trace (``.json`` or ``.json.gz``), a report saved
    with ``Report.save``, a stopped ``torch.profiler.profile`` object, or an Nsight Compute
    report (``.ncu-rep``: :func:`load_ncu`).

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
    if _is_ncu_report(path):
        return load_ncu(path)   # an Nsight Compute report opened like any recording
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


def load_ncu(path, *, kernels_report=None, source=True):
    """Open an Nsight Compute report (``.ncu-rep``, also gzip/xz-compressed) or CSV export
    (``ncu --csv --page details`` or ``--page raw``).

    Returns a Report whose kernels are ncu's launches; ``rep.ncu`` holds the tidy metrics, one
    row per launch. From a full report also ``rep.stalls`` (warp-stall shares per launch),
    ``rep.kernels["top_stall"]``, Nsight Compute's rule results as findings and
    ``rep.ncu_detail`` (its rules, the source hot spots and the SASS around them). Pass
    ``kernels_report`` (a Kineto Report of the same workload) to merge ncu's measurements onto
    its kernels instead (by kernel name and launch order). ``source`` (True, False or a count)
    says for how many of the longest launches source hot spots and SASS are read (the slow part
    of reading a report; True: the 50 longest). Reading ``.ncu-rep`` needs
    ``pip install "kernelscope[ncu]"``.

    >>> rep = ks.load_ncu("kernels.ncu-rep")                 # doctest: +SKIP
    >>> rep.stalls[["name", "top_stall"]]                    # doctest: +SKIP
    """
    if not _is_ncu_report(path):
        from .trace.ncu import load_ncu as _load_csv
        return _load_csv(path, kernels_report=kernels_report)
    from .analysis.ncu_kernels import source_hotspots, stalls_table
    from .report import Report
    from .trace.ncu import trace_from_ncu
    from .trace.ncu_rep import read_ncu_report
    data = read_ncu_report(path, source=source)
    detail = {"rules": data.rules, "hotspots": source_hotspots(data.samples, data.sources), "sass": data.sass}
    stalls = stalls_table(data.stall_counts)
    if kernels_report is not None:
        trace = kernels_report.trace
        trace.meta.setdefault("notes", []).extend(data.notes)
    else:
        trace = trace_from_ncu(data.launches, source=os.fspath(path))
        trace.meta["notes"].extend(data.notes)
    return Report(trace, ncu=data.launches, stalls=stalls, ncu_detail=detail)


def _is_ncu_report(path) -> bool:
    """By name (``.ncu-rep``, ``.ncu-repz``, compressed) or by ncu's header in the first bytes."""
    from .trace.ncu_rep import REPORT_MAGIC, is_report_path
    if not isinstance(path, (str, os.PathLike)):
        return False
    if is_report_path(path):
        return True
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False   # never open a pipe or a device to sniff it: the CSV reader refuses them
        with open(os.fspath(path), "rb") as f:
            return f.read(4) == REPORT_MAGIC
    except (OSError, ValueError):
        return False   # the CSV reader names the problem
