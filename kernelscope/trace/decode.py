"""Decoding Kineto's JSON: the typed structs, and the lenient paths for damaged files.

Decoding is typed (msgspec): only the fields we read are materialized, as small structs that
the garbage collector does not track. The common shape takes one typed decode of the top level,
with each event kept as a zero-copy slice of the input and decoded later a chunk at a time
(:func:`event_chunks`). Only when that fails do the lenient paths run (:func:`decode_document`):
a per-event decode that skips malformed events, and Python's json for NaN/Infinity, numbers
beyond float64, invalid UTF-8 and lone surrogates. Each says what it tolerated in ``notes``.
"""
from __future__ import annotations

import gc
import json
import re
from contextlib import contextmanager
from typing import Any

import msgspec

from kernelscope.errors import TraceError

Int = int | None
Float = float | None
Str = str | None

# Events decoded at a time: large enough that per-chunk overhead is negligible, small enough
# that a chunk's structs are a small part of peak memory.
CHUNK_EVENTS = 65536


class Args(msgspec.Struct, gc=False):
    """The ``args`` fields we read; every other key is skipped by the decoder."""

    external_id: Int = msgspec.field(default=None, name="External id")
    correlation: Int = None
    stream: Int = None
    device: Int = None
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: Int = msgspec.field(default=None, name="registers per thread")
    shared_memory: Int = msgspec.field(default=None, name="shared memory")
    est_occupancy: Float = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Int = None
    bandwidth: Float = msgspec.field(default=None, name="memory bandwidth (GB/s)")
    cbid: Int = None
    # Raw (a zero-copy slice of the input): shapes are decoded once per distinct text by the
    # ops table's builder, since the same shapes repeat across thousands of ops.
    input_dims: msgspec.Raw = msgspec.field(default=None, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=None, name="Input type")
    flops: Float = None
    sequence: Int = msgspec.field(default=None, name="Sequence number")
    kernel_backend: Str = None
    # Inductor's CPU-side launch events: the launched kernel's knobs (templates: the first two).
    num_warps: Int = None
    num_stages: Int = None
    kernel_kwargs: Str = None
    kernel_hash: Str = None
    python_id: Int = msgspec.field(default=None, name="Python id")
    parent_id: Int = msgspec.field(default=None, name="Python parent id")
    sync_type: Str = msgspec.field(default=None, name="cuda_sync_kind")
    # Collective metadata torch records on NCCL kernels and record_param_comms ops.
    collective: Str = msgspec.field(default=None, name="Collective name")
    in_nelems: Int = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Int = msgspec.field(default=None, name="Out msg nelems")
    group_size: Int = msgspec.field(default=None, name="Group size")
    dtype: Str = None
    pg_name: Str = msgspec.field(default=None, name="Process Group Name")
    pg_desc: Str = msgspec.field(default=None, name="Process Group Description")
    pg_ranks: msgspec.Raw = msgspec.field(default=None, name="Process Group Ranks")
    seq: Int = msgspec.field(default=None, name="Seq")
    # torch's GPU counter tracks ("ph": "C") carry their value under the empty key.
    counter: Float = msgspec.field(default=None, name="")
    # The allocator's "[memory]" instant events (profile_memory): the block's size (+alloc,
    # -free), its address, and the allocator's totals after it.
    mem_bytes: Int = msgspec.field(default=None, name="Bytes")
    addr: Int = msgspec.field(default=None, name="Addr")
    total_allocated: Int = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Int = msgspec.field(default=None, name="Total Reserved")
    device_id: Int = msgspec.field(default=None, name="Device Id")
    device_type: Int = msgspec.field(default=None, name="Device Type")


class _EventFields(msgspec.Struct, gc=False):
    """The fields of a Chrome-trace event every table reads, but its args."""

    ph: str = ""
    name: str = ""
    cat: Str = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Float = None
    dur: Float = None


class Event(_EventFields, gc=False):
    """One Chrome-trace event: the fields every table reads."""

    args: Args | None = None


