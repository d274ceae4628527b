"""Which Python line launched each kernel: the innermost user frame around its launch call.

torch.profiler's ``with_stack`` records Python frames as ``python_function`` events named
``file(line): func``; frames on one thread nest, so one sweep in time order with a stack finds
each launch's innermost frame. The line-mark capture (``kernelscope.capture.lines``) uses the
same sweep over its own marks, and the allocator's events find the CPU op that holds them
(:func:`innermost_spans`).
"""
from __future__ import annotations

import re

_FRAME_RE = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
# Frames from these places are library code: the source line a user wants is the innermost
# frame outside them.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "<frozen", "/lib/python3", "torch/", "<string>")


def is_user_frame(name: str) -> bool:
    """Whether a ``python_function`` frame name points at user code.

    >>> is_user_frame("/tmp/ipykernel_1/123.py(4): <module>")
    True
    >>> is_user_frame(".../site-packages/torch/nn/modules/linear.py(125): forward")
    False
    """
    m = _FRAME_RE.match(name)
    if not m:
        return False
    return not any(s in m.group("file") for s in _LIBRARY_MARKERS)


def innermost_frames(tids, times, frames: dict) -> list:
    """For each (tid, time), the innermost enclosing user frame's ``file(line): func``, or None.

    ``frames`` holds the lists ``name``, ``tid``, ``start_us``, ``duration_us`` (a frames table's
    columns); only user frames (:func:`is_user_frame`) count.

    >>> innermost_frames([1], [5.0], {"name": ["a.py(3): f"], "tid": [1], "start_us": [0.0],
    ...                                "duration_us": [10.0]})
    ['a.py(3): f']
    """
    by_tid = {}
    user: dict = {}     # names repeat (one per line of code): each is tested once
    for name, tid, s, d in zip(frames["name"], frames["tid"], frames["start_us"], frames["duration_us"]):
        ok = user.get(name)
        if ok is None:
            ok = user[name] = is_user_frame(name)
        if ok:
            by_tid.setdefault(tid, []).append((s, s + d, name))
    return innermost_spans(tids, times, by_tid)


def innermost_spans(tids, times, by_tid: dict) -> list:
    """For each (tid, time), the value of the innermost span of ``by_tid[tid]`` (a list of
    ``(start, end, value)``, nested as one thread's frames and ops are) that holds the time, or
    None: one sweep per thread in time order with a stack.

    >>> innermost_spans([1, 1], [2.0, 9.0], {1: [(0.0, 10.0, "outer"), (1.0, 3.0, "inner")]})
    ['inner', 'outer']
    """
    out = [None] * len(times)
    queries = {}
    for i, (tid, t) in enumerate(zip(tids, times)):
        if t is not None and tid in by_tid:
            queries.setdefault(tid, []).append((t, i))
    for tid, qs in queries.items():
        fs = sorted(by_tid[tid], key=lambda f: (f[0], -f[1]))
        qs.sort()
        stack, j = [], 0
        for t, i in qs:
            while j < len(fs) and fs[j][0] <= t:
                while stack and stack[-1][1] < fs[j][0]:
                    stack.pop()
                stack.append(fs[j])
                j += 1
            while stack and stack[-1][1] < t:
                stack.pop()
            if stack:
                out[i] = stack[-1][2]
    return out
