"""``ks.profile()``: record a region of Python with torch.profiler and CUDA events.

The profiler records CPU ops and (where a CUDA device exists) kernels, copies and runtime
calls; CUDA events on the streams we can see bracket the region for its GPU wall time. At the
end we synchronize, stop the profiler and build the Report from the live results
(:mod:`kernelscope.capture.live`).
"""
from __future__ import annotations

import functools
import sys
import threading
import time
import warnings
from contextlib import contextmanager

from kernelscope.capture import cupy_events
from kernelscope.capture.identity import caller_title, rank_tag, tag_trace
from kernelscope.capture.quiet import MAX_LOG_LINES, captured_stderr, notes_from
from kernelscope.capture.repeats import REPEAT_MARK
from kernelscope.errors import TraceError

_lock = threading.Lock()
_active = None  # the profile now recording, if any: one at a time per process (CUPTI is global)


class ProfilerBusyError(RuntimeError):
    """Another recording is active (nested ``ks.profile``, an open torch.profiler, or CUPTI taken)."""


class CudaContextLost(RuntimeError):
    """A sticky CUDA error (an illegal memory access, a device-side assert) broke this process's
    CUDA context: every later GPU call fails the same way until the process restarts."""


RESTART = ("restart the kernel (Kernel > Restart Kernel; in a script, run it again): no GPU work can run "
           "in this process any more")


def cuda_context_lost(torch=None) -> str | None:
    """The CUDA error every GPU call of this process now fails with (a sticky error broke its
    context), or None: no CUDA context yet, or a healthy one.

    >>> cuda_context_lost()                                  # doctest: +SKIP
    'CUDA error: an illegal memory access was encountered'
    """
    torch = torch or sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
    except Exception:  # noqa: BLE001 - a torch without CUDA
        return None
    try:
        torch.cuda.synchronize()   # a sticky error comes back from every synchronize
    except RuntimeError as e:      # torch.AcceleratorError too
        return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
    return None


def active():
    """The :class:`profile` now recording in this process, or None.

    >>> active() is None
    True
    """
    return _active


