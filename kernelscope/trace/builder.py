"""From decoded events to column pieces: one column spec per table, one builder for all.

Events are sorted into buckets by category (:data:`BUCKETS`) in one pass; each bucket's
columns are listed in :data:`COLUMNS` as ``column -> extractor`` (an extractor takes the events
and their args and returns the column as a list). :class:`TableBuilder` turns each chunk's
columns into typed pieces at once (numpy arrays, interned strings); :mod:`.tables` joins the
pieces into the Trace's tables. This module needs numpy and msgspec only, not pandas: the
split reader's worker processes (:mod:`.split`) run it, and start faster without pandas.
"""
from __future__ import annotations

import keyword
import operator
import re
import typing
from itertools import chain, repeat
from operator import attrgetter, itemgetter

import msgspec
import numpy as np

from kernelscope.trace.decode import Args, CarefulPath, Event
from kernelscope.trace.model import (
    COPY_COLUMNS,
    FRAME_COLUMNS,
    KERNEL_COLUMNS,
    MEMORY_COLUMNS,
    OP_COLUMNS,
    RUNTIME_COLUMNS,
    SYNC_COLUMNS,
    float_column,
    int_column,
)

BUCKETS = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "copies",
           "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime", "driver": "runtime",
           "cpu_op": "ops", "user_annotation": "ops", "operator": "ops",
           "python_function": "frames", "cuda_sync": "gsyncs", "Trace": "span",
           "cpu_instant_event": "memory"}
# The schema of each bucket's table ("gsyncs": GPU-side sync records, merged into syncs).
SCHEMAS = {"kernels": KERNEL_COLUMNS, "copies": COPY_COLUMNS, "runtime": RUNTIME_COLUMNS,
           "ops": OP_COLUMNS, "frames": FRAME_COLUMNS, "gsyncs": SYNC_COLUMNS,
           "memory": MEMORY_COLUMNS}
_COPY_RE = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")
_EMPTY_ARGS = Args()


def field_reader(attr: str):
    """``xs -> [x.<attr> for x in xs]``, for one of our structs' field names.

    A comprehension reads a struct's field about twice as fast as ``list(map(attrgetter(attr),
    xs))`` (CPython specializes its attribute load for the type; attrgetter looks the name up
    each time), and a million events have ~20 fields read. The reader is compiled from the
    name, which is checked to be an identifier: names come from this module, never from a file.

    >>> field_reader("name")([Event(name="k")])
    ['k']
    """
    if not attr.isidentifier() or keyword.iskeyword(attr):
        raise ValueError(f"not a field name: {attr!r}")
    return eval(f"lambda xs: [x.{attr} for x in xs]", {})  # noqa: S307 - a checked identifier


# -- extractors: (events, their args, their categories) -> one column as a list ------------------
# Each is one pass over the chunk's events with no per-event function call where it can be
# helped: a large trace has millions of events.
def _event(attr):
    read = field_reader(attr)
    return lambda evs, a, cats: read(evs)


def _arg(attr):
    read = field_reader(attr)
    return lambda evs, a, cats: read(a)


def _cat(evs, a, cats):
    return cats


def interned(names, cache=None) -> np.ndarray:
    """The same strings as an object array, each distinct text held once (kernel and op names
    repeat heavily); ``cache`` (a dict) carries the texts across calls. TypeError for values
    that cannot be hashed.

    >>> a, b = interned(["k" * 50, "k" * 50]); a is b
    True
    """
    cache = {} if cache is None else cache
    return np.fromiter(map(cache.setdefault, names, names), dtype=object, count=len(names))


def _int_or_none(v):
    # A Chrome lane (pid/tid) as written: an integer lane or none (not jsonable.whole, which
    # would make "7" or 7.5 a lane).
    return v if isinstance(v, int) else None


def _or_lane(arg, lane):
    """Device and stream of GPU events: args first, else Chrome's pid/tid lanes."""
    read, get_lane = field_reader(arg), attrgetter(lane)

    def column(evs, a, cats):
        out = read(a)
        if None in out:
            out = [x if x is not None else _int_or_none(get_lane(e)) for e, x in zip(evs, out)]
        return out
    return column


def _dims(attr):
    """``grid``/``block`` of each event as three columns (x, y, z); None where not recorded."""
    read = field_reader(attr)

    def columns(evs, a, cats):
        v = read(a)
        arr = None
        try:
            # The common case, every event with x, y, z: flattened in C (numpy's conversion of
            # a list of lists is several times slower).
            if not v:
                arr = np.empty((0, 3), np.int64)
            elif v[0] is not None and set(map(len, v)) == {3}:
                arr = np.fromiter(chain.from_iterable(v), np.int64, 3 * len(v)).reshape(-1, 3)
        except (TypeError, ValueError, OverflowError):
            arr = None
        if arr is not None:
            return [arr[:, i] for i in range(3)]
        return [[d[i] if d is not None and len(d) > i else None for d in v] for i in range(3)]
    return columns


