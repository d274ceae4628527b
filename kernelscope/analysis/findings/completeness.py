"""The completeness ledger as a finding: when the recording misses work (launches with no kernel,
kernels with no launch, records the profiler dropped, events the reader repaired), say what is
missing and what it means for the numbers (``kernelscope.analysis.completeness``)."""
from __future__ import annotations

from kernelscope.analysis.findings.base import Finding

# Gaps that lose GPU work itself (the time figures undercount): worth fixing the recording.
_LOSES_WORK = ("launches_without_kernel", "graph_replays_without_kernels", "profiler_dropped")


def completeness_findings(report, tl=None) -> list:
    """One finding when the report's ledger (``report.completeness``) shows anything missing; none
    when nothing is, or when nothing at all was recorded on the GPU (the empty-capture finding
    says that).

    >>> completeness_findings(rep)
    []
    """
    c = report.completeness if hasattr(report, "completeness") else None
    if c is None:
        from kernelscope.analysis.completeness import completeness
        c = completeness(report.trace)
    missing = c.missing
    if not missing or not (c.recorded.get("kernels") or c.recorded.get("copies") or c.recorded.get("memsets")):
        return []
    loses = any(g.key in _LOSES_WORK for g in missing)
    title = "The recording is incomplete: " + "; ".join(f"{g.count:,} {g.label}" for g in missing)
    detail = " ".join(g.meaning[0].upper() + g.meaning[1:] + "." for g in missing)
    evidence = {g.key: g.count for g in c.gaps if g.count is not None}
    evidence["source"] = c.source
    fix = ("record again: start the profiler before the work and synchronize before it stops, run no other "
           "CUPTI tool beside it" if loses else
           "start the profiler before the first launch (a warm-up step inside the region) so every kernel "
           "has its launch")
    return [Finding("incomplete_recording", "medium" if loses else "low", title, detail, evidence, 0.0,
                    cause="some of the run's work or its launches are not in the recording", fix=fix)]
