"""Memory findings: a leak (allocated rising step over step) and fragmentation (reserved far above
allocated at the peak), from the allocator's events (:mod:`kernelscope.analysis.memory`).

They cost no time: what they put at stake is memory (an out-of-memory error some steps later, a
batch that does not fit), so ``cost_us`` is 0 and they are listed with the findings, never
ranked by time on the first screen; ``evidence`` holds the bytes.
"""
from __future__ import annotations

from kernelscope.analysis.findings.base import Finding
from kernelscope.units import fmt_bytes


def _where(op, source) -> str:
    return f"{op} ({source})" if source else str(op)


def _link(device, start, end, label) -> dict:
    return {"view": "timeline", "device": device, "start_us": float(start), "end_us": float(end),
            "mark_start_us": float(start), "mark_end_us": float(end), "label": f"timeline: {label}"}


def leak_finding(m) -> list:
    """A leak finding where allocated at the step ends rises step over step (``m.leak``).

    >>> from kernelscope.analysis.memory import memory_analysis
    >>> t = ks.load("training/leak_steps.pt.trace.json.gz").trace
    >>> leak_finding(memory_analysis(t.memory, ops=t.ops))[0].title
    'GPU memory grows by 64.0 MiB per step over 8 steps (a leak)'
    """
    leak = m.leak if m is not None else None
    if not leak:
        return []
    held = leak["held"]
    top = held[0] if held else None
    who = _where(top["op"], top["source"]) if top else "no recorded op"
    per, n = fmt_bytes(leak["growth_per_step"]), leak["steps"]
    detail = (f"Allocated memory on {m.device} at the end of each step rose in {leak['rising_steps']} of "
              f"{n - 1} steps, {fmt_bytes(leak['total_growth'])} from {leak['first_step']} to "
              f"{leak['last_step']}. {leak['stayed_blocks']} block(s) of {fmt_bytes(leak['stayed_bytes'])} "
              f"allocated in these steps were still held at the last step's end; the most by {who}"
              + (f" ({fmt_bytes(top['bytes'])} in {top['blocks']} block(s))" if top else "") + ". "
              "At this rate the run ends in an out-of-memory error. Something keeps a reference to each "
              "step's tensors: a list of losses or outputs kept without .item() or .detach().cpu(), a "
              "tensor appended to a history, a graph kept alive by a stored loss.")
    return [Finding("memory_leak", "high", f"GPU memory grows by {per} per step over {n} steps (a leak)", detail,
                    {"device": m.device, **leak}, 0.0,
                    cause=f"allocated memory grows by {per} per step: tensors of each step are kept",
                    fix=f"drop the reference that keeps them ({who}): store loss.item(), "
                        "or .detach().cpu() what you keep",
                    link=_link(m.device, m.steps["start_us"].iloc[0], m.steps["end_us"].iloc[-1],
                               f"the {n} steps memory grew over"))]


def fragmentation_finding(m) -> list:
    """A fragmentation finding where reserved exceeds allocated at the peak by over 30% and
    256 MiB (``m.fragmentation["flagged"]``).

    >>> from kernelscope.analysis.memory import memory_analysis
    >>> t = ks.load("training/lm_steps.pt.trace.json.gz").trace
    >>> fragmentation_finding(memory_analysis(t.memory, ops=t.ops))
    []
    """
    fr = m.fragmentation if m is not None else None
    if not fr or not fr.get("flagged"):
        return []
    gap = fmt_bytes(fr["gap_bytes"])
    detail = (f"At the allocated peak on {m.device} ({fmt_bytes(fr['allocated_bytes'])} in tensors) the caching "
              f"allocator held {fmt_bytes(fr['reserved_bytes'])} from the driver: {gap} more "
              f"({fr['gap_share']:.0%}). " + fr["meaning"])
    return [Finding("memory_fragmentation", "medium",
                    f"Reserved GPU memory exceeds allocated by {gap} ({fr['gap_share']:.0%}) at the peak", detail,
                    {"device": m.device, **fr}, 0.0,
                    cause=f"the allocator caches {gap} that no tensor uses at the peak",
                    fix="set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; allocate the largest "
                        "buffers first or reuse them across steps",
                    link=_link(m.device, m.peak_us, m.peak_us, "the allocated peak"))]


def memory_findings(report, tl) -> list:
    """The report's memory findings (``report.memory``); none without allocator events.

    >>> [f.kind for f in memory_findings(ks.load("training/leak_steps.pt.trace.json.gz"), None)]
    ['memory_leak']
    """
    m = getattr(report, "memory", None)
    return leak_finding(m) + fragmentation_finding(m)