def _copy_part(i):
    """Part ``i`` of a copy's name ``Memcpy HtoD (Pageable -> Device)``: kind, source, target."""
    def column(evs, a, cats):
        cache = {}
        out = []
        for e in evs:
            p = cache.get(e.name)
            if p is None:
                m = _COPY_RE.match(e.name)
                p = cache[e.name] = m.groups() if m else (None, None, None)
            out.append(p[i])
        return out
    return column


_COPY_KINDS = np.array(["memcpy", "memset"], dtype=object)


def _copy_kind(evs, a, cats):
    return _COPY_KINDS[(np.asarray(cats, dtype=object) == "gpu_memset").astype(np.intp)]


_ENCODE = msgspec.json.Encoder().encode


def decode_shared(*columns) -> list:
    """Decode columns of Raw JSON values (None where missing) row by row, once per distinct row
    of texts; equal rows share their decoded objects (read-only). One list per column.

    >>> dims, types = decode_shared([msgspec.Raw(b"[[2, 3]]"), None, msgspec.Raw(b"[[2, 3]]")],
    ...                             [msgspec.Raw(b'["float"]'), None, msgspec.Raw(b'["float"]')])
    >>> dims, types, dims[0] is dims[2]
    ([[[2, 3]], None, [[2, 3]]], [['float'], None, ['float']], True)
    """
    if all(not c or (c[0] is None and c.count(None) == len(c)) for c in columns):
        return list(columns)    # not recorded (no record_shapes): nothing to decode
    # A row of Raws encodes to one JSON array of their own texts (None as null): the key. One
    # key per row rather than per value: making the keys is most of the cost.
    keys = list(map(_ENCODE, zip(*columns)))
    decoded = dict.fromkeys(keys)
    width = len(columns)
    for key in decoded:
        try:
            row = msgspec.json.decode(key)
        except msgspec.DecodeError:
            row = [_decode_or_none(r) for r in msgspec.json.decode(key, type=list[msgspec.Raw])]
        decoded[key] = row if len(row) == width else [None] * width
    rows = list(map(decoded.__getitem__, keys))
    return [list(map(itemgetter(i), rows)) for i in range(width)]


def _decode_or_none(raw):
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


def _shapes(*attrs):
    reads = [field_reader(f) for f in attrs]
    return lambda evs, a, cats: decode_shared(*(read(a) for read in reads))


_COLLECTIVE = field_reader("collective")


def _comm(evs, a, cats):
    """The collective metadata of each event (a dict), None for the rest."""
    if a and not hasattr(a[0], "collective"):
        return [None] * len(a)    # args decoded without the collective fields: none had them
    names = _COLLECTIVE(a)
    if names.count(None) == len(names):
        return names
    return [None if c is None else _comm_args(x) for c, x in zip(names, a)]


def _comm_args(x):
    ranks = None
    if x.pg_ranks is not None:
        try:
            ranks = msgspec.json.decode(x.pg_ranks)
        except msgspec.DecodeError:
            ranks = None
    return {"collective": x.collective, "in_nelems": x.in_nelems, "out_nelems": x.out_nelems,
            "group_size": x.group_size, "dtype": x.dtype, "pg_name": x.pg_name, "pg_desc": x.pg_desc,
            "pg_ranks": ranks if isinstance(ranks, (str, list)) else None, "seq": x.seq}


def _sync_kind(evs, a, cats):
    return [x.sync_type or "gpu" for x in a]


_CORRELATION, _EXTERNAL = _arg("correlation"), _arg("external_id")
_NAME, _PID, _TID = _event("name"), _event("pid"), _event("tid")

