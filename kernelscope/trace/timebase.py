"""The Trace's one clock: microseconds from the start of the recorded region.

Kineto writes absolute microseconds (plus ``baseTimeNanoseconds``); every table is shifted so
that 0 is the profiler's own span start (or the first event, if earlier or no span was written),
and ``meta["time_origin_ns"]`` keeps where 0 lies on the absolute clock.
"""
from __future__ import annotations

from kernelscope.trace.decode import header_num
from kernelscope.units import fmt_us


def time_origin(tables: dict, span) -> float:
    """The absolute time (us) that becomes 0: the span's start, or the first event if earlier.

    >>> import pandas as pd
    >>> time_origin({"k": pd.DataFrame({"start_us": [5.0, 9.0]})}, (7.0, 10.0))
    5.0
    """
    starts = [float(t["start_us"].min()) for t in tables.values() if len(t)]
    t_min = min(starts) if starts else None
    origin = span[0] if span else (t_min or 0.0)
    if t_min is not None and t_min < origin:
        origin = t_min
    return origin


def shift(tables: dict, origin: float) -> None:
    """Make every table's ``start_us`` relative to ``origin`` (in place)."""
    for t in tables.values():
        t["start_us"] = t["start_us"] - origin


def clock_meta(base_time_ns, origin: float, span) -> dict:
    """``time_origin_ns`` (absolute ns of time 0) and ``span_us`` (the region's length).

    >>> clock_meta(1_000_000, 5.0, (5.0, 10.0))
    {'time_origin_ns': 1005000, 'span_us': 10.0}
    """
    base_ns = header_num(base_time_ns, int) or 0
    span_end = span[0] + span[1] if span else None
    return {"time_origin_ns": int(base_ns + round(origin * 1000)),
            "span_us": (span_end - origin) if span_end is not None else None}


def cover_span(trace) -> None:
    """Widen ``meta["span_us"]`` to cover every recorded interval (in place).

    The profiler's span always does in real recordings; in a damaged or hand-made trace it may
    not, and GPU busy time must never exceed the region's span. Saved reports go through this
    too (a hand-edited span may not cover the recorded kernels).
    """
    span = trace.meta.get("span_us")
    if span is None:
        return
    end = span
    for t in (trace.kernels, trace.copies, trace.runtime, trace.ops):
        if len(t):
            end = max(end, float((t["start_us"] + t["duration_us"]).max()))
    if end > span:
        trace.meta["span_us"] = end
        if end - span > 1.0:   # clocks of CPU and GPU events disagree by far less than 1 us
            trace.meta.setdefault("notes", []).append(f"events end {fmt_us(end - span)} after the profiler's span; "
                                                      "the span was widened to cover them")
