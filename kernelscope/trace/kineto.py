"""Reading torch.profiler (Kineto) Chrome traces into a :class:`Trace`.

Decoding is typed (msgspec): only the fields we read are materialized, as small structs that
the garbage collector does not track, and tables are built one column at a time. On a 1M-event
trace that is several times faster than ``json.load`` (see ``benchmarks/``).
"""
from __future__ import annotations

import gc
import json
import os
import re
import stat
import zlib
from contextlib import contextmanager
from typing import Any, Union

import msgspec
import numpy as np
import pandas as pd

from ..errors import TraceError
from .model import (COPY_COLUMNS, DEVICE_COLUMNS, FRAME_COLUMNS, KERNEL_COLUMNS, OP_COLUMNS,
                    RUNTIME_COLUMNS, SYNC_COLUMNS, Trace, frame)

Num = Union[int, float, None]


Int = Union[int, None]
Float = Union[float, None]
Str = Union[str, None]


class Args(msgspec.Struct, gc=False):
    """The ``args`` fields we read; every other key is skipped by the decoder."""

    external_id: Int = msgspec.field(default=None, name="External id")
    correlation: Int = None
    stream: Int = None
    device: Int = None
    grid: Union[list[int], None] = None
    block: Union[list[int], None] = None
    registers: Int = msgspec.field(default=None, name="registers per thread")
    shared_memory: Int = msgspec.field(default=None, name="shared memory")
    est_occupancy: Float = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Int = None
    bandwidth: Float = msgspec.field(default=None, name="memory bandwidth (GB/s)")
    cbid: Int = None
    # Raw (a zero-copy slice of the input): shapes are decoded once per distinct text in
    # _op_table, since the same shapes repeat across thousands of ops.
    input_dims: msgspec.Raw = msgspec.field(default=None, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=None, name="Input type")
    flops: Float = None
    sequence: Int = msgspec.field(default=None, name="Sequence number")
    kernel_backend: Str = None
    python_id: Int = msgspec.field(default=None, name="Python id")
    parent_id: Int = msgspec.field(default=None, name="Python parent id")
    sync_type: Str = msgspec.field(default=None, name="cuda_sync_kind")


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: Str = None
    pid: Union[int, str, None] = None
    tid: Union[int, str, None] = None
    ts: Float = None
    dur: Float = None
    args: Union[Args, None] = None


class TraceFile(msgspec.Struct, gc=False):
    traceEvents: Any = msgspec.UNSET
    deviceProperties: Any = None
    baseTimeNanoseconds: Any = None
    schemaVersion: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    cupti_version: Any = None
    with_flops: Any = None
    record_shapes: Any = None
    traceName: Any = None
    distributedInfo: Any = None


class _TypedFile(TraceFile, gc=False):
    traceEvents: Union[list[Event], msgspec.UnsetType] = msgspec.UNSET


class _RawFile(TraceFile, gc=False):
    # Each event as a zero-copy slice of the input, decoded later a chunk at a time.
    traceEvents: Union[list[msgspec.Raw], msgspec.UnsetType] = msgspec.UNSET


# Host-blocking synchronization calls, by runtime/driver API name.
SYNC_CALLS = {
    "cudaDeviceSynchronize": "device", "cudaStreamSynchronize": "stream",
    "cudaEventSynchronize": "event", "cuCtxSynchronize": "device",
    "cuStreamSynchronize": "stream", "cuEventSynchronize": "event",
    "hipDeviceSynchronize": "device", "hipStreamSynchronize": "stream",
    "hipEventSynchronize": "event",
}
GRAPH_LAUNCH_CALLS = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
_COPY_RE = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")


@contextmanager
def _no_gc():
    # Millions of short-lived objects make the cyclic GC run again and again for nothing;
    # pausing it makes decoding about 3x faster.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def _size(n) -> str:
    for unit, k in _UNITS:
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} bytes"


