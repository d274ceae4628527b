"""Reading torch.profiler (Kineto) Chrome traces into a :class:`Trace`.

The reader's jobs, one module each: safe file reading (:mod:`.files`), decoding
(:mod:`.decode`), building the tables and joining them (:mod:`.tables`), the header's devices
and meta data (:mod:`.header`), the clock (:mod:`.timebase`) and the Python source of each
launch (:mod:`.sources`). This module puts them in order. On a 1M-event trace the typed decode
is several times faster than ``json.load`` (see ``benchmarks/``).
"""
from __future__ import annotations

import os

import msgspec
import numpy as np

from kernelscope.errors import TraceError
from kernelscope.trace import split, stream
from kernelscope.trace.builder import TableBuilder
from kernelscope.trace.decode import CarefulPath, RawFile, check_format, decode_document, event_chunks, no_gc, to_utf8
from kernelscope.trace.files import read_blocks
from kernelscope.trace.guard import checked_blocks, read_text
from kernelscope.trace.header import devices_columns, header_meta
from kernelscope.trace.model import (
    COPY_COLUMNS,
    DEVICE_COLUMNS,
    FRAME_COLUMNS,
    KERNEL_COLUMNS,
    MEMORY_COLUMNS,
    OP_COLUMNS,
    RUNTIME_COLUMNS,
    SYNC_COLUMNS,
    Trace,
    frame,
)
from kernelscope.trace.sources import innermost_frames
from kernelscope.trace.tables import (
    KeyIndex,
    build_tables,
    complete,
    join_launch,
    join_memory,
    join_op,
    lookup,
    sync_table,
)
from kernelscope.trace.timebase import clock_meta, cover_span, shift, time_origin


def read_kineto(source, *, name=None, progress=None) -> Trace:
    """Read a torch.profiler Chrome trace (a path to ``.json``/``.json.gz`` or its bytes).

    The text is decoded a chunk of events at a time as it streams in (:mod:`.stream`), and
    the tables are built as the chunks come, so that a trace of several GB is never held whole.
    ``progress(done, total)`` is called with the file's bytes read so far.

    >>> from kernelscope.trace.kineto import read_kineto
    >>> t = read_kineto("launch_bound.pt.trace.json.gz")
    >>> len(t.kernels)
    2000
    """
    notes = []
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "<bytes>"
        view = memoryview(source)
        blocks = (view[i:i + stream.BLOCK_BYTES] for i in range(0, len(view), stream.BLOCK_BYTES))
    else:
        label = name or os.fspath(source)
        with no_gc():
            # A large plain file: read by several processes at once (None: by this one, below).
            got = split.read_split(source, progress, jax_check=_own_format)
            if got is not None:
                doc, builder, n_events, processes = got
                trace = _finish(doc, builder, n_events, label, notes)
                trace.meta["read_processes"] = processes
                return trace
        blocks = read_blocks(source, notes, progress, block_bytes=stream.BLOCK_BYTES)
    blocks = checked_blocks(blocks, label)    # a huge string refused as it passes (guard.py)
    with no_gc():
        try:
            events = stream.EventStream(blocks, jax_check=_own_format)
            return _build(events.doc, events.chunks(), lambda: events.n_events, label, notes)
        except (stream.NotStreamable, CarefulPath):
            pass    # not the common shape: the careful path below reads it whole and says why
        finally:
            if hasattr(blocks, "close"):
                blocks.close()
    notes.clear()
    # The whole text, under checks that refuse a bomb before it is held (guard.py).
    raw = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else read_text(source, notes, label)
    return _read_whole(raw, label, notes)


def _own_format(raw: bytes) -> bool:
    """Whether a file's first bytes are a format with a reader of its own (JAX's perfetto trace,
    an ONNX Runtime profile): the streaming readers then leave it to the careful path.

    >>> _own_format(b'[{"cat": "Node", "args": {"op_name": "Gemm"}}]'), _own_format(b'{"traceEvents": []}')
    (True, False)
    """
    from kernelscope.trace.onnxruntime import looks_like_onnxruntime
    from kernelscope.trace.perfetto import looks_like_jax
    return looks_like_jax(raw) or looks_like_onnxruntime(raw)