# Each table's columns read from the events (start_us/duration_us are added from the times;
# the joins add launch_*, op, op_index and source). A key that is a tuple of columns takes an
# extractor returning one column each.
COLUMNS: dict[str, dict] = {
    "kernels": {
        "name": _NAME, "device_index": _or_lane("device", "pid"), "stream": _or_lane("stream", "tid"),
        "correlation": _CORRELATION, "external_id": _EXTERNAL,
        ("grid_x", "grid_y", "grid_z"): _dims("grid"), ("block_x", "block_y", "block_z"): _dims("block"),
        "registers_per_thread": _arg("registers"), "shared_mem_bytes": _arg("shared_memory"),
        "kineto_est_occupancy": _arg("est_occupancy"), "kernel_backend": _arg("kernel_backend"),
        "comm": _comm,
    },
    "copies": {
        "kind": _copy_kind, "name": _NAME,
        "copy_kind": _copy_part(0), "src_memory": _copy_part(1), "dst_memory": _copy_part(2),
        "device_index": _or_lane("device", "pid"), "stream": _or_lane("stream", "tid"), "bytes": _arg("bytes"),
        "bandwidth_gbps": _arg("bandwidth"), "correlation": _CORRELATION, "external_id": _EXTERNAL,
    },
    "runtime": {
        "name": _NAME, "cat": _cat, "pid": _PID, "tid": _TID,
        "correlation": _CORRELATION, "external_id": _EXTERNAL, "cbid": _arg("cbid"),
    },
    "ops": {
        "name": _NAME, "cat": _cat, "pid": _PID, "tid": _TID, "external_id": _EXTERNAL,
        ("input_dims", "input_types"): _shapes("input_dims", "input_types"),
        "flops": _arg("flops"), "sequence": _arg("sequence"), "kernel_backend": _arg("kernel_backend"),
        "num_warps": _arg("num_warps"), "num_stages": _arg("num_stages"),
        "kernel_kwargs": _arg("kernel_kwargs"), "kernel_hash": _arg("kernel_hash"),
        "comm": _comm,
    },
    "frames": {
        "name": _NAME, "tid": _TID,
        "python_id": _arg("python_id"), "parent_id": _arg("parent_id"),
    },
    "gsyncs": {
        "name": _NAME, "kind": _sync_kind, "tid": _TID,
        "correlation": _CORRELATION, "external_id": _EXTERNAL,
        "stream": _arg("stream"), "device_index": _arg("device"),
    },
    "memory": {
        "name": _NAME, "tid": _TID, "device_type": _arg("device_type"), "device_index": _arg("device_id"),
        "bytes": _arg("mem_bytes"), "address": _arg("addr"),
        "total_allocated": _arg("total_allocated"), "total_reserved": _arg("total_reserved"),
    },
}
# The args each table reads (the fields of decode.Args its extractors use), in the order Kineto
# writes them: a table's events have their args decoded together into a struct of only these.
_COMM_FIELDS = ("collective", "in_nelems", "out_nelems", "group_size", "dtype", "pg_name", "pg_desc",
                "pg_ranks", "seq")
ARG_FIELDS = {
    "kernels": ("external_id", "device", "stream", "correlation", "registers", "shared_memory", "grid",
                "block", "est_occupancy", "kernel_backend", *_COMM_FIELDS),
    "copies": ("external_id", "device", "stream", "correlation", "bytes", "bandwidth"),
    "runtime": ("external_id", "cbid", "correlation"),
    "ops": ("external_id", "sequence", "input_dims", "input_types", "flops", "num_warps", "kernel_backend",
            "kernel_kwargs", "num_stages", "kernel_hash", *_COMM_FIELDS),
    "frames": ("python_id", "parent_id"),
    "gsyncs": ("external_id", "sync_type", "stream", "device", "correlation"),
    "memory": ("total_reserved", "total_allocated", "mem_bytes", "device_id", "device_type", "addr"),
}


def _args_struct(bucket: str, fields) -> type:
    """A struct of some of :class:`~.decode.Args`' fields (same names, types and JSON keys)."""
    hints = typing.get_type_hints(Args)
    keys = dict(zip(Args.__struct_fields__, Args.__struct_encode_fields__))
    return msgspec.defstruct(f"{bucket.title()}Args", [
        (f, hints[f], msgspec.field(default=None, name=keys[f])) for f in fields], gc=False)


_ARGS_STRUCTS = {b: _args_struct(b, f) for b, f in ARG_FIELDS.items()}
_ARGS_DECODERS = {b: msgspec.json.Decoder(list[t | None]) for b, t in _ARGS_STRUCTS.items()}  # type: ignore[valid-type]
_ARGS_EMPTY = {b: t() for b, t in _ARGS_STRUCTS.items()}
# Without the collective fields, for the tables' args texts that hold no "Collective name" (all
# but NCCL work): fewer fields are cheaper to decode and to free.
_COMM_KEY = b'"Collective name"'
_LEAN_STRUCTS = {b: _args_struct(b + "_lean", [x for x in f if x not in _COMM_FIELDS])
                 for b, f in ARG_FIELDS.items() if set(_COMM_FIELDS) & set(f)}
