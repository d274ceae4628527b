"""What every finding is made of: the ``Finding`` record, the severity of a cost against the
active window, the evidence links (a range of the timeline, a gap, kernels of the table), and the
timeline rules' devices (``device_rows``, ``on_device``)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from kernelscope.analysis.intervals import Spans
from kernelscope.jsonable import jsonable, num
from kernelscope.units import fmt_us

# -- thresholds (named so that a test or a reader can see what a word means) -------------------
# Severity is the cost as a share of the device's active window: a quarter or more is the first
# thing to fix; under 5% it is within what one change of a step usually moves.
SEVERITY_HIGH_SHARE = 0.25
SEVERITY_MEDIUM_SHARE = 0.05
SEVERITIES = ("high", "medium", "low", "info")
# Evidence lists stay short: a finding is read, the tables behind it hold every row.
MAX_EVIDENCE_ROWS = 20


@dataclass(frozen=True)
class Finding:
    """One thing worth knowing about a run, most costly first in ``report.findings``.

    >>> f = ks.load("launch_bound.pt.trace.json.gz").findings[0]
    >>> f.kind, f.severity
    ('launch_bound', 'high')
    """

    kind: str
    severity: str
    title: str
    detail: str
    evidence: dict = field(default_factory=dict)
    cost_us: float = 0.0
    # One line each: why the time is lost, and what to do about it (the first screen's words).
    cause: str = ""
    fix: str = ""
    # Where the evidence shows: {"view": "timeline", "device", "start_us", "end_us", "label"} or
    # {"view": "kernels", "names": [kernel names], "label"}; None when nothing narrower than the
    # whole report does.
    link: dict | None = None
    # The time ``cost_us`` is made of, where the rule knows it (idle gaps, sync waits, copies):
    # the first screen counts each microsecond once with it (analysis/priorities.py). Not part of
    # to_dict or the payload: a launch-bound trace has one gap per kernel.
    spans: Spans | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """Plain JSON-able data (numbers as Python floats/ints), without ``spans``.

        >>> sorted(Finding("x", "info", "t", "d", spans=Spans.of("cuda:0", [0], [5])).to_dict())[:4]
        ['cause', 'cost_us', 'detail', 'evidence']
        """
        return jsonable({f.name: getattr(self, f.name) for f in fields(self) if f.name != "spans"})


def severity_for(cost_us: float, window_us: float | None) -> str:
    """Severity from the time a finding costs, as a share of the active window.

    >>> severity_for(300, 1000), severity_for(60, 1000), severity_for(1, 1000), severity_for(0, 1000)
    ('high', 'medium', 'low', 'info')
    """
    if not cost_us or cost_us <= 0:
        return "info"
    share = cost_us / window_us if window_us else 1.0
    if share >= SEVERITY_HIGH_SHARE:
        return "high"
    if share >= SEVERITY_MEDIUM_SHARE:
        return "medium"
    return "low"


def range_link(device, start, end, what) -> dict | None:
    """A timeline range showing one span (``what``) with its own length of context either side;
    ``mark_start_us`` / ``mark_end_us``: the span itself, which the view selects (marks)."""
    start, end = num(start), num(end)
    if start is None or end is None:
        return None
    d = max(end - start, 0.0)
    pad = d if d > 0 else 1.0
    return {"view": "timeline", "device": None if device is None else str(device),
            "start_us": start - pad, "end_us": end + pad, "mark_start_us": start, "mark_end_us": end,
            "label": f"timeline: the longest {what} ({fmt_us(d)} at {fmt_us(start)})"}


def gap_link(gaps, what) -> dict | None:
    """The timeline around the longest of some idle gaps."""
    if gaps is None or not len(gaps):
        return None
    r = gaps.loc[gaps["duration_us"].astype(float).idxmax()]
    return range_link(r["device"], r["start_us"], r["end_us"], what)


def span_link(df, what, end_col=None) -> dict | None:
    """The timeline around the longest row of a table with ``start_us`` and ``duration_us``."""
    if df is None or not len(df) or "start_us" not in df.columns:
        return None
    d = df["duration_us"].astype(float)
    if not d.notna().any():
        return None
    r = df.loc[d.idxmax()]
    end = r[end_col] if end_col else r["start_us"] + r["duration_us"]
    return range_link(r.get("device"), r["start_us"], end, what)


def kernel_link(names, label) -> dict:
    """The kernel table narrowed to some kernels (by name as recorded)."""
    return {"view": "kernels", "names": [str(n) for n in names], "label": f"kernel table: {label}"}


def safe_ratio(a, b):
    """a / b as a float, NaN when b is 0 or missing (durations can be 0 in damaged input)."""
    a, b = num(a), num(b)
    return a / b if a is not None and b else float("nan")


def device_rows(tl) -> list:
    """The busy row of each device of a timeline (``tl.busy``'s rows of no stream), as dicts: what
    the timeline's rules go through, device by device.

    >>> [d["device"] for d in device_rows(rep.timeline)]
    ['cuda:0']
    """
    rows = tl.busy[tl.busy["stream"].isna()]
    return [r._asdict() for r in rows.itertuples(index=False)]


def on_device(dev, tl) -> str:
    """`` on cuda:1`` where the timeline has several devices, else nothing: the words a finding's
    title names its device with.

    >>> on_device(device_rows(rep.timeline)[0], rep.timeline)
    ''
    """
    return f" on {dev['device']}" if len(device_rows(tl)) > 1 else ""


def outside_parts(dev, tl, base) -> tuple[float, float, Spans]:
    """(before, after, spans): a device's time before its first and after its last work within
    the wall time ``base`` (:func:`~kernelscope.analysis.findings.host.wall_base`), and where it
    lies: the time the ``outside_gpu_work`` item holds and the idle items do not price.

    The trace's clock starts at the region's start, so with the profiler's span as the wall time
    the split is exact; with CUDA events (recorded inside the span, after the profiler started) the
    time after the last work is the span's, the rest comes before the first.

    >>> dev = device_rows(rep.timeline)[0]
    >>> before, after, spans = outside_parts(dev, rep.timeline, rep.wall_time_us)
    >>> fmt_us(before), fmt_us(after), spans.length == before + after
    ('2.59 ms', '149.8 us', True)
    """
    w0, w1 = float(dev["window_start_us"]), float(dev["window_end_us"])
    outside = max(float(base) - float(dev["window_us"]), 0.0)
    window = tl.window or {}
    span_end = num(window.get("span_us")) or num(window.get("wall_us")) or w1
    after = min(max(span_end - w1, 0.0), outside)
    before = outside - after
    return before, after, Spans.of(dev["device"], [w0 - before, w1], [w0, w1 + after])
