"""Opening recordings: Kineto traces, our own report files, live profilers, ncu exports."""
from __future__ import annotations

import os
import stat

import msgspec

from .errors import TraceError
from .report import REPORT_FORMAT, Report
from .trace.decode import ForeignFormat, NotJSON
from .trace.files import read_bytes

# What a saved report is named (Report.save does not insist, JupyterLab opens these as reports).
_REPORT_SUFFIXES = (".ksreport.json", ".ksreport.json.gz")


def load(source, *, progress: bool = True):
    """Open a recording as a :class:`~kernelscope.Report`.

    ``source`` is a torch.profiler Chrome trace (``.json`` or ``.json.gz``), a report saved
    with ``Report.save``, a stopped ``torch.profiler.profile`` object, or an Nsight Compute
    report (``.ncu-rep``: :func:`load_ncu`). Which kind of JSON file it is comes from its parsed
    top level (a saved report's ``"format"`` key), not from its name. A trace that takes more
    than a couple of seconds to read shows a progress bar (in a notebook or on a terminal;
    ``progress=False`` or ``KERNELSCOPE_PROGRESS=off`` turn it off), removed when it is done.

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
    if _is_ncu_report(path):
        return load_ncu(path)   # an Nsight Compute report opened like any recording
    from .render.progress import LoadProgress
    from .trace.kineto import read_kineto
    with LoadProgress(os.path.basename(path), out="auto" if progress else None) as bar:
        try:
            trace = read_kineto(path, progress=bar.update)
        except ForeignFormat as e:
            if e.format != REPORT_FORMAT:
                raise
            return _report(read_bytes(path), path)
        except NotJSON as e:
            # No top level to read the kind from: a file named as a report is a damaged report.
            if path.endswith(_REPORT_SUFFIXES):
                raise TraceError(path, f"the report file is damaged ({e.problem})") from None
            raise
        trace.meta["raw_trace"] = os.path.abspath(path)   # the file Perfetto can open (the view offers it)
        bar.stage("analysing")
        return Report(trace)


def _report(raw: bytes, path: str) -> Report:
    try:
        d = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        raise TraceError(path, f"the report file is damaged ({e})") from None
    rep = Report.from_dict(d, source=path)
    # A title the recording set travels with the report; otherwise the file it was saved to
    # (the name the user chose) tells it from others.
    t = rep.meta.get("title")
    if not (isinstance(t, str) and t.strip()):
        rep.meta["title"] = os.path.basename(path)
    return rep


def load_ncu(path, *, kernels_report=None, source=True):
    """Open an Nsight Compute report (``.ncu-rep``, also gzip/xz-compressed) or CSV export
    (``ncu --csv --page details`` or ``--page raw``).

    Without ``kernels_report``: a Report whose kernels are ncu's launches (name, grid, block,
    registers, shared memory, duration, device), ``report.ncu`` the tidy table, one row per
    launch, and the ncu metrics also on ``report.kernels`` as ``ncu_*`` columns. From a full
    report also ``rep.stalls`` (warp-stall shares per launch), ``rep.kernels["top_stall"]``,
    Nsight Compute's rule results as findings and ``rep.ncu_detail`` (its rules, the source hot
    spots and the SASS around them). With ``kernels_report`` (a Kineto Report of the same
    workload): that report with ncu's measurements merged onto its kernels instead (by kernel
    name and launch order). ``source`` (True, False or a count) says for how many of the longest
    launches source hot spots and SASS are read (the slow part of reading a report; True: the 50
    longest). Reading ``.ncu-rep`` needs ``pip install "kernelscope[ncu]"``.

    >>> rep = load_ncu("tests/data/ncu_triton_kernels.csv")
    >>> len(rep.kernels), float(rep.kernels["ncu_theoretical_occupancy_pct"].iloc[0])
    (7, 62.5)
    """
    from .trace.ncu import read_ncu, trace_from_ncu
    if not _is_ncu_report(path):
        table = read_ncu(path)
        if kernels_report is not None:
            return Report(kernels_report.trace, ncu=table)
        return Report(trace_from_ncu(table, source=os.fspath(path)), ncu=table)
    from .analysis.ncu_kernels import source_hotspots, stalls_table
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
