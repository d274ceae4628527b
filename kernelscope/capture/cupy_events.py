"""CUDA events from CuPy, for regions in processes that use CuPy and never imported torch.

torch.profiler still records the kernels (CUPTI sees the whole process), but timing the region with
``torch.cuda.Event`` would make torch set up its own CUDA state in a CuPy-only program; CuPy's
events measure the same thing on CuPy's streams.
"""
from __future__ import annotations

import sys


def wanted(torch_was_imported: bool) -> bool:
    """Whether the region's CUDA events should come from CuPy: CuPy is in use, torch was not.

    >>> wanted(True)
    False
    """
    return not torch_was_imported and "cupy" in sys.modules


def start_events():
    """Record a start event on CuPy's current stream and on the null stream; returns
    ``[(stream, start, end), ...]`` as the recorder keeps them."""
    cp = sys.modules["cupy"]
    streams = [cp.cuda.get_current_stream()]
    null = cp.cuda.Stream.null
    if streams[0].ptr != null.ptr:
        streams.append(null)
    out = [(s, cp.cuda.Event(), cp.cuda.Event()) for s in streams]
    for s, start, _ in out:
        start.record(s)
    return out


def new_pair():
    """A (start, end) event pair for one ``--repeat`` iteration, the start recorded now."""
    cp = sys.modules["cupy"]
    pair = (cp.cuda.Event(), cp.cuda.Event())
    pair[0].record()
    return pair


def synchronize():
    sys.modules["cupy"].cuda.Device().synchronize()


def elapsed_ms(a, b) -> float:
    """Milliseconds from event ``a`` to event ``b`` (both recorded and complete)."""
    return float(sys.modules["cupy"].cuda.get_elapsed_time(a, b))