def max_trace_bytes() -> int:
    """The most bytes of JSON kernelscope reads from one file, after decompression.

    A guard against gzip bombs and files that would exhaust memory: decoding needs about as
    much memory again as the JSON text. The default is a quarter of physical memory (at least
    256 MiB); set ``KERNELSCOPE_MAX_TRACE_BYTES`` (bytes) to change it.

    >>> max_trace_bytes() >= 256 << 20
    True
    """
    env = os.environ.get("KERNELSCOPE_MAX_TRACE_BYTES")
    if env:
        try:
            return int(env)
        except ValueError:
            raise ValueError(f"KERNELSCOPE_MAX_TRACE_BYTES must be a number of bytes, not {env!r}") from None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        phys = 16 << 30
    return max(256 << 20, phys // 4)


def _too_big(n, limit):
    return (f"it holds more than {_size(limit)} of JSON ({_size(n)} or more), the most kernelscope "
            "reads (set KERNELSCOPE_MAX_TRACE_BYTES to raise the limit)")


def stat_regular(path: str, what: str = "a trace file") -> os.stat_result:
    """``os.stat`` of a file to read, or a TraceError: missing, a directory, or not a regular
    file (a pipe or a device would block or never end)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise TraceError(path, "no such file") from None
    except OSError as e:
        raise TraceError(path, f"cannot be opened ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(path, f"is a directory, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(path, "is not a regular file")
    return st


def _read_bytes(path, notes=None) -> bytes:
    """The file's bytes, gunzipped when they are gzip; ``notes`` collects what was tolerated."""
    path = os.fspath(path)
    st = stat_regular(path)
    limit = max_trace_bytes()
    if st.st_size > limit:
        raise TraceError(path, _too_big(st.st_size, limit))
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path, limit, notes)
    return raw


def _gunzip(data: bytes, label, limit, notes=None) -> bytes:
    """Decompress every gzip member, never producing more than ``limit`` bytes.

    The header's size field (ISIZE) is not trusted; zlib checks each member's CRC and length.
    """
    parts, total = [], 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(data, limit - total + 1)
        except zlib.error as e:
            raise TraceError(label, f"the gzip stream is damaged or truncated ({e})") from None
        total += len(out)
        if total > limit:
            raise TraceError(label, _too_big(total, limit))
        parts.append(out)
        if not d.eof:
            raise TraceError(label, "the gzip stream is damaged or truncated (it ends before its "
                                    "end-of-stream marker)")
        data = d.unused_data
        if data[:2] != b"\x1f\x8b":
            break  # concatenated gzip members are legal (`cat a.gz b.gz`); anything else is junk
    if data and notes is not None:
        notes.append(f"ignored {len(data)} byte(s) of trailing data after the gzip stream")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_kineto(source, *, name=None) -> Trace:
    """Read a torch.profiler Chrome trace (a path to ``.json``/``.json.gz`` or its bytes).

    >>> from kernelscope.trace.kineto import read_kineto
    >>> t = read_kineto("launch_bound.pt.trace.json.gz")       # doctest: +SKIP
    >>> len(t.kernels)                                         # doctest: +SKIP
    2000
    """
    notes = []
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, label = bytes(source), name or "<bytes>"
    else:
        raw, label = _read_bytes(source, notes), name or os.fspath(source)
    raw = _utf8(raw, label, notes)
    with _no_gc():
        try:
            doc = msgspec.json.decode(raw, type=_RawFile)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            doc = None  # not the common shape: the careful path below says what is wrong
        if doc is None or not isinstance(doc.traceEvents, list):
            doc, notes = _decode(raw, label, notes)
            return build_trace(doc, label, notes)
        raws = doc.traceEvents
        before = list(notes)
        try:
            # Decoding a chunk at a time keeps peak memory near the size of the tables built.
            return _build(doc, _event_chunks(raws, label, notes), len(raws), label, notes)
        except _CarefulPath:
            del doc, raws
            notes[:] = before
            doc, notes = _decode(raw, label, notes)
            return build_trace(doc, label, notes)


class _CarefulPath(Exception):
    """A chunk's text needs the lenient decoders (bad UTF-8, NaN literals, deep nesting)."""


def _event_chunks(raws, label, notes):
    for i in range(0, len(raws), CHUNK_EVENTS):
        blob = b"[" + b",".join(raws[i:i + CHUNK_EVENTS]) + b"]"
        try:
            yield msgspec.json.decode(blob, type=list[Event])
        except (msgspec.DecodeError, RecursionError):
            raise _CarefulPath from None
        except msgspec.ValidationError:
            # Some event in this chunk has an unexpected shape: keep the rest of it.
            yield _loose_events({"traceEvents": msgspec.json.decode(blob)}, label, notes).traceEvents