# The args text of an event that has none: every streamed event has some text to decode.
NO_ARGS = msgspec.Raw(b"null")


class StreamEvent(_EventFields, gc=False):
    """An :class:`Event` whose ``args`` are left as their text (a zero-copy slice): the table
    builder decodes them a table at a time, each table's events with a struct of only the
    fields that table reads (:data:`~.builder.ARG_FIELDS`), which is cheaper than one struct of
    every field for every event."""

    args: msgspec.Raw = NO_ARGS


class TraceFile(msgspec.Struct, gc=False):
    """The top level of a trace file: its events and the header fields we read."""

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
    kernelscopeRank: Any = None   # ks.profile()'s rank tag (trace/distributed.py)
    host_name: Any = None         # newer torch writes the host into the header
    # Kineto before July 2026 (pytorch/kineto#1460) wrote the warnings and errors it logged
    # while tracing (dropped records, CUPTI errors) into the file: the completeness ledger's.
    WARNING: Any = None
    ERROR: Any = None
    # Kineto never writes a top-level "format"; files of other kinds that are JSON objects
    # may (kernelscope's saved reports say "kernelscope.report"). See ForeignFormat.
    format: Any = None


class TypedFile(TraceFile, gc=False):
    """The top level with every event decoded at once (the lenient path's first try)."""

    traceEvents: list[Event] | msgspec.UnsetType = msgspec.UNSET


class RawFile(TraceFile, gc=False):
    """The top level with each event as a zero-copy slice of the input (see event_chunks)."""

    traceEvents: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET


class ForeignFormat(TraceError):
    """A JSON object without ``traceEvents`` whose top level names a format of its own.

    ``format`` holds that name, so that a caller that reads the format can take the file over
    (``kernelscope.load`` reads saved reports so).
    """

    def __init__(self, source, fmt: str):
        self.format = fmt
        super().__init__(source, f"not a torch.profiler trace: its top level says it is a {fmt!r} file")


class NotJSON(TraceError):
    """The file's text cannot be read as JSON at all (empty, truncated, invalid, too deep)."""


def check_format(doc: TraceFile, label) -> None:
    """Raise :class:`ForeignFormat` for a top level that names a format and holds no events.

    >>> check_format(TraceFile(format="kernelscope.report"), "x.json")
    Traceback (most recent call last):
    kernelscope.trace.decode.ForeignFormat: x.json: not a torch.profiler trace: its top level says it is a 'kernelscope.report' file
    """
    if isinstance(doc.format, str) and not isinstance(doc.traceEvents, list):
        raise ForeignFormat(label, doc.format)


@contextmanager
def no_gc():
    """Pause the cyclic garbage collector while decoding.

    Millions of short-lived objects make the cyclic GC run again and again for nothing;
    pausing it makes decoding about 3x faster.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CarefulPath(Exception):
    """A chunk's text needs the lenient decoders (bad UTF-8, NaN literals, deep nesting)."""


def event_chunks(raws, label, notes):
    """Decode raw event slices :data:`CHUNK_EVENTS` at a time, as lists of :class:`Event`.

    Raises :class:`CarefulPath` when a chunk is not strict JSON (start again with
    :func:`decode_document`); a chunk with events of an unexpected shape keeps the rest.
    """
    for i in range(0, len(raws), CHUNK_EVENTS):
        blob = b"[" + b",".join(raws[i:i + CHUNK_EVENTS]) + b"]"
        try:
            yield msgspec.json.decode(blob, type=list[Event])
        except (msgspec.DecodeError, RecursionError):
            raise CarefulPath from None
        except msgspec.ValidationError:
            # Some event in this chunk has an unexpected shape: keep the rest of it.
            yield loose_events({"traceEvents": msgspec.json.decode(blob)}, label, notes).traceEvents


