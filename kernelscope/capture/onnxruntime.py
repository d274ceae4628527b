"""An ONNX Runtime session recorded by ``ks.profile(onnxruntime=session)``: at the stop its
profile is ended and its nodes joined to the kernels CUPTI recorded
(:func:`kernelscope.trace.onnxruntime_join.join_session`)."""
from __future__ import annotations


def with_session(trace, session):
    """``trace`` with the nodes of ``session`` (an ``onnxruntime.InferenceSession`` created with
    ``SessionOptions.enable_profiling = True``) over their kernels. ``end_profiling()`` is called:
    ONNX Runtime writes its file then, and profiles a session once. A session without profiling
    leaves the trace as it was, with a note saying why.

    >>> from kernelscope.trace.model import Trace
    >>> class NotProfiling:
    ...     def end_profiling(self): return ""
    >>> with_session(Trace.empty(), NotProfiling()).meta["notes"][-1][:60]
    'the ONNX Runtime session was not profiling (set SessionOptio'
    """
    from kernelscope.trace.onnxruntime_join import join_session, read_session_profile
    path = session.end_profiling()
    if not path:
        trace.meta.setdefault("notes", []).append(
            "the ONNX Runtime session was not profiling (set SessionOptions.enable_profiling = True "
            "before creating it): its kernels have no node")
        return trace
    return join_session(trace, read_session_profile(path), session.get_profiling_start_time_ns(), label=path)