def _read_whole(raw: bytes, label, notes) -> Trace:
    """The careful path: the whole text decoded at once, leniently where it must be."""
    raw = to_utf8(raw, label, notes)
    from kernelscope.trace.onnxruntime import looks_like_onnxruntime, read_onnxruntime_bytes
    from kernelscope.trace.perfetto import looks_like_jax, read_jax_bytes
    if looks_like_jax(raw):     # JAX's own profiler: same Chrome JSON, its own event vocabulary
        return read_jax_bytes(raw, label, notes)
    if looks_like_onnxruntime(raw):     # ONNX Runtime's profile: a bare array of its own events
        return read_onnxruntime_bytes(raw, label, notes)
    with no_gc():
        try:
            doc = msgspec.json.decode(raw, type=RawFile)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            doc = None  # not the common shape: the careful path below says what is wrong
        if doc is not None:
            check_format(doc, label)
        if doc is None or not isinstance(doc.traceEvents, list):
            doc, notes = decode_document(raw, label, notes)
            return build_trace(doc, label, notes)
        raws = doc.traceEvents
        before = list(notes)
        try:
            # Decoding a chunk at a time keeps peak memory near the size of the tables built.
            return _build(doc, event_chunks(raws, label, notes), len(raws), label, notes)
        except CarefulPath:
            del doc, raws
            notes[:] = before
            doc, notes = decode_document(raw, label, notes)
            return build_trace(doc, label, notes)


def build_trace(doc, label="<trace>", notes=None) -> Trace:
    """Columnar tables from a decoded trace document (a :class:`~.decode.TraceFile` whose
    events are :class:`~.decode.Event`; see :func:`read_kineto`). The live capture builds its
    documents so too."""
    events = doc.traceEvents
    if events is msgspec.UNSET or events is None:
        raise TraceError(label, "not a torch.profiler trace: it has no 'traceEvents' list")
    return _build(doc, [events], len(events), label, notes)


def _build(doc, chunks, n_events, label, notes) -> Trace:
    # The same list object: chunk decoding appends its notes to it while we iterate.
    notes = notes if notes is not None else []
    builder = TableBuilder()
    for events in chunks:
        builder.add(events)
        del events    # the decoded events go as soon as their columns are built
    return _finish(doc, builder, n_events() if callable(n_events) else n_events, label, notes)


def _finish(doc, builder, n_events, label, notes) -> Trace:
    """The Trace from the tables a builder holds (every event added) and the file's header."""
    notes = notes if notes is not None else []
    if builder.bad_times:
        notes.append(f"skipped {builder.bad_times} event(s) with a missing, negative, out-of-range or non-numeric time")
    tables, span, counter_events = build_tables(builder), builder.span, builder.counter_events
    del builder

    origin = time_origin(tables, span)
    shift(tables, origin)
    meta = {"source": label, **clock_meta(doc.baseTimeNanoseconds, origin, span), **header_meta(doc),
            "notes": notes}

    rt, ops, fr = tables["runtime"], tables["ops"], tables["frames"]
    k, c = tables["kernels"], tables["copies"]
    # Joins: correlation -> launching runtime call; External id -> enclosing CPU op (cpu_op rows
    # win over annotations that share the id space).
    cpu_first = np.argsort((ops["cat"] != "cpu_op").to_numpy(), kind="stable")
    op_of = KeyIndex(ops["external_id"], order=cpu_first)
    for t in (k, c):
        join_launch(t, rt, lookup(rt["correlation"], t["correlation"]))
        join_op(t, ops, op_of(t["external_id"]))
    if len(fr) and len(k):
        k["source"] = innermost_frames(k["launch_tid"].tolist(), k["launch_start_us"].tolist(),
                                       {col: fr[col].tolist() for col in ("name", "tid", "start_us", "duration_us")})
    syncs = sync_table(rt, tables["gsyncs"], ops, op_of)
    mem = tables["memory"]
    if len(mem):
        join_memory(mem, ops, fr)

    if not len(k) and not len(c) and not len(ops) and not len(rt):
        if not n_events:
            raise TraceError(label, "the trace holds no events" + (f" ({'; '.join(notes)})" if notes else ""))
        raise TraceError(label, "not a torch.profiler trace: none of its events are kernels, copies, "
                                "runtime calls or CPU ops")
    if not len(k):
        notes.append("no GPU kernels were recorded")

    trace = Trace(
        kernels=complete(k, KERNEL_COLUMNS), copies=complete(c, COPY_COLUMNS),
        runtime=complete(rt, RUNTIME_COLUMNS), ops=complete(ops, OP_COLUMNS),
        frames=complete(fr, FRAME_COLUMNS), syncs=complete(syncs, SYNC_COLUMNS),
        devices=frame(devices_columns(doc.deviceProperties), DEVICE_COLUMNS), meta=meta,
        memory=complete(mem, MEMORY_COLUMNS),
    )
    if counter_events:
        from kernelscope.trace.counters import read_counter_tracks
        read_counter_tracks(trace, counter_events, origin)
    cover_span(trace)
    return trace