_LEAN_DECODERS = {b: msgspec.json.Decoder(list[t | None]) for b, t in _LEAN_STRUCTS.items()}  # type: ignore[valid-type]
_LEAN_EMPTY = {b: t() for b, t in _LEAN_STRUCTS.items()}
_FULL_ARGS = msgspec.json.Decoder(Args | None)


def table_args(bucket: str, evs) -> list:
    """Each event's args (an empty struct where it has none). Events read as text decode theirs
    here, a table at a time, into :data:`ARG_FIELDS` structs; decoded ones are taken as they are.
    Args of an unexpected shape raise :class:`~.decode.CarefulPath` (read the file whole)."""
    a = _ARGS(evs)
    if a and type(a[0]) is msgspec.Raw:
        # Streamed events: every one has its args' text (null where it has none). The brackets
        # go on the first and last texts, so that the array is made by one join (adding them
        # to the joined text copied it twice more, into fresh memory each time).
        a[0] = b"[" + bytes(a[0])
        a[-1] = bytes(a[-1]) + b"]"
        text = b",".join(a)
        del a
        lean = bucket in _LEAN_DECODERS and _COMM_KEY not in text
        try:
            got = (_LEAN_DECODERS if lean else _ARGS_DECODERS)[bucket].decode(text)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            raise CarefulPath from None
        if got.count(None):
            empty = (_LEAN_EMPTY if lean else _ARGS_EMPTY)[bucket]
            got = [x if x is not None else empty for x in got]
        return got
    return [x if x is not None else _EMPTY_ARGS for x in a] if None in a else a


def _counter_event(e) -> Event:
    """A counter-track event with its args decoded (they may have been left as text)."""
    if type(e.args) is not msgspec.Raw:
        return e
    try:
        args = _FULL_ARGS.decode(e.args)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise CarefulPath from None
    return Event(ph=e.ph, name=e.name, cat=e.cat, pid=e.pid, tid=e.tid, ts=e.ts, dur=e.dur, args=args)


_BUCKET_NAMES = sorted(set(BUCKETS.values()))
# Each category we read, its position, and the bucket of each position: an event's category is
# looked up once, and the "cat" column is taken from these strings (no per-event copy).
_CATS = np.array(list(BUCKETS), dtype=object)
_CAT_CODE = {c: i for i, c in enumerate(BUCKETS)}
_CAT_BUCKET = np.array([_BUCKET_NAMES.index(b) for b in BUCKETS.values()] + [-1], dtype=np.int64)
_PH, _CAT_OF, _ARGS, _TS, _DUR = (field_reader(f) for f in ("ph", "cat", "args", "ts", "dur"))
# The one bucket of instant events ("ph": "i", no duration): the allocator's.
_INSTANT_BUCKET = _BUCKET_NAMES.index("memory")


def chunk_columns(bucket: str, evs, start_us, duration_us, cats=None) -> dict:
    """The ``bucket`` table's columns (lists or arrays) of ``evs``, with their times and
    categories (read from the events when not given)."""
    a = table_args(bucket, evs)
    if cats is None:
        cats = _CAT_OF(evs)
    cols = {}
    for col, get in COLUMNS[bucket].items():
        if isinstance(col, tuple):
            cols.update(zip(col, get(evs, a, cats)))
        else:
            cols[col] = get(evs, a, cats)
    cols["start_us"], cols["duration_us"] = start_us, duration_us
    return cols


# Times beyond this (us, about 3 million years) are damage, not a recording: kept, sums of a few
# of them overflow float64 (two durations of 1e308 add up to infinity) and the clock's offset
# in nanoseconds no longer fits an integer.
MAX_TIME_US = 1e20


def _times(evs):
    """(start, duration) of each event as float64 arrays; missing times become NaN."""
    ts, dur, n = _TS(evs), _DUR(evs), len(evs)
    try:
        return np.fromiter(ts, np.float64, n), np.fromiter(dur, np.float64, n)   # ~20% faster than array()
    except (TypeError, ValueError):    # a missing (None) time, or not a number: as numpy reads it
        return np.array(ts, dtype=np.float64), np.array(dur, dtype=np.float64)


