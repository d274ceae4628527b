"""Which line of a notebook cell launched each kernel (``%%kernelprofile --stack``).

torch.profiler's Python tracer names a frame by the line it *started* on, so every kernel a
cell's straight-line code launches lands on the cell's first line. To get the line itself we
trace only the cell's own code objects (``sys.settrace`` filtered by file name) and open a
profiler annotation ``kernelscope.line.N`` while line N runs. Annotations share the profiler's
clock and thread ids, so a kernel maps to the innermost annotation around its launch call.
The annotation's name carries the ``file(line): function`` the reader uses for frames.
"""
from __future__ import annotations

import sys

import pandas as pd

LINE_MARK = "kernelscope.line."


class LineMarks:
    """While active, each executed line of code whose file ``match``es is a profiler annotation.

    ``match`` is a file name or a predicate on file names (e.g. :func:`is_cell_file`).

    >>> with profile(with_stack=True), LineMarks("<ipython-input-3-abc>"):   # doctest: +SKIP
    ...     exec(code, ns)
    """

    def __init__(self, match):
        self.match = (lambda f: f == match) if isinstance(match, str) else match
        self._seen = {}   # file name -> matches, so the predicate runs once per file
        self._open = {}   # frame -> the annotation of the line it is on
        self._prev = None

    def __enter__(self):
        from torch.autograd.profiler import record_function
        self._rf = record_function
        self._prev = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._prev)
        for rf in self._open.values():  # frames left by an exception that skipped 'return'
            rf.__exit__(None, None, None)
        self._open.clear()
        return False

    def _call(self, frame, event, arg):
        f = frame.f_code.co_filename
        hit = self._seen.get(f)
        if hit is None:
            hit = self._seen[f] = bool(self.match(f))
        return self._line if hit else None  # other code runs untraced

    def _line(self, frame, event, arg):
        if event == "line":
            rf = self._open.pop(frame, None)
            if rf is not None:
                rf.__exit__(None, None, None)
            co = frame.f_code
            rf = self._rf(f"{LINE_MARK}{co.co_filename}({frame.f_lineno}): {co.co_name}")
            rf.__enter__()
            self._open[frame] = rf
        elif event == "return":
            rf = self._open.pop(frame, None)
            if rf is not None:
                rf.__exit__(None, None, None)
        return self._line


def traced_file(source, match) -> bool:
    """Whether a reader ``source`` (``file(line): func``) is a module-level frame of traced code.

    >>> traced_file("<ipython-input-3-abc>(0): <module>", "<ipython-input-3-abc>")
    True
    """
    if not isinstance(source, str) or not source.endswith(": <module>"):
        return False
    file = source.rsplit("(", 1)[0]
    return file == match if isinstance(match, str) else bool(match(file))


def cell_number(shell) -> int | None:
    """The ``In [N]`` of the cell an IPython shell is running now, or None outside a numbered cell.

    IPython 8 counts a cell after running it (``execution_count`` is N while In [N] runs); IPython
    9 counts it before (N + 1). Both store the cell's input first, at index N of the history, so
    the history's length says which.

    >>> class Hist: input_hist_raw = ["", "a = 1", "b = 2"]
    >>> class Shell: execution_count = 3; history_manager = Hist()
    >>> cell_number(Shell())    # IPython 9: In [2] runs while the counter reads 3
    2
    """
    n = getattr(shell, "execution_count", None)
    if not isinstance(n, int) or isinstance(n, bool):
        return None
    hist = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if isinstance(hist, list) and len(hist) == n and n > 1:
        return n - 1
    return n


def is_cell_file(name: str) -> bool:
    """Whether a code object's file name is an IPython cell's.

    >>> is_cell_file("/tmp/ipykernel_812/2183.py"), is_cell_file("<ipython-input-4-1f2e>")
    (True, True)
    """
    return name.startswith("<ipython-input-") or "/ipykernel_" in name


def line_sources(tids, times, ops: pd.DataFrame) -> list:
    """For each (thread, host time), the ``file(line): function`` of the innermost line
    annotation around it, else None. Pass a kernel's ``launch_tid`` and ``launch_start_us``.

    >>> s = ks.load("kernelprofile_stack.pt.trace.json.gz")
    >>> k = s.kernels
    >>> line_sources(k["launch_tid"], k["launch_start_us"], s.ops)[:1]
    ['<ipython-input-1-7ee4b963e6e8>(2): <module>']
    """
    from kernelscope.trace.sources import innermost_frames
    times = [None if t is None or t is pd.NA or t != t else float(t) for t in list(times)]
    if not len(ops):
        return [None] * len(times)
    m = ops[ops["name"].astype(str).str.startswith(LINE_MARK)]
    fr = {"name": [n[len(LINE_MARK):] for n in m["name"]], "tid": m["tid"].tolist(),
          "start_us": m["start_us"].tolist(), "duration_us": m["duration_us"].tolist()}
    out = innermost_frames(list(tids), times, fr)
    # Work launched from other threads (autograd's backward, data loaders) has no line marks
    # of its own: it belongs to the line that was running when it launched, on any thread.
    miss = [i for i, s in enumerate(out) if s is None and times[i] is not None]
    if miss and len(m):
        fr["tid"] = [0] * len(fr["name"])
        found = innermost_frames([0] * len(miss), [times[i] for i in miss], fr)
        for i, s in zip(miss, found):
            out[i] = s
    return out