_BOMS = ((b"\xef\xbb\xbf", None), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def to_utf8(raw: bytes, label, notes) -> bytes:
    """The JSON text as UTF-8 without a byte-order mark (editors on Windows add one).

    >>> to_utf8(b"\\xef\\xbb\\xbf{}", "x.json", [])
    b'{}'
    """
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


def decode_document(raw: bytes, label, notes=None):
    """``(TraceFile, notes)``: a typed decode; on a type mismatch a lenient per-event decode.

    Only the typed path runs for well-formed traces. The lenient paths (per-event decode, and
    Python's json for NaN/Infinity, invalid UTF-8 and lone surrogates) cost time only when the
    typed one failed.

    >>> decode_document(b'{"traceEvents": [{"ph": "X", "name": "k"}]}', "x.json")[0].traceEvents[0].name
    'k'
    """
    notes = [] if notes is None else notes
    try:
        doc = msgspec.json.decode(raw, type=TypedFile)
        check_format(doc, label)
        return doc, notes
    except msgspec.ValidationError:
        pass  # some event has an unexpected shape: decode loosely below, skipping bad parts
    except msgspec.DecodeError as e:
        if not raw.strip():
            raise NotJSON(label, "the file is empty") from None
        msg = str(e)
        # msgspec also says "truncated" (or "end of hex escape") of a lone high surrogate
        # escape (\ud800 with no low half): Python's parser reads those, so only a file
        # without one is called cut here.
        if "truncated" in msg.lower() and not _SURROGATE_ESCAPE_BYTES.search(raw):
            raise NotJSON(label, "the JSON ends early (truncated file?)") from None
        if not _nonstrict(msg) and not _SURROGATE_ESCAPE_BYTES.search(raw):
            raise NotJSON(label, f"not valid JSON ({msg})") from None
    except RecursionError:
        raise NotJSON(label, _TOO_DEEP) from None
    try:
        loose = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        # Numbers beyond float64, NaN/Infinity literals or bad text: Python's parser is lenient
        # about each of these.
        loose = _decode_stdlib(raw, label, notes, e)
    return loose_events(loose, label, notes), notes


def _nonstrict(msg: str) -> bool:
    """Whether msgspec's decode error is one that Python's json module may tolerate."""
    m = msg.lower()
    return "invalid character" in m or "utf-8" in m or "surrogate" in m or "out of range" in m


# A \uD800-\uDFFF escape in JSON text; unpaired, Python's json decodes it to a lone surrogate,
# which no table, report file or notebook can hold (it cannot be encoded as UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
# Python refuses to convert integers of more digits than this (sys.get_int_max_str_digits):
# longer ones read as infinity (then dropped, as every number beyond int64 is).
_MAX_DIGITS = 4000


def _decode_stdlib(raw: bytes, label, notes, first_error):
    if isinstance(first_error, RecursionError):
        raise NotJSON(label, _TOO_DEEP)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        notes.append("the file holds bytes that are not UTF-8 (invalid UTF-8); they read as U+FFFD")
    constants, long_ints = [], []

    def constant(c):
        constants.append(c)
        return float(c)

    def integer(t):
        if len(t) <= _MAX_DIGITS:
            return int(t)
        long_ints.append(len(t))
        return float("-inf") if t.startswith("-") else float("inf")

    try:
        doc = json.loads(text, parse_constant=constant, parse_int=integer)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise NotJSON(label, "the JSON ends early (truncated file?)") from None
        raise NotJSON(label, f"not valid JSON ({first_error}; {e})") from None
    except RecursionError:
        raise NotJSON(label, _TOO_DEEP) from None
    if long_ints:
        notes.append(f"read {len(long_ints)} integer(s) of more than {_MAX_DIGITS:,} digits as infinity")
    if constants:
        notes.append(f"read {len(constants)} non-standard JSON number(s) ({', '.join(sorted(set(constants)))})")
    if _SURROGATE_ESCAPE.search(text):
        n = _scrub_surrogates(doc)
        if n:
            notes.append(f"replaced unpaired UTF-16 surrogates in {n} string(s)")
    return doc


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


def loose_events(loose, label, notes) -> TraceFile:
    """A TraceFile whose events are those of ``loose`` (decoded JSON) that convert to Event."""
    if isinstance(loose, list) and any(isinstance(ev, dict) for ev in loose):
        loose = {"traceEvents": loose}   # Chrome's JSON Array Format: the events, no header
    if not isinstance(loose, dict):
        raise TraceError(label, "not a torch.profiler trace: the top level is not a JSON object")
    events = loose.get("traceEvents", msgspec.UNSET)
    header = TraceFile(**{f: loose.get(f) for f in TraceFile.__struct_fields__ if f != "traceEvents"})
    header.traceEvents = events
    check_format(header, label)
    if events is msgspec.UNSET:
        raise TraceError(label, "not a torch.profiler trace: it has no 'traceEvents' list")
    if not isinstance(events, list):
        raise TraceError(label, "not a torch.profiler trace: 'traceEvents' is not a list")
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


def _raw_shapes(ev):
    """In the lenient path, give the Raw-typed args fields the Raw values the typed path would."""
    args = ev.get("args") if isinstance(ev, dict) else None
    if isinstance(args, dict):
        for key in ("Input Dims", "Input type", "Process Group Ranks"):
            if key in args and args[key] is not None:
                try:
                    args[key] = msgspec.Raw(msgspec.json.encode(args[key]))
                except (TypeError, ValueError, OverflowError):
                    args[key] = None


def header_num(x, kind=float):
    """A number from an untrusted header field, or None.

    >>> header_num("9"), header_num(9.0, int), header_num(float("nan")), header_num(True, int)
    (None, 9, None, None)
    """
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if kind is int:
        if isinstance(x, float):
            if x != x or abs(x) == float("inf") or x != int(x):
                return None
            x = int(x)
        return x if -(2**63) < x < 2**63 else None
    return float(x) if x == x and abs(x) != float("inf") else None


def header_text(x) -> str:
    """A string from an untrusted header field ("" when missing).

    >>> header_text(None), header_text(7)
    ('', '7')
    """
    return x if isinstance(x, str) else ("" if x is None else str(x))


# "... (byte 123)": where msgspec found a JSON error.
_AT_BYTE = re.compile(r"\(byte (\d+)\)")


def prefix_problem(prefix: bytes) -> str | None:
    """What is wrong with a JSON document that starts with ``prefix``, where these bytes already
    show it, else None. JSON is read left to right, so an error inside the prefix is the whole
    text's error (the same words :func:`decode_document` gives): a file can be refused on its
    first megabyte instead of being read whole first. An error at the prefix's cut, or one that
    the lenient paths may tolerate (NaN, bad UTF-8, lone surrogates), is no proof: None.

    >>> prefix_problem(b'{"traceEvents": [{"ph": "X", "name": "k"'), prefix_problem(b'{"a" 1, ' + b' ' * 80)
    (None, "not valid JSON (JSON is malformed: expected ':' (byte 5))")
    """
    near_cut = len(prefix) - 64
    try:
        msgspec.json.decode(prefix, type=msgspec.Raw)   # checks the syntax, builds nothing
        return None      # a whole document in the prefix: what follows it is the whole read's to say
    except RecursionError:
        return _TOO_DEEP
    except msgspec.DecodeError as e:
        msg = str(e)
    at = _AT_BYTE.search(msg)
    if "truncated" in msg.lower() or at is None or int(at.group(1)) >= near_cut:
        return None
    if not _nonstrict(msg):
        return f"not valid JSON ({msg})"
    if _SURROGATE_ESCAPE_BYTES.search(prefix):
        return None
    # NaN, Infinity or bad UTF-8: Python's parser reads those; what it refuses early is wrong.
    text = prefix.decode("utf-8", "replace")
    try:
        json.loads(text, parse_constant=float, parse_int=len)
    except json.JSONDecodeError as je:
        if je.msg.startswith("Unterminated string") or je.pos >= len(text) - 64:
            return None
        return f"not valid JSON ({msg}; {je})"
    except RecursionError:
        return _TOO_DEEP
    return None