class TableBuilder:
    """Every table built a chunk of events at a time (:meth:`add`), finished by :meth:`tables`.

    Each chunk's columns are converted to their final types at once (float64 arrays, nullable
    integers as (values, missing) arrays, interned strings), so the decoded events can go as
    soon as the chunk is done; :func:`~.tables.build_tables` makes the tables of the pieces.

    >>> from kernelscope.trace.decode import Event
    >>> b = TableBuilder(); b.add([Event(ph="X", cat="python_function", name="f", ts=1.0, dur=2.0)])
    >>> b.pieces["frames"]["name"], b.pieces["frames"]["start_us"]
    ([array(['f'], dtype=object)], [array([1.])])
    """

    def __init__(self, interned=None):
        self.pieces = {b: {} for b in SCHEMAS}
        self.span = None          # the profiler's own (start, duration), absolute
        self.bad_times = 0        # events dropped for a missing, negative, out-of-range or non-numeric time
        self.counter_events = []  # counter-track events ("ph": "C"), read by .counters
        # Strings seen so far, per column; builders of one process may share them (split.py).
        self._interned = {} if interned is None else interned

    def part(self) -> dict:
        """What this builder holds, as plain data (pickled by :mod:`.split`'s workers)."""
        return {"pieces": self.pieces, "span": self.span, "bad_times": self.bad_times,
                "counter_events": self.counter_events}

    def extend(self, part: dict) -> None:
        """Append another builder's :meth:`part` (of the events after this one's), as if its
        chunks had been added here."""
        for b, cols in part["pieces"].items():
            for col, pieces in cols.items():
                self.pieces[b].setdefault(col, []).extend(pieces)
        self.span = self.span or part["span"]
        self.bad_times += part["bad_times"]
        self.counter_events.extend(part["counter_events"])

    def add(self, events) -> None:
        """Sort one chunk of decoded events into the tables."""
        n = len(events)
        if not n:
            return
        # Category code of each event (the last code: not a category we read), then its bucket
        # (-1 also for events that are not complete "X" ones: only those have a place in a table).
        cat = np.fromiter(map(_CAT_CODE.get, _CAT_OF(events), repeat(len(_CATS))), np.int64, n)
        code = _CAT_BUCKET[cat]
        phs = _PH(events)
        if phs.count("X") != n:
            if "C" in phs:
                self.counter_events.extend(_counter_event(e) for e, ph in zip(events, phs) if ph == "C")
            drop = np.fromiter(map("X".__ne__, phs), bool, n)
            if "i" in phs:    # the allocator's instant events keep their place
                drop &= ~(np.fromiter(map("i".__eq__, phs), bool, n) & (code == _INSTANT_BUCKET))
            code[drop] = -1
        del phs
        order = np.argsort(code.astype(np.int8), kind="stable")   # int8: sorted by radix, not timsort
        bounds = np.searchsorted(code[order], np.arange(len(_BUCKET_NAMES) + 1))
        for i, b in enumerate(_BUCKET_NAMES):
            idx = order[bounds[i]:bounds[i + 1]]
            if not len(idx):
                continue
            evs = (list(operator.itemgetter(*idx.tolist())(events)) if len(idx) > 1 else [events[idx[0]]]) \
                if len(idx) < n else list(events)
            ts, dur = _times(evs)
            if i == _INSTANT_BUCKET:
                dur = np.zeros(len(evs))    # an instant: no duration written
            # NaN, infinite, negative, absurdly large or missing times cannot be placed.
            good = (np.abs(ts) <= MAX_TIME_US) & (dur >= 0) & (dur <= MAX_TIME_US)
            if not good.all():
                keep = np.flatnonzero(good)
                self.bad_times += len(evs) - len(keep)
                evs, ts, dur, idx = [evs[j] for j in keep.tolist()], ts[keep], dur[keep], idx[keep]
            if not evs:
                continue
            if b == "span":
                self.span = self.span or (float(ts[0]), float(dur[0]))
                continue
            self._add_columns(b, chunk_columns(b, evs, ts, dur, cats=_CATS[cat[idx]]))

    def _add_columns(self, bucket, cols) -> None:
        schema, pieces = SCHEMAS[bucket], self.pieces[bucket]
        for col, values in cols.items():
            kind = schema.get(col, "object")
            if kind == "object":
                # Object arrays (the tables' object columns are joined from them in one pass).
                if isinstance(values, np.ndarray):
                    piece = values    # taken from shared strings already (categories)
                elif values and values[0] is None and values.count(None) == len(values):
                    piece = np.full(len(values), None, dtype=object)   # not recorded
                else:
                    cache = self._interned.setdefault((bucket, col), {})
                    try:
                        piece = interned(values, cache)
                    except TypeError:
                        # lists or dicts (shapes, collectives): shared by their decoder instead
                        piece = np.empty(len(values), dtype=object)
                        piece[:] = values
            elif kind == "float64":
                piece = float_column(values)
            else:
                piece = int_column(values)
            pieces.setdefault(col, []).append(piece)
