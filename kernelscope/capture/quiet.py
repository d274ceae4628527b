"""Keeping the profiler's own messages out of a cell's output.

Kineto, torch.profiler's C++ half, writes log lines straight to file descriptor 2: ``USDT: ...
profiler_start`` and ``profiler_stop`` on every recording, and ``gpuGetDeviceCount failed with
code 35`` on a machine without a GPU. Jupyter shows them as red stderr under the cell, as if the
user's code had failed. :func:`captured_stderr` points descriptor 2 at a temporary file while the
profiler starts, stops and hands out its results (never while the user's code runs, whose own
stderr still shows), and keeps what was written; :func:`notes_from` drops the known noise and
turns anything else into report notes, so nothing the profiler says is lost.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

# Kineto's lines that say nothing a report does not (start/stop markers; the CUDA device count
# failing where torch.cuda.is_available() already said there is no GPU).
NOISE = (re.compile(r"^\s*USDT:"), re.compile(r"^\s*STAGE:"),
         re.compile(r"gpuGetDeviceCount failed with code \d+"))
# Lines kept in meta["profiler_log"] / turned into notes, at most.
MAX_LOG_LINES = 50
MAX_NOTES = 5


@contextlib.contextmanager
def captured_stderr(log: list):
    """Route file descriptor 2 into ``log`` (a list of lines) for the ``with`` block.

    >>> log = []
    >>> with captured_stderr(log):
    ...     _ = os.write(2, b"USDT: profiler_start\\n")
    >>> log
    ['USDT: profiler_start']
    """
    try:
        saved = os.dup(2)
    except OSError:     # no descriptor 2 (a detached process): nothing to keep out of a cell
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        for stream in (sys.stderr, sys.__stderr__):
            try:
                stream.flush()   # what Python wrote before goes where it was going
            except (AttributeError, ValueError, OSError):
                pass
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", errors="replace")
            log.extend(ln for ln in text.splitlines() if ln.strip())


def notes_from(log: list) -> list:
    """The lines of a captured log that are not known noise, as report notes.

    >>> notes_from(["USDT:2026 6703 SyncActivityProfilerHandler.cpp:39] profiler_start", "CUPTI_ERROR_X"])
    ['torch.profiler said: CUPTI_ERROR_X']
    """
    said = [ln.strip() for ln in log if not any(p.search(ln) for p in NOISE)]
    return [f"torch.profiler said: {ln[:300]}" for ln in said[:MAX_NOTES]]
