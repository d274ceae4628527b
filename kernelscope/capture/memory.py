"""``ks.profile(memory=True)``: the allocator's history, where the user turned it on, joined to
the recording.

torch.profiler's ``profile_memory`` gives every block allocated and freed with the allocator's
exact totals (the Trace's ``memory`` table), named by the CPU op around it; its Python line is
only the function's first line, and only with ``with_stack``. Where
``torch.cuda.memory._record_memory_history(...)`` was on, the allocator also kept each action's
own stack: at the stop we take ``torch.cuda.memory._snapshot()`` (only then: a snapshot of a long
history costs seconds) and

- restrict its actions to the recorded region: the Trace's own window, time 0 to ``span_us``
  (under ``schedule=``, the last cycle's), on the Unix clock both write (the snapshot's
  ``time_us``, the trace's ``time_origin_ns``), or the wall clock's start and stop where the
  trace has no window;
- give each of the trace's allocations the line the history names for it
  (:func:`~kernelscope.trace.memory_snapshot.match_allocations`: same device and address,
  nearest in time), so the peak stays the profiler's exact figure and the lines are the
  snapshot's;
- where the trace holds no GPU allocator event (``lean=True``, no CPU activity, may have none), the
  history's rows in the window become the memory table (``rep.memory.source`` is then
  ``"allocator history"``: sizes rounded to the allocator's 512-byte blocks).

``meta["memory_history"]`` says what was used and how much matched.
"""
from __future__ import annotations

import numpy as np


def history_on(torch) -> bool | None:
    """Whether torch's allocator is recording its history (``_record_memory_history``): None
    where this torch cannot tell without a snapshot.

    >>> import torch
    >>> history_on(torch)
    False
    """
    try:
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return False
    except Exception:  # noqa: BLE001 - a torch without CUDA
        return False
    check = getattr(torch._C, "_cuda_isHistoryEnabled", None)
    if check is None:
        return None
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - an older signature: let the snapshot tell
        return None


def take_snapshot(torch, notes: list) -> dict | None:
    """``torch.cuda.memory._snapshot()`` where the allocator history is on and holds actions,
    else None; a failure is a note, never the recording's end.

    >>> import torch
    >>> take_snapshot(torch, []) is None      # no history recorded
    True
    """
    if history_on(torch) is False:
        return None
    try:
        snap = torch.cuda.memory._snapshot()
    except Exception as e:  # noqa: BLE001 - the recording stands without the history
        notes.append(f"the allocator history could not be read ({type(e).__name__}: {e})"[:300])
        return None
    traces = snap.get("device_traces") if isinstance(snap, dict) else None
    if not isinstance(traces, list) or not any(isinstance(t, list) and t for t in traces):
        return None
    return snap


def window_us(trace, wall_ns) -> tuple:
    """``(origin_us, end_us)``: the recorded region on the Unix clock in microseconds, from the
    Trace's time origin and span, else from the wall clock's ``(start, stop)`` in ns.

    >>> from kernelscope.trace.model import Trace
    >>> window_us(Trace.empty({"time_origin_ns": 5_000_000, "span_us": 10.0}), None)
    (5000.0, 5010.0)
    >>> window_us(Trace.empty(), (1_000, 9_000))
    (1.0, 9.0)
    """
    origin, span = trace.meta.get("time_origin_ns"), trace.meta.get("span_us")
    if isinstance(origin, int) and origin > 0 and span is not None:
        return origin / 1000.0, origin / 1000.0 + float(span)
    if wall_ns is None:
        return None, None
    return wall_ns[0] / 1000.0, wall_ns[1] / 1000.0


def attach_history(trace, snap: dict, wall_ns=None) -> None:
    """Join the snapshot ``snap`` to the live ``trace`` (in place): the lines of its allocations,
    or its rows as the memory table where the trace has no GPU allocator event (module docstring).

    >>> from kernelscope.trace.model import Trace
    >>> t = Trace.empty({"time_origin_ns": 0, "span_us": 1.0}); attach_history(t, {"device_traces": [[]]})
    >>> t.meta["memory_history"]["used"]
    'nothing'
    """
    from kernelscope.trace.memory_snapshot import first_time_us, match_allocations, snapshot_table
    start, end = window_us(trace, wall_ns)
    info: dict = {"used": "nothing", "window_us": None, "events": 0}
    trace.meta["memory_history"] = info
    if start is None or not isinstance(snap.get("segments"), list):
        return
    hist = snapshot_table(snap, origin_us=start)
    t = hist["start_us"].to_numpy(dtype=float)
    hist = hist[(t >= 0) & (t <= end - start)].reset_index(drop=True)
    info.update(window_us=[0.0, end - start], events=len(hist))
    first = first_time_us(snap)
    if first > start:
        trace.meta.setdefault("notes", []).append(
            f"the allocator history begins {(first - start) / 1000:.1f} ms into the recording (its max_entries "
            "ring dropped what came before): earlier allocations have no line from it")
    if not len(hist):
        return
    mem = trace.memory
    gpu = (mem["name"] == "[memory]").to_numpy() & (mem["device_type"].fillna(-1) == 1).to_numpy()
    if not gpu.any():
        import pandas as pd
        trace.memory = pd.concat([mem, hist], ignore_index=True) if len(mem) else hist
        info["used"] = "table"
        return
    rows = match_allocations(mem, hist)
    hit = rows >= 0
    src = mem["source"].to_numpy(dtype=object).copy()
    lines = hist["source"].to_numpy(dtype=object)[np.maximum(rows, 0)]
    take = hit & np.array([isinstance(v, str) and bool(v) for v in lines], dtype=bool)
    src[take] = lines[take]
    mem["source"] = src
    info.update(used="lines", allocations=int(((mem["bytes"].fillna(0) > 0).to_numpy() & gpu).sum()),
                matched=int(hit.sum()), lines=int(take.sum()))
