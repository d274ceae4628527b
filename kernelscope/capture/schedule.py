"""Training-loop steps recorded live: ``ks.profile(schedule=torch.profiler.schedule(...))`` with
``prof.step()`` after each step, and ``%%kernelprofile --steps N`` (the cell is one step).

torch.profiler hands each finished cycle of its schedule (a ``RECORD_AND_SAVE`` step) to
``on_trace_ready``; :class:`Cycles` is that callback. It keeps the last cycle whole (the report's
launch-level tables) and only the per-step rows of the cycles before it (``meta["earlier_steps"]``,
read by :func:`kernelscope.analysis.steps.step_table`), so that a loop of thousands of steps holds one
cycle's events, not all of them. :func:`steps_schedule` is the schedule of ``--steps N``: wait, warm
up once, then N recorded steps cut into cycles of :data:`STEPS_PER_CYCLE`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.trace.model import Trace

# The defaults of %%kernelprofile --steps N: one step not recorded (the loop's first, with its
# compiles and allocator growth), one with the profiler on and its results dropped (the
# profiler's own start-up), as torch.profiler's documentation's example schedule does.
DEFAULT_WAIT = 1
DEFAULT_WARMUP = 1
# Recorded steps whose events are held at once: beyond this a cycle ends, its steps are reduced to
# their rows of rep.steps and its events dropped (a 100-step cycle of the recorded LM is 31k
# kernels; 1,000 steps of it would hold 310k).
STEPS_PER_CYCLE = 100


def steps_schedule(wait: int = DEFAULT_WAIT, warmup: int = DEFAULT_WARMUP, active: int = 1,
                   cycle: int = STEPS_PER_CYCLE):
    """A torch.profiler schedule: ``wait`` steps off, ``warmup`` on and dropped, then ``active``
    recorded steps, the results handed over every ``cycle`` steps and at the last.

    >>> from torch.profiler import ProfilerAction as A
    >>> s = steps_schedule(1, 1, 3, cycle=2)
    >>> [s(i) == a for i, a in enumerate([A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
    ...                                    A.RECORD_AND_SAVE, A.NONE])]
    [True, True, True, True, True, True]
    """
    from torch.profiler import ProfilerAction

    def schedule(step: int):
        if step < wait:
            return ProfilerAction.NONE
        if step < wait + warmup:
            return ProfilerAction.WARMUP
        i = step - wait - warmup
        if i >= active:
            return ProfilerAction.NONE
        last = (i + 1) % cycle == 0 or i + 1 == active
        return ProfilerAction.RECORD_AND_SAVE if last else ProfilerAction.RECORD
    return schedule


def step(torch_profiler, rivals, log: list) -> None:
    """torch.profiler's ``step()``: a new cycle's start is not a rival profiler, its warning
    ("Profiler clears events at the end of each cycle": the earlier cycles' rows are kept) and
    Kineto's lines on descriptor 2 stay out of the cell.

    >>> step(prof.torch_profiler, None, [])                # doctest: +SKIP
    """
    import warnings

    from kernelscope.capture.quiet import captured_stderr
    if rivals is not None:
        rivals.ours = True
    try:
        with warnings.catch_warnings(), captured_stderr(log):
            warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
            torch_profiler.step()
    finally:
        if rivals is not None:
            rivals.ours = False


def recorded_trace(cycles, torch_profiler, name: str, trace_path=None, onnxruntime=None):
    """The Trace of a stopped recording: its last cycle under a schedule (``cycles``), else what
    the profiler holds (:func:`kernelscope.capture.live.trace_from_profiler`); with an ONNX
    Runtime session's nodes over its kernels (:mod:`kernelscope.capture.onnxruntime`).

    >>> recorded_trace(Cycles("<cell>"), None, "<cell>").meta["source"]
    '<cell>'
    """
    from kernelscope.capture.live import trace_from_profiler
    trace = cycles.trace() if cycles is not None else \
        trace_from_profiler(torch_profiler, name=name, trace_path=trace_path)
    if onnxruntime is not None:
        from kernelscope.capture.onnxruntime import with_session
        trace = with_session(trace, onnxruntime)
    return trace


class Cycles:
    """torch.profiler's ``on_trace_ready`` under a schedule: each cycle read into a Trace, the
    last one kept whole, the earlier ones as their step rows.

    >>> c = Cycles("<cell>")
    >>> c.trace().meta["notes"][0][:39]
    'the schedule recorded no step: it waits'
    """

    def __init__(self, name: str, trace_path=None):
        self.name = name
        self.trace_path = trace_path
        self.last: Trace | None = None    # the latest cycle's Trace
        self.earlier: list = []           # step rows (dicts) of the cycles before it
        self.dropped = 0          # kernels of those cycles, no longer held

    def ready(self, prof) -> None:
        from kernelscope.capture.live import trace_from_profiler
        trace = trace_from_profiler(prof, name=self.name, trace_path=self.trace_path)
        if self.last is not None:
            from kernelscope.analysis.steps import step_table
            from kernelscope.reports.report import Report
            rows = step_table(Report(self.last))
            # Their times are on their own cycle's clock, not on the report's timeline.
            rows[["start_us", "end_us", "gpu_start_us", "gpu_end_us"]] = float("nan")
            self.earlier += rows.to_dict("records")
            self.dropped += len(self.last.kernels) + len(self.last.copies) + len(self.last.ops)
        self.last = trace

    def trace(self):
        """The report's Trace: the last cycle, with the earlier cycles' step rows in its meta."""
        from kernelscope.trace.model import Trace
        if self.last is None:
            return Trace.empty({"source": self.name, "notes": [
                "the schedule recorded no step: it waits and warms up first (prof.step() after each "
                "step moves it on); run more steps or shorten wait/warmup"]})
        trace, self.last = self.last, None
        if self.earlier:
            trace.meta["earlier_steps"] = self.earlier
            trace.meta.setdefault("notes", []).append(
                f"{len(self.earlier)} earlier steps are kept as their rows of rep.steps only: their "
                f"{self.dropped} kernels, copies and CPU ops were dropped to bound memory; the "
                "timeline and tables hold the last cycle's steps")
        return trace