class profile:
    """Record a region of Python code; ``prof.report`` is the :class:`~kernelscope.Report` after.

    Use it as a context manager, a decorator, or with :meth:`start`/:meth:`stop`.

    >>> import kernelscope as ks
    >>> with ks.profile() as prof:                          # doctest: +SKIP
    ...     y = model(x)
    >>> prof.report.summary().head(3)                       # doctest: +SKIP
    >>> @ks.profile(lean=True)                              # doctest: +SKIP
    ... def step(): ...
    >>> step(); step.report                                 # doctest: +SKIP

    ``lean=True`` records CUDA activity only (lowest overhead, no CPU ops so no op/backend
    attribution from the launching op); ``with_stack=True`` records Python frames so kernels map
    to source lines; ``lines_of`` (a file name or a predicate on file names) also marks each
    executed line of that code, so kernels map to the exact line (what ``%%kernelprofile
    --stack`` uses for notebook cells); ``trace_path`` also writes the raw Chrome trace (for
    Perfetto); ``record_shapes``/``with_flops`` are on by default. ``title`` names the report
    (``rep.title``); by default it is ``name`` when given, else the notebook cell (``In [5]``)
    or the ``file.py:line`` that started the recording. ``schedule`` (``torch.profiler.schedule(...)``)
    records a loop's steps: call ``prof.step()`` after each; the report holds the active ones (``rep.steps``).

    ``memory=True`` also records torch's allocator (``profile_memory``; it costs per op, so it
    is off by default): ``rep.memory`` is the peak, what held it by op and line, allocated and
    reserved over time and the growth per step (under ``schedule=``, of the last cycle's steps,
    the ones the report holds). Where ``torch.cuda.memory._record_memory_history()`` is on,
    the allocator's snapshot is taken at the stop (``prof.memory_snapshot``) and its own stacks
    give each allocation of the region its exact line (:mod:`kernelscope.capture.memory`).

    >>> import torch
    >>> with ks.profile(memory=True) as prof:
    ...     kept = [torch.ones(256, 256) for _ in range(4)]
    >>> m = prof.report.memory
    >>> m.device, m.peak_bytes >= 4 * 256 * 256 * 4
    ('cpu', True)

    ``metrics=True`` (or a list of CUPTI metric names) also samples hardware counters GPU-wide
    every ``interval_us`` (default 20) through CUPTI PM sampling, with no kernel replay:
    ``report.metrics`` holds the samples and each kernel gains ``sm_active_pct``, ``tensor_pct``,
    ``dram_pct`` and ``dram_gbps`` (:mod:`kernelscope.capture.counters`; needs
    ``kernelscope[counters]``). Anything that stops sampling leaves the profile intact with a note.

    ``tuning`` (default ``"auto"``) watches, in the process, what produced the kernels and what
    else was tried: Triton's ``@triton.autotune`` candidates with their times, the compiled
    variants' registers and spills, Inductor's max-autotune choices
    (:mod:`kernelscope.capture.tuning`; ``report.autotune``, the ``producer``/``config`` kernel
    columns). ``"auto"`` watches Triton and Inductor if already imported, ``True`` imports
    them, ``False`` watches nothing.

    ``onnxruntime`` (an ``InferenceSession`` made with ``enable_profiling``) ends its profile at
    the stop and puts each node over the kernels it launched (:mod:`kernelscope.capture.onnxruntime`).
    """

    def __new__(cls, fn=None, **kwargs):
        self = super().__new__(cls)
        if fn is not None:  # bare decorator: @ks.profile
            if not callable(fn):
                raise TypeError("ks.profile takes keyword options only, or decorates a function")
            self.__init__(**kwargs)
            return self(fn)
        return self

    def __init__(self, fn=None, *, lean=False, with_stack=False, record_shapes=True, with_flops=True,
                 lines_of=None, trace_path=None, name=None, metrics=None, interval_us=None, title=None,
                 tuning="auto", schedule=None, memory=False, onnxruntime=None):
        self.lean = lean
        self.ort = onnxruntime  # an InferenceSession whose nodes go over their kernels at the stop
        # torch.profiler's profile_memory (rep.memory), and the allocator history's snapshot at the stop
        # where _record_memory_history is on (capture/memory.py).
        self.memory = bool(memory)
        self.memory_snapshot = None   # torch.cuda.memory._snapshot() taken at the stop, if any
        self._wall = None       # time.time_ns() at the start and the stop: the snapshot's window
        self.schedule, self._cycles = schedule, None  # torch.profiler's schedule (capture/schedule.py)
        # Autotuning and compiled variants watched in the process (capture/tuning/): "auto"
        # watches Triton/Inductor when already imported, True imports them, False does not watch.
        self.tuning = tuning
        self._tuning = None
        self.metrics = metrics or None
        self.interval_us = interval_us
        self._pm = None
        self._pm_raw = None
        self.with_stack = with_stack
        self.record_shapes = record_shapes and not lean
        self.with_flops = with_flops and not lean
        self.name = name or "<live profiler>"
        self.title = title or (name if name and not name.startswith("<") else None)
        self._stderr = []       # what the profiler wrote to descriptor 2 (kept out of the cell)
        self.lines_of = lines_of
        self.trace_path = trace_path
        self._marks = None
        self._rivals = None     # torch.profilers started meanwhile (rivals.py)
        self._stopping = False
        self.report = None
        self.torch_profiler = None
        self._events = []       # (label, start_event, end_event) CUDA event pairs
        self._repeat_events = []
        self._repeats = 0       # how many prof.repeat(i) regions ran (meta["repeats"]["n"])
        self._no_gpu = False
        self._notes = []
        self._event_kind = None
        self._rank = None       # this process's rank in a torch.distributed job, if any

    # -- context manager / decorator -------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop(partial=exc_type is not None, error=exc)
        return False

    def __call__(self, fn):
        opts = dict(lean=self.lean, with_stack=self.with_stack, record_shapes=self.record_shapes,
                    with_flops=self.with_flops, lines_of=self.lines_of,
                    trace_path=self.trace_path, name=self.name, metrics=self.metrics,
                    interval_us=self.interval_us, title=self.title or getattr(fn, "__qualname__", None),
                    tuning=self.tuning, memory=self.memory)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            p = profile(**opts)
            try:
                with p:
                    return fn(*args, **kwargs)
            finally:
                wrapper.report = self.report = p.report

        wrapper.report = None
        return wrapper

    # -- start / stop ------------------------------------------------------------------------
    def start(self):
        """Start recording. Raises :class:`ProfilerBusyError` if a recording is already active."""
        global _active
        if self.title is None:
            self.title = caller_title()
        self._torch_was_imported = "torch" in sys.modules
        torch = _import_torch()
        lost = cuda_context_lost(torch)
        if lost:
            raise CudaContextLost(f"the CUDA context of this process is lost after an earlier error ({lost}): "
                                  f"{RESTART}")
        with _lock:
            if _active is not None:
                raise ProfilerBusyError(
                    "kernelscope is already recording (nested ks.profile / %%kernelprofile, or a "
                    "`%kernelprofile start` not yet stopped). End the outer recording first "
                    "(`%kernelprofile stop`, or leave its `with` block); recordings cannot nest "
                    "because CUPTI records the whole process.")
            if _torch_profiler_enabled(torch):
                raise ProfilerBusyError(
                    "another torch.profiler is already recording in this process. Stop it first: "
                    "`prof.stop()` on a profiler started with `prof.start()`, or leave its `with` "
                    "block; then run again.")
            _active = self
        from kernelscope.capture import graph_watch
        watch = graph_watch.current()
        # Captures numbered above this one are made inside the region (meta["graph_captures"]).
        self._graph_since = watch.mark() if watch is not None else (0, 0)
        self._stopping = False
        try:
            self._start(torch)
        except BaseException:
            with _lock:
                _active = None
            if self._rivals is not None:
                self._rivals.stop()
            if self._tuning is not None:
                self._tuning, watch = None, self._tuning
                watch.stop()   # the Triton functions it wrapped are put back
            if self._pm is not None:
                self._pm, pm = None, self._pm
                pm.collect()   # releases CUPTI's profiler again
            raise
        return self

    def _start(self, torch):
        from torch.profiler import ProfilerActivity
        has_cuda = torch.cuda.is_available()
        self._no_gpu = not has_cuda
        acts = []
        if not self.lean or not has_cuda:
            acts.append(ProfilerActivity.CPU)
        if has_cuda:
            acts.append(ProfilerActivity.CUDA)
        if not has_cuda:
            self._notes.append("no CUDA device found (torch.cuda.is_available() is False): "
                               "recorded CPU ops only")
            if self.lean:
                self._notes.append("lean mode needs a GPU; recorded CPU ops instead")
        if self.schedule is not None:
            from kernelscope.capture.schedule import Cycles
            self._cycles = Cycles(self.name, self.trace_path)
        p = torch.profiler.profile(activities=acts, record_shapes=self.record_shapes, with_flops=self.with_flops,
                                   with_stack=self.with_stack, schedule=self.schedule, profile_memory=self.memory,
                                   on_trace_ready=self._cycles.ready if self._cycles else None)
        if self.metrics:
            self._prepare_counters(torch, has_cuda)
        self._wall = (time.time_ns(), None)
        try:
            with warnings.catch_warnings():
                # torch 2.11 warns that events are cleared "at the end of each cycle"; a capture
                # here is one cycle of its own profiler, so the warning only confuses cell output.
                warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
                with captured_stderr(self._stderr):
                    p.start()
        except RuntimeError as e:
            raise ProfilerBusyError(
                f"torch.profiler could not start ({e}). If another profiler or tool holds CUPTI "
                "(torch.profiler, Nsight Systems/Compute, DCGM profiling), stop it and run again."
            ) from None
        self.torch_profiler = p
        self._thread = threading.get_ident()   # torch.profiler's recording state is per thread
        from kernelscope.capture.rivals import RivalStarts
        self._rivals = RivalStarts(torch)
        self._rivals.watch()
        if threading.current_thread() is threading.main_thread():
            from kernelscope.capture import handoff
            handoff.install()     # so that another thread's stop() can be handed to this one
        self._rank = rank_tag()
        if self._rank is not None:
            tag_trace(p, self._rank)
        if self.tuning is not False:
            from kernelscope.capture.tuning import TuningWatch
            self._tuning = TuningWatch(force=self.tuning is True)
            self._tuning.start()
        if self.lines_of is not None and not self.lean:
            from kernelscope.capture.lines import LineMarks
            self._marks = LineMarks(self.lines_of).__enter__()
        if self._pm is not None:
            self._pm.start()
        # The region's clock starts last, right before the user's code: kernelscope's own set-up
        # (the watches' first imports took 27-47 ms in a fresh process on the H200) is not the
        # cell's time.
        if has_cuda and cupy_events.wanted(getattr(self, "_torch_was_imported", True)):
            self._events = cupy_events.start_events()
            self._event_kind = "cupy"
        elif has_cuda:
            self._events = [(s, torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                            for s in _visible_streams(torch)]
            for s, start, _ in self._events:
                start.record(s)
            self._event_kind = "torch"

    def _prepare_counters(self, torch, has_cuda):
        """Enable and configure PM sampling before the profiler starts (refusals stop here)."""
        if not has_cuda:
            self._notes.append("hardware counters need a CUDA device; none was found, so none were sampled")
            return
        from kernelscope.capture.counters import PmSampling
        torch.cuda.init()
        dev = torch.cuda.current_device()
        torch.empty(0, device=f"cuda:{dev}")   # CUPTI asks the chip name of a device in use
        self._pm = PmSampling(self.metrics, self.interval_us, dev)
        self._pm.prepare()

    @contextmanager
    def repeat(self, i):
        """Mark one repeat of the region (``--repeat``): an annotation plus CUDA events.
        The report's ``meta["repeats"]`` then holds per-kernel totals for each repeat.

        >>> for i in range(3):                               # doctest: +SKIP
        ...     with prof.repeat(i): step()
        """
        torch = sys.modules["torch"]
        pair = None
        if self._event_kind == "torch":
            pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            pair[0].record()
        elif self._event_kind == "cupy":
            pair = cupy_events.new_pair()
        self._repeats = max(self._repeats, i + 1)
        with torch.profiler.record_function(f"{REPEAT_MARK}{i}"):
            try:
                yield
            finally:
                if pair is not None:
                    pair[1].record()
                    self._repeat_events.append((i, pair))

    def step(self):
        """End one step of a loop recorded under ``schedule=`` (torch.profiler's ``prof.step()``).
        >>> train(batch); prof.step()                          # doctest: +SKIP
        """
        from kernelscope.capture.schedule import step
        step(self.torch_profiler, self._rivals, self._stderr)

    def stop(self, *, partial=False, error=None):
        """Stop recording and build ``self.report``; returns the Report.

        ``partial`` marks a region that ended early (an exception or an interrupt).
        """
        global _active
        if _active is not self:
            raise RuntimeError("this profile is not recording (never started, or already stopped)")
        if getattr(self, "_thread", None) not in (None, threading.get_ident()):
            # torch.profiler stopped from another thread leaves the starting thread's callbacks
            # in place (torch's profiler stays on, the report is empty, every later profile is
            # refused): the stop is handed to the main thread that started it (handoff.py), or
            # refused before anything changes, so that the recording can still be stopped.
            from kernelscope.capture import handoff
            if self._thread == threading.main_thread().ident and handoff.ready():
                return handoff.run_in_main(lambda: self.stop(partial=partial, error=error))
            raise RuntimeError("stop() must be called in the thread that started the recording "
                               "(torch.profiler keeps its state per thread), or that thread must be "
                               "the main thread; nothing was stopped")
        if self._stopping:
            raise RuntimeError("this profile is already being stopped")
        self._stopping = True
        torch = sys.modules["torch"]
        cuda_us = None
        interrupted = None
        if self._marks is not None:
            self._marks.__exit__(None, None, None)
            self._marks = None
        try:
            try:
                for s, _, end in self._events:
                    end.record(s)
                if self._events:
                    # Drain the GPU before the PM sampler stops, so the region's last kernels are sampled.
                    (cupy_events.synchronize if self._event_kind == "cupy" else torch.cuda.synchronize)()
                if self._pm is not None:
                    self._pm.stop()
                if self._events:
                    s0 = self._events[0][1]
                    elapsed = cupy_events.elapsed_ms if self._event_kind == "cupy" else type(s0).elapsed_time
                    starts = [elapsed(s0, st) for _, st, _ in self._events]
                    ends = [elapsed(s0, en) for _, _, en in self._events]
                    cuda_us = (max(ends) - min(starts)) * 1000.0
            except KeyboardInterrupt as e:
                # A second Ctrl-C while we drain the GPU: stop cleanly anyway, then re-raise.
                interrupted, partial = e, True
            finally:
                if self._rivals is not None:
                    self._rivals.stop()
                self._stop_torch_profiler(torch)
        finally:
            if self._tuning is not None:
                self._tuning.stop()    # Triton's functions given back, whatever stopping raised
            try:
                if self._pm is not None:
                    # decode after the profiler stopped; always releases CUPTI's profiler
                    self._pm_raw = self._pm.collect()
            finally:
                with _lock:
                    _active = None
        if self.memory and not self._no_gpu:
            self._take_history(torch)
        # A schedule's region holds more than its recorded steps: no CUDA-event wall time for it.
        self.report = self._build(cuda_us if self._cycles is None else None, partial, error)
        if interrupted is not None:
            raise interrupted
        return self.report

    def _take_history(self, torch) -> None:
        """The allocator history's snapshot, where ``_record_memory_history`` is on (capture/memory.py)."""
        from kernelscope.capture.memory import take_snapshot
        self._wall = (self._wall[0] if self._wall else time.time_ns(), time.time_ns())
        self.memory_snapshot = take_snapshot(torch, self._notes)

    def _stop_torch_profiler(self, torch):
        """Stop torch.profiler; where its stop fails (its first step, a CUDA synchronize, raises
        after a sticky CUDA error), turn the profiler off underneath it, so that it is not left
        recording (every later recording would be refused), then raise."""
        try:
            with warnings.catch_warnings(), captured_stderr(self._stderr):
                warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
                self.torch_profiler.stop()
        except BaseException:
            _force_profiler_off(torch, self._stderr)
            raise

    def _build(self, cuda_us, partial, error):
        from kernelscope.capture.schedule import recorded_trace
        from kernelscope.reports.report import Report
        try:
            with captured_stderr(self._stderr):
                trace = recorded_trace(self._cycles, self.torch_profiler, self.name, self.trace_path, self.ort)
        except TraceError as e:
            if "recorded nothing" not in str(e):
                raise
            from kernelscope.trace.model import Trace
            # Kineto keeps one session per process: a torch.profiler started meanwhile (in
            # another thread, say) takes it over and this one ends with nothing, its own region
            # markers included. Say so, rather than that the region did nothing.
            rival = self._rivals.note(self._thread, empty=True) if self._rivals is not None else None
            trace = Trace.empty({"source": self.name, "notes": [rival or (
                "nothing was recorded: the profiler's session came back empty. If another "
                "torch.profiler was started while this recording ran (in another thread, or a "
                "library's own), it took over the session (Kineto records one per process); "
                "record again without it")]})
        else:
            rival = self._rivals.note(self._thread, empty=False) if self._rivals is not None else None
            if rival:
                trace.meta.setdefault("notes", []).append(rival)
        if self.lines_of is not None and len(trace.kernels):
            from kernelscope.capture.lines import line_sources, traced_file
            k = trace.kernels
            lines = line_sources(k["launch_tid"], k["launch_start_us"], trace.ops)
            # The Python tracer names a frame by the line it started on: for traced code's
            # module-level frame that line says nothing, so keep only the reader's other answers.
            k["source"] = [a if a is not None else (None if traced_file(b, self.lines_of) else b)
                           for a, b in zip(lines, k["source"].tolist())]
        meta = trace.meta
        meta.setdefault("notes", [])
        if self._tuning is not None:
            from kernelscope.capture.tuning import attach_tuning
            try:
                attach_tuning(trace, self._tuning.tables(set(trace.kernels["name"].dropna().astype(str))))
            except Exception as e:  # noqa: BLE001 - the profile stands without the tuning tables
                meta["notes"].append(f"autotuning not collected ({type(e).__name__}: {e})"[:300])
            self._tuning = None
        if self.memory_snapshot is not None:
            from kernelscope.capture.memory import attach_history
            try:
                attach_history(trace, self.memory_snapshot, self._wall)
            except Exception as e:  # noqa: BLE001 - the profile stands with torch.profiler's own memory events
                meta["notes"].append(f"the allocator history was not joined ({type(e).__name__}: {e})"[:300])
        pm_notes = self._attach_counters(trace) if self._pm is not None else []
        meta["notes"] = list(self._notes) + list(meta["notes"]) + pm_notes + notes_from(self._stderr)
        if self._stderr:
            meta["profiler_log"] = self._stderr[:MAX_LOG_LINES]
        # What Kineto/CUPTI said they lost, from the whole log (the completeness ledger reads it).
        from kernelscope.analysis.completeness import profiler_said
        meta["profiler_said"] = profiler_said(self._stderr)
        if self.title:
            meta["title"] = self.title
        meta["cuda_event_us"] = cuda_us
        meta["cuda_event_source"] = self._event_kind
        meta.update(partial=bool(partial), no_gpu=self._no_gpu, lean=self.lean, with_stack=self.with_stack)
        if self._rank is not None:
            from kernelscope.trace.distributed import merge_rank_tag
            meta["distributed"] = merge_rank_tag(meta.get("distributed"), self._rank)
        if error is not None:
            meta["error"] = f"{type(error).__name__}: {error}"[:500]
        self._graph_captures(trace)
        report = Report(trace)
        if self._repeat_events or self._repeats:
            from kernelscope.capture.repeats import per_repeat_totals
            n = self._repeats
            elapsed = cupy_events.elapsed_ms if self._event_kind == "cupy" else (lambda a, b: a.elapsed_time(b))
            ev = {i: elapsed(a, b) * 1000.0 for i, (a, b) in self._repeat_events}
            meta["repeats"] = {"n": n,
                               "per_kernel_total_us": per_repeat_totals(report.kernels, report.ops, n),
                               "cuda_event_us": [ev.get(i) for i in range(n)]}
        if not self._no_gpu and not len(trace.kernels) and not len(trace.copies):
            launches = trace.runtime["name"].astype(str).str.contains("Launch|Memcpy", regex=True).sum()
            if launches:
                meta["notes"].append(
                    f"{launches} launch call(s) recorded but no GPU activity: another tool may hold "
                    "CUPTI (Nsight Systems/Compute, DCGM profiling); stop it and run again")
        return report

    def _graph_captures(self, trace) -> None:
        """The graph watch's captures a recording with graph replays keeps (meta["graph_captures"])."""
        if not len(trace.kernels) or not trace.kernels["graph_launch"].fillna(False).any():
            return
        from kernelscope.capture.graph_watch import current
        watch = current()
        trace.meta["graph_captures"] = (watch.for_recording(trace.kernels, getattr(self, "_graph_since", (0, 0)))
                                        if watch is not None else {"watch": False, "records": []})

    def _attach_counters(self, trace) -> list:
        pm, self._pm = self._pm, None
        raw, self._pm_raw = self._pm_raw, None
        notes = list(pm.notes)
        if raw is not None:
            from kernelscope.trace.counters import attach_samples
            s, e, v, info = raw
            notes += attach_samples(trace, s, e, v, pm.metrics, pm.calibration,
                                    device_index=pm.device_index, info=info)
        else:
            trace.meta["counters"] = {"requested": list(pm.metrics), "samples": 0}
        return notes


def _import_torch():
    try:
        import torch
        import torch.profiler  # noqa: F401
    except ImportError:
        raise ImportError("kernelscope's live capture records through torch.profiler; install "
                          "PyTorch (pip install torch) or open a recorded trace with ks.load(path)") from None
    return torch


def _torch_profiler_enabled(torch) -> bool:
    # The C++ flag is per thread; torch's Python-side flag is per process. A second Kineto
    # session started from another thread crashes the process, so check both.
    flags = (getattr(torch.autograd.profiler, "_is_profiler_enabled", False),)
    try:
        flags += (torch._C._autograd._profiler_enabled(),)
    except AttributeError:
        pass
    return any(bool(f) for f in flags)


def _force_profiler_off(torch, log: list) -> None:
    """Turn off torch's profiler (Kineto's session and torch's Python-side flag), whatever state
    a failed ``stop()`` left them in; what Kineto says goes to ``log``."""
    with captured_stderr(log):
        try:
            if torch._C._autograd._profiler_enabled():
                torch._C._autograd._disable_profiler()
        except Exception:  # noqa: BLE001 - already off, or failing with the context: the flag below still goes
            pass
    try:
        torch.autograd.profiler._run_on_profiler_stop()
    except Exception:  # noqa: BLE001 - a torch without it, or its stop callbacks failing: the flag is cleared here
        try:
            torch.autograd.profiler._is_profiler_enabled = False
        except AttributeError:     # a torch without autograd.profiler: no flag to clear
            pass


def _visible_streams(torch):
    """Current and default stream of the current device (deduplicated)."""
    cur = torch.cuda.current_stream()
    default = torch.cuda.default_stream()
    return [cur] if cur == default else [cur, default]