_BOMS = ((b"\xef\xbb\xbf", None), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _utf8(raw: bytes, label, notes) -> bytes:
    """The JSON text as UTF-8 without a byte-order mark (editors on Windows add one)."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            if codec is None:
                return raw[len(bom):]
            try:
                text = raw[len(bom):].decode(codec)
            except UnicodeDecodeError as e:
                raise TraceError(label, f"the file starts with a {codec} byte-order mark but is not "
                                        f"valid {codec} ({e.reason} at byte {e.start})") from None
            notes.append(f"the file was {codec.upper()} text; read it as such")
            return text.encode("utf-8", "surrogatepass")
    return raw


_TOO_DEEP = ("the JSON is nested too deeply to read (more than about a thousand levels of "
             "[ or {); torch.profiler never writes that")


def _decode(raw: bytes, label, notes=None):
    """Typed decode; on a type mismatch fall back to a lenient per-event decode.

    Only the typed path runs for well-formed traces. The lenient paths (per-event decode, and
    Python's json for NaN/Infinity, invalid UTF-8 and lone surrogates) cost time only when the
    typed one failed.
    """
    notes = [] if notes is None else notes
    try:
        return msgspec.json.decode(raw, type=_TypedFile), notes
    except msgspec.ValidationError:
        pass  # some event has an unexpected shape: decode loosely below, skipping bad parts
    except msgspec.DecodeError as e:
        if not raw.strip():
            raise TraceError(label, "the file is empty") from None
        msg = str(e)
        if "truncated" in msg.lower():
            raise TraceError(label, "the JSON ends early (truncated file?)") from None
        if not _nonstrict(msg):
            raise TraceError(label, f"not valid JSON ({msg})") from None
    except RecursionError:
        raise TraceError(label, _TOO_DEEP) from None
    try:
        loose = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        # Numbers beyond float64, NaN/Infinity literals or bad text: Python's parser is lenient
        # about each of these.
        loose = _decode_stdlib(raw, label, notes, e)
    return _loose_events(loose, label, notes), notes


def _nonstrict(msg: str) -> bool:
    """Whether msgspec's decode error is one that Python's json module may tolerate."""
    m = msg.lower()
    return "invalid character" in m or "utf-8" in m or "surrogate" in m or "out of range" in m


def _decode_stdlib(raw: bytes, label, notes, first_error):
    if isinstance(first_error, RecursionError):
        raise TraceError(label, _TOO_DEEP)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        notes.append("the file holds bytes that are not UTF-8 (invalid UTF-8); they read as U+FFFD")
    constants = []

    def constant(c):
        constants.append(c)
        return float(c)

    try:
        doc = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise TraceError(label, f"not valid JSON ({first_error}; {e})") from None
    except RecursionError:
        raise TraceError(label, _TOO_DEEP) from None
    if constants:
        notes.append(f"read {len(constants)} non-standard JSON number(s) ({', '.join(sorted(set(constants)))})")
    if _SURROGATE_ESCAPE.search(text):
        n = _scrub_surrogates(doc)
        if n:
            notes.append(f"replaced unpaired UTF-16 surrogates in {n} string(s)")
    return doc


# A \uD800-\uDFFF escape in JSON text; unpaired, Python's json decodes it to a lone surrogate,
# which no table, report file or notebook can hold (it cannot be encoded as UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _scrub_surrogates(doc) -> int:
    """Replace lone surrogates in every string value of ``doc`` by U+FFFD; how many changed.

    Iterative, not recursive: the document may be nested as deep as the parser allowed.
    """
    changed, stack = 0, [doc]
    while stack:
        x = stack.pop()
        if not isinstance(x, (dict, list)):
            continue
        for k, v in (x.items() if isinstance(x, dict) else enumerate(x)):
            if isinstance(v, str):
                if not v.isascii() and _SURROGATE.search(v):
                    x[k] = _SURROGATE.sub("\ufffd", v)   # same key: the dict does not resize
                    changed += 1
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return changed


def _loose_events(loose, label, notes):
    """A TraceFile whose events are those of ``loose`` (decoded JSON) that convert to Event."""
    if isinstance(loose, list) and any(isinstance(ev, dict) for ev in loose):
        loose = {"traceEvents": loose}   # Chrome's JSON Array Format: the events, no header
    if not isinstance(loose, dict):
        raise TraceError(label, "not a torch.profiler trace: the top level is not a JSON object")
    events = loose.get("traceEvents", msgspec.UNSET)
    if events is msgspec.UNSET:
        raise TraceError(label, "not a torch.profiler trace: it has no 'traceEvents' list")
    if not isinstance(events, list):
        raise TraceError(label, "not a torch.profiler trace: 'traceEvents' is not a list")
    header = TraceFile(**{f: loose.get(f) for f in TraceFile.__struct_fields__ if f != "traceEvents"})
    good, bad_args, bad = [], 0, 0
    for ev in events:
        _raw_shapes(ev)
        try:
            good.append(msgspec.convert(ev, Event, strict=False))
            continue
        except (msgspec.ValidationError, TypeError):
            pass
        if isinstance(ev, dict) and "args" in ev:
            # Keep the event's name and times; give up only its malformed args.
            try:
                good.append(msgspec.convert({k: v for k, v in ev.items() if k != "args"}, Event, strict=False))
                bad_args += 1
                continue
            except (msgspec.ValidationError, TypeError):
                pass
        bad += 1
    if bad:
        notes.append(f"skipped {bad} malformed event(s) of {len(events)}")
    if bad_args:
        notes.append(f"ignored malformed args of {bad_args} event(s)")
    header.traceEvents = good
    return header


_SURROGATE = re.compile("[\ud800-\udfff]")


def _raw_shapes(ev):
    """In the lenient path, give the Raw-typed args fields the Raw values the typed path would."""
    args = ev.get("args") if isinstance(ev, dict) else None
    if isinstance(args, dict):
        for key in ("Input Dims", "Input type"):
            if key in args and args[key] is not None:
                try:
                    args[key] = msgspec.Raw(msgspec.json.encode(args[key]))
                except (TypeError, ValueError, OverflowError):
                    args[key] = None


def _num(x, kind=float):
    """A number from an untrusted header field, or None."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if kind is int:
        if isinstance(x, float):
            if x != x or abs(x) == float("inf") or x != int(x):
                return None
            x = int(x)
        return x if -(2**63) < x < 2**63 else None
    return float(x) if x == x and abs(x) != float("inf") else None


def _text(x):
    return x if isinstance(x, str) else ("" if x is None else str(x))


_BUCKET = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "copies",
           "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime", "driver": "runtime",
           "cpu_op": "ops", "user_annotation": "ops", "operator": "ops",
           "python_function": "frames", "cuda_sync": "gsyncs", "Trace": "span"}


_INF = float("inf")
_BUCKET_CATS = {b: {c for c, v in _BUCKET.items() if v == b} for b in set(_BUCKET.values())}


def build_trace(doc, label="<trace>", notes=None) -> Trace:
    """Columnar tables from a decoded trace document (see :func:`read_kineto`)."""
    events = doc.traceEvents
    if events is msgspec.UNSET or events is None:
        raise TraceError(label, "not a torch.profiler trace: it has no 'traceEvents' list")
    return _build(doc, [events], len(events), label, notes)


# Events decoded at a time: large enough that per-chunk overhead is negligible, small enough
# that a chunk's structs are a small part of peak memory.
CHUNK_EVENTS = 65536
_TABLES = {"kernels": KERNEL_COLUMNS, "copies": COPY_COLUMNS, "runtime": RUNTIME_COLUMNS,
           "ops": OP_COLUMNS, "frames": FRAME_COLUMNS, "gsyncs": SYNC_COLUMNS}


def _chunk_tables(events, bad_times):
    """Per-bucket column tables (absolute times) for one chunk of decoded events."""
    lists = {b: [] for b in _BUCKET_CATS}
    # One pass with bound append methods: cheaper than a comprehension per bucket.
    append = {c: lists[b].append for c, b in _BUCKET.items()}
    for e in events:
        if e.ph == "X":
            a = append.get(e.cat)
            if a is not None:
                a(e)
    out = {}
    for b, evs in lists.items():
        if not evs:
            continue
        # Missing times become NaN; NaN, infinite, negative or missing times cannot be placed.
        ts = np.array([e.ts for e in evs], dtype=np.float64)
        dur = np.array([e.dur for e in evs], dtype=np.float64)
        good = np.isfinite(ts) & np.isfinite(dur) & (dur >= 0)
        if not good.all():
            keep = np.flatnonzero(good)
            bad_times[0] += len(evs) - len(keep)
            evs, ts, dur = [evs[i] for i in keep.tolist()], ts[keep], dur[keep]
        if not evs:
            continue
        if b == "span":
            out[b] = (float(ts[0]), float(dur[0]))
            continue
        cols = _builders()[b](evs, (ts, dur))
        schema = _TABLES[b]
        out[b] = frame(cols, {c: schema[c] for c in cols})
    return out


def _build(doc, chunks, n_events, label, notes) -> Trace:
    # The same list object: chunk decoding appends its notes to it while we iterate.
    notes = notes if notes is not None else []
    parts = {b: [] for b in _TABLES}
    span = None
    bad_times = [0]
    for events in chunks:
        for b, t in _chunk_tables(events, bad_times).items():
            if b == "span":
                span = span or t
            else:
                parts[b].append(t)
    if bad_times[0]:
        notes.append(f"skipped {bad_times[0]} event(s) with a missing, negative or non-numeric time")
    tables = {}
    for b, schema in _TABLES.items():
        ps = parts[b]
        if len(ps) == 1:
            tables[b] = ps[0]
        elif ps:
            tables[b] = pd.concat(ps, ignore_index=True)
        else:
            tables[b] = frame({}, {c: schema[c] for c in _builders()[b]([], (np.empty(0), np.empty(0)))})
    del parts

    starts = [float(t["start_us"].min()) for t in tables.values() if len(t)]
    t_min = min(starts) if starts else None
    # The profiler's own "Trace" event spans the recorded region.
    span_start = span[0] if span else None
    span_end = span[0] + span[1] if span else None
    origin = span_start if span_start is not None else (t_min or 0.0)
    if t_min is not None and t_min < origin:
        origin = t_min
    for t in tables.values():
        t["start_us"] = t["start_us"] - origin
    base_ns = _num(doc.baseTimeNanoseconds, int) or 0
    meta = {
        "source": label,
        "time_origin_ns": int(base_ns + round(origin * 1000)),
        "span_us": (span_end - origin) if span_end is not None else None,
        "schema_version": doc.schemaVersion if isinstance(doc.schemaVersion, (int, str)) else None,
        "cuda_runtime_version": _num(doc.cuda_runtime_version, int),
        "cuda_driver_version": _num(doc.cuda_driver_version, int),
        "cupti_version": _num(doc.cupti_version, int),
        "with_flops": bool(doc.with_flops) if doc.with_flops is not None else None,
        "record_shapes": bool(doc.record_shapes) if doc.record_shapes is not None else None,
        "trace_name": _text(doc.traceName) if doc.traceName is not None else None,
        "notes": notes,
    }

    rt, ops, fr = tables["runtime"], tables["ops"], tables["frames"]
    k, c = tables["kernels"], tables["copies"]
    # Joins: correlation -> launching runtime call; External id -> enclosing CPU op (cpu_op rows
    # win over annotations that share the id space).
    cpu_first = np.argsort((ops["cat"] != "cpu_op").to_numpy(), kind="stable")
    for t in (k, c):
        _join_launch(t, rt, _lookup(rt["correlation"], t["correlation"]))
        _join_op(t, ops, _lookup(ops["external_id"], t["external_id"], order=cpu_first))
    if len(fr) and len(k):
        k["source"] = _sources(k["launch_tid"].tolist(), k["launch_start_us"].tolist(),
                               {col: fr[col].tolist() for col in ("name", "tid", "start_us", "duration_us")})
    syncs = _sync_table(rt, tables["gsyncs"], ops, cpu_first)

    if not len(k) and not len(c) and not len(ops) and not len(rt):
        if not n_events:
            raise TraceError(label, "the trace holds no events" + (f" ({'; '.join(notes)})" if notes else ""))
        raise TraceError(label, "not a torch.profiler trace: none of its events are kernels, copies, "
                                "runtime calls or CPU ops")
    if not len(k):
        notes.append("no GPU kernels were recorded (CPU-only trace)")

    trace = Trace(
        kernels=_complete(k, KERNEL_COLUMNS), copies=_complete(c, COPY_COLUMNS),
        runtime=_complete(rt, RUNTIME_COLUMNS), ops=_complete(ops, OP_COLUMNS),
        frames=_complete(fr, FRAME_COLUMNS), syncs=_complete(syncs, SYNC_COLUMNS),
        devices=frame(_devices(doc.deviceProperties), DEVICE_COLUMNS), meta=meta,
    )
    _cover_span(trace)
    return trace


def _complete(t, schema):
    """The table with every schema column, in schema order (missing ones empty)."""
    n = len(t)
    for col, kind in schema.items():
        if col not in t.columns:
            t[col] = frame({col: [None] * n}, {col: kind})[col].to_numpy() if kind != "bool" else \
                pd.array([False] * n, dtype="boolean")
    t = t[list(schema)].reset_index(drop=True)
    for col, kind in schema.items():
        if kind == "object" and t[col].dtype != object:
            t[col] = t[col].astype(object)   # pandas 3 may have inferred its string dtype
        elif kind == "int64" and str(t[col].dtype) != "Int64":
            t[col] = t[col].astype("Int64")  # concat with an all-missing part gives float64
    return t


_MISSING_KEY = np.iinfo(np.int64).min


def _lookup(keys: pd.Series, query: pd.Series, order=None) -> np.ndarray:
    """For each query value, the row of its first match in ``keys`` (in ``order``), else -1."""
    if not len(keys) or not len(query):
        return np.full(len(query), -1, dtype=np.int64)
    kv = keys.to_numpy(dtype="int64", na_value=_MISSING_KEY)
    pos = np.arange(len(kv)) if order is None else np.asarray(order)
    kv = kv[pos]
    keep = (kv != _MISSING_KEY) & ~pd.Series(kv).duplicated(keep="first").to_numpy()
    index = pd.Index(kv[keep])
    hit = index.get_indexer(query.to_numpy(dtype="int64", na_value=_MISSING_KEY))
    return np.where(hit >= 0, pos[keep][np.maximum(hit, 0)], -1)


def _take(values: np.ndarray, rows: np.ndarray, fill=None) -> pd.Series:
    """values[rows] where rows >= 0, else ``fill``, as an object column."""
    out = np.full(len(rows), fill, dtype=object)
    m = rows >= 0
    out[m] = values[rows[m]]
    # Explicit object dtype: pandas 3 would infer its Arrow string dtype on assignment.
    return pd.Series(out, dtype=object, copy=False)


def _take_float(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    out = np.full(len(rows), np.nan)
    m = rows >= 0
    out[m] = values[rows[m]]
    return out


def _cover_span(trace):
    """Widen ``span_us`` to cover every recorded interval.

    The profiler's span always does in real recordings; in a damaged or hand-made trace it may
    not, and GPU busy time must never exceed the region's span.
    """
    span = trace.meta.get("span_us")
    if span is None:
        return
    end = span
    for t in (trace.kernels, trace.copies, trace.runtime, trace.ops):
        if len(t):
            end = max(end, float((t["start_us"] + t["duration_us"]).max()))
    if end > span:
        trace.meta["span_us"] = end
        if end - span > 1.0:   # clocks of CPU and GPU events disagree by far less than 1 us
            trace.meta.setdefault("notes", []).append(f"events end {end - span:.1f} us after the profiler's span; "
                                       "the span was widened to cover them")


_EMPTY_ARGS = Args()


def _argss(evs):
    empty = _EMPTY_ARGS
    return [e.args or empty for e in evs]


def _int_or_none(v):
    return v if isinstance(v, int) else None


def _where(evs, a):
    """Device and stream of GPU events: args first, else Chrome's pid/tid lanes."""
    dev = [x.device if x.device is not None else _int_or_none(e.pid) for e, x in zip(evs, a)]
    stream = [x.stream if x.stream is not None else _int_or_none(e.tid) for e, x in zip(evs, a)]
    return dev, stream


def _dims(vs, i):
    return [v[i] if v is not None and len(v) > i else None for v in vs]


def _kernel_table(evs, times):
    a = _argss(evs)
    grids = [x.grid for x in a]
    blocks = [x.block for x in a]
    dev, stream = _where(evs, a)
    return {
        "name": _interned([e.name for e in evs]),
        "device_index": dev,
        "stream": stream,
        "start_us": times[0],
        "duration_us": times[1],
        "correlation": [x.correlation for x in a],
        "external_id": [x.external_id for x in a],
        "grid_x": _dims(grids, 0), "grid_y": _dims(grids, 1), "grid_z": _dims(grids, 2),
        "block_x": _dims(blocks, 0), "block_y": _dims(blocks, 1), "block_z": _dims(blocks, 2),
        "registers_per_thread": [x.registers for x in a],
        "shared_mem_bytes": [x.shared_memory for x in a],
        "kineto_est_occupancy": [x.est_occupancy for x in a],
        "kernel_backend": [x.kernel_backend for x in a],
    }


def _copy_kind(name):
    m = _COPY_RE.match(name)
    if not m:
        return None, None, None
    return m.group(1), m.group(2), m.group(3)


def _copy_table(evs, times):
    a = _argss(evs)
    names = [e.name for e in evs]
    parsed = [_copy_kind(n) for n in names]
    dev, stream = _where(evs, a)
    return {
        "kind": ["memset" if e.cat == "gpu_memset" else "memcpy" for e in evs],
        "name": names,
        "copy_kind": [p[0] for p in parsed],
        "src_memory": [p[1] for p in parsed],
        "dst_memory": [p[2] for p in parsed],
        "device_index": dev,
        "stream": stream,
        "start_us": times[0],
        "duration_us": times[1],
        "bytes": [x.bytes for x in a],
        "bandwidth_gbps": [x.bandwidth for x in a],
        "correlation": [x.correlation for x in a],
        "external_id": [x.external_id for x in a],
    }


def _runtime_table(evs, times):
    a = _argss(evs)
    return {
        "name": _interned([e.name for e in evs]),
        "cat": [e.cat for e in evs],
        "pid": [e.pid for e in evs],
        "tid": [e.tid for e in evs],
        "start_us": times[0],
        "duration_us": times[1],
        "correlation": [x.correlation for x in a],
        "external_id": [x.external_id for x in a],
        "cbid": [x.cbid for x in a],
    }


def _op_table(evs, times):
    a = _argss(evs)
    return {
        "name": _interned([e.name for e in evs]),
        "cat": [e.cat for e in evs],
        "pid": [e.pid for e in evs],
        "tid": [e.tid for e in evs],
        "start_us": times[0],
        "duration_us": times[1],
        "external_id": [x.external_id for x in a],
        "input_dims": _decode_shared([x.input_dims for x in a]),
        "input_types": _decode_shared([x.input_types for x in a]),
        "flops": [x.flops for x in a],
        "sequence": [x.sequence for x in a],
        "kernel_backend": [x.kernel_backend for x in a],
    }


def _decode_shared(raws):
    """Decode Raw JSON values, once per distinct text; equal values share one object (read-only)."""
    keys = [None if r is None else bytes(r) for r in raws]
    cache = dict.fromkeys(keys)
    for key in cache:
        if key is not None:
            try:
                cache[key] = msgspec.json.decode(key)
            except msgspec.DecodeError:
                pass
    return [cache[k] for k in keys]


def _interned(names):
    """The same strings, each distinct text held once (kernel and op names repeat heavily)."""
    cache = {}
    return [cache.setdefault(n, n) for n in names]


def _frame_table(evs, times):
    a = _argss(evs)
    return {
        "name": [e.name for e in evs],
        "tid": [e.tid for e in evs],
        "start_us": times[0],
        "duration_us": times[1],
        "python_id": [x.python_id for x in a],
        "parent_id": [x.parent_id for x in a],
    }


def _sync_table(rt, gsyncs, ops, cpu_first):
    """Host-blocking sync calls from the runtime table, plus GPU-side sync records."""
    m = rt["name"].isin(list(SYNC_CALLS)).to_numpy()
    r = rt[m]
    host = pd.DataFrame({
        "name": pd.Series(r["name"].to_numpy(), dtype=object),
        "kind": pd.Series(r["name"].map(SYNC_CALLS).to_numpy(dtype=object), dtype=object),
        "tid": pd.Series(r["tid"].to_numpy(), dtype=object), "start_us": r["start_us"].to_numpy(),
        "duration_us": r["duration_us"].to_numpy(), "correlation": r["correlation"].array,
        "external_id": r["external_id"].array,
    })
    parts = [host]
    if len(gsyncs):
        # Newer Kineto also records syncs on the GPU side (cat "cuda_sync"); keep them for the
        # stream each one waited on.
        parts.append(gsyncs)
    s = pd.concat(parts, ignore_index=True) if len(parts) > 1 else host
    s["op"] = _take(ops["name"].to_numpy(), _lookup(ops["external_id"], s["external_id"], order=cpu_first))
    return s


def _gsync_table(evs, times):
    a = _argss(evs)
    return {
        "name": [e.name for e in evs],
        "kind": [x.sync_type or "gpu" for x in a],
        "tid": [e.tid for e in evs],
        "start_us": times[0],
        "duration_us": times[1],
        "correlation": [x.correlation for x in a],
        "external_id": [x.external_id for x in a],
        "stream": [x.stream for x in a],
        "device_index": [x.device for x in a],
    }


def _builders():
    return {"kernels": _kernel_table, "copies": _copy_table, "runtime": _runtime_table,
            "ops": _op_table, "frames": _frame_table, "gsyncs": _gsync_table}


def _join_launch(t, rt, rows):
    t["launch_api"] = _take(rt["name"].to_numpy(), rows)
    t["launch_start_us"] = _take_float(rt["start_us"].to_numpy(), rows)
    t["launch_duration_us"] = _take_float(rt["duration_us"].to_numpy(), rows)
    t["launch_tid"] = _take(rt["tid"].to_numpy(), rows)
    if "kernel_backend" in t.columns:
        t["graph_launch"] = pd.array(np.isin(t["launch_api"].to_numpy(), GRAPH_LAUNCH_CALLS), dtype="boolean")


def _join_op(t, ops, rows):
    t["op"] = _take(ops["name"].to_numpy(), rows)
    t["op_index"] = pd.array(np.where(rows >= 0, rows, 0), dtype="Int64")
    t.loc[rows < 0, "op_index"] = pd.NA
    if "kernel_backend" in t.columns:
        # Triton records its backend on the launching op's args; carry it to the kernel.
        from_op = _take(ops["kernel_backend"].to_numpy(), rows)
        own = t["kernel_backend"].to_numpy(dtype=object)
        t["kernel_backend"] = pd.Series(np.where(pd.isna(own) | (own == ""), from_op.to_numpy(), own),
                                        dtype=object, index=t.index)


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


def _sources(tids, times, fr):
    """For each (tid, time), the innermost enclosing user frame's ``file(line): func``.

    Frames on one thread nest, so one sweep in time order with a stack finds each answer.
    """
    by_tid = {}
    for name, tid, s, d in zip(fr["name"], fr["tid"], fr["start_us"], fr["duration_us"]):
        if is_user_frame(name):
            by_tid.setdefault(tid, []).append((s, s + d, name))
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


def _devices(props):
    cols = {c: [] for c in DEVICE_COLUMNS}
    if not isinstance(props, list):
        return cols
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        g = p.get
        idx = _num(g("id"), int)
        # Kineto writes each device's position as its id; fall back to it when the id is unusable.
        cols["index"].append(i if idx is None else idx)
        cols["name"].append(_text(g("name")))
        # ROCm traces carry the gfx architecture name; CUDA ones never do.
        cols["device_type"].append("ROCm" if g("gcnArchName") or "AMD" in _text(g("name")) else "CUDA")
        cols["compute_major"].append(_num(g("computeMajor"), int))
        cols["compute_minor"].append(_num(g("computeMinor"), int))
        cols["num_sms"].append(_num(g("numSms"), int))
        cols["max_threads_per_sm"].append(_num(g("maxThreadsPerMultiprocessor"), int))
        cols["max_threads_per_block"].append(_num(g("maxThreadsPerBlock"), int))
        cols["regs_per_sm"].append(_num(g("regsPerMultiprocessor"), int))
        cols["regs_per_block"].append(_num(g("regsPerBlock"), int))
        cols["warp_size"].append(_num(g("warpSize"), int))
        cols["smem_per_sm"].append(_num(g("sharedMemPerMultiprocessor"), int))
        cols["smem_per_block"].append(_num(g("sharedMemPerBlock"), int))
        cols["smem_per_block_optin"].append(_num(g("sharedMemPerBlockOptin"), int))
        cols["total_memory"].append(_num(g("totalGlobalMem"), int))
    return cols
