"""Time outside the GPU's work: the part of the region's wall time before a device's first work
and after its last. Nothing was queued on the GPU then: it is the profiler's start-up and the
cell's own Python, not time the GPU lost between its work, so it is an item of its own, of low
severity, and the idle items (``host``'s rules) price only the time inside the first-to-last window
(:func:`kernelscope.analysis.findings._count_once` takes it out of them).
"""
from __future__ import annotations

from kernelscope.analysis.findings.base import Finding, device_rows, on_device, outside_parts, range_link
from kernelscope.analysis.findings.host import wall_base
from kernelscope.units import fmt_pct, fmt_us

OUTSIDE_KIND = "outside_gpu_work"
# Under this share of the wall time the time outside the GPU's work is not worth a line.
OUTSIDE_MIN_SHARE = 0.05


def outside_findings(report, tl) -> list:
    """``outside_gpu_work``, one per device whose time outside its first-to-last work is at least
    :data:`OUTSIDE_MIN_SHARE` of the wall time: always low, whatever its share (no change to the
    GPU's work shortens it).

    >>> [(f.kind, f.severity, f.title) for f in outside_findings(rep, rep.timeline)]
    [('outside_gpu_work', 'low', "2.74 ms before the GPU's first work and after its last (25% of the wall time): \
the profiler's start-up and the cell's own Python, not the GPU's")]
    """
    out = []
    span_clock = report.meta.get("cuda_event_us") is None
    for dev in device_rows(tl):
        base = wall_base(dev, tl)
        before, after, spans = outside_parts(dev, tl, base)
        cost = before + after
        if not base or cost < OUTSIDE_MIN_SHARE * base:
            continue
        place = ("before the GPU's first work and after its last" if before and after
                 else "before the GPU's first work" if before else "after the GPU's last work")
        where = (f"{fmt_us(before)} before the GPU's first work and {fmt_us(after)} after its last"
                 if before and after else f"{fmt_us(cost)} {place}")
        title = (f"{fmt_us(cost)} {place}{on_device(dev, tl)} ({fmt_pct(cost / base, 0)} of the wall time): "
                 "the profiler's start-up and the cell's own Python, not the GPU's")
        detail = (f"Of the {fmt_us(base)} wall time, {where}: nothing was queued on the GPU then. "
                  + ("The wall time here is the profiler's span, which also holds the profiler's own start-up. "
                     if span_clock else "")
                  + "It is the host's time before the first launch and after the last (the profiler starting, "
                  "the cell's Python and setup), not time the GPU lost between its work: the other items price "
                  "only the time inside the GPU's first-to-last window. No change to the GPU's work shortens it; "
                  "if the host code around the GPU work matters, profile it with --stack (with_stack=True).")
        longer = (dev["window_start_us"] - before, dev["window_start_us"]) if before >= after \
            else (dev["window_end_us"], dev["window_end_us"] + after)
        out.append(Finding(
            OUTSIDE_KIND, "low", title, detail,
            {"device": dev["device"], "before_first_work_us": before, "after_last_work_us": after,
             "wall_us": base, "window_us": float(dev["window_us"])}, cost,
            cause=(f"{where}: the profiler's start-up and the cell's own Python, not the GPU's."),
            fix=("Nothing to change on the GPU; profile the cell's Python (--stack) if the host code around the "
                 "GPU work matters, or record a longer region so that start-up weighs less."),
            link=_link(dev["device"], *longer), spans=spans))
    return out


def _link(device, start, end) -> dict | None:
    """The timeline around the longer part, not before the region's start (the trace's 0)."""
    link = range_link(device, start, end, "time outside the GPU's work")
    if link is not None:
        link["start_us"] = max(link["start_us"], min(0.0, start))
    return link
