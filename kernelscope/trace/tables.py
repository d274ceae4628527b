"""From decoded events to the Trace's tables: one column spec per table, one builder for all.

Events are sorted into buckets by category (:data:`BUCKETS`) in one pass; each bucket's
columns are listed in :data:`COLUMNS` as ``column -> extractor`` (an extractor takes the events
and their args and returns the column as a list). The joins that link the tables (kernel ->
launching runtime call by correlation id, -> enclosing CPU op by External id) are vectorized
lookups (:func:`lookup`, :func:`take`).
"""
from __future__ import annotations

import re
from operator import attrgetter

import msgspec
import numpy as np
import pandas as pd

from .decode import Args
from .model import (COPY_COLUMNS, FRAME_COLUMNS, GRAPH_LAUNCH_CALLS, KERNEL_COLUMNS, OP_COLUMNS,
                    RUNTIME_COLUMNS, SYNC_CALLS, SYNC_COLUMNS, frame)

# Event category -> bucket; "span" is the profiler's own "Trace" event (the recorded region).
BUCKETS = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "copies",
           "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime", "driver": "runtime",
           "cpu_op": "ops", "user_annotation": "ops", "operator": "ops",
           "python_function": "frames", "cuda_sync": "gsyncs", "Trace": "span"}
# The schema of each bucket's table ("gsyncs": GPU-side sync records, merged into syncs).
SCHEMAS = {"kernels": KERNEL_COLUMNS, "copies": COPY_COLUMNS, "runtime": RUNTIME_COLUMNS,
           "ops": OP_COLUMNS, "frames": FRAME_COLUMNS, "gsyncs": SYNC_COLUMNS}
_COPY_RE = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")
_EMPTY_ARGS = Args()


# -- extractors: (events, their args) -> one column as a list ------------------------------------
def _event(attr):
    get = attrgetter(attr)
    return lambda evs, a: list(map(get, evs))


def _arg(attr):
    get = attrgetter(attr)
    return lambda evs, a: list(map(get, a))


def interned(names) -> list:
    """The same strings, each distinct text held once (kernel and op names repeat heavily).

    >>> a, b = interned(["k" * 50, "k" * 50]); a is b
    True
    """
    cache = {}
    return [cache.setdefault(n, n) for n in names]


def _names(evs, a):
    return interned([e.name for e in evs])


def _int_or_none(v):
    return v if isinstance(v, int) else None


# Device and stream of GPU events: args first, else Chrome's pid/tid lanes.
def _device(evs, a):
    return [x.device if x.device is not None else _int_or_none(e.pid) for e, x in zip(evs, a)]


def _stream(evs, a):
    return [x.stream if x.stream is not None else _int_or_none(e.tid) for e, x in zip(evs, a)]


def _dim(attr, i):
    get = attrgetter(attr)
    return lambda evs, a: [v[i] if v is not None and len(v) > i else None for v in map(get, a)]


def _copy_part(i):
    """Part ``i`` of a copy's name ``Memcpy HtoD (Pageable -> Device)``: kind, source, target."""
    def column(evs, a):
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


def _copy_kind(evs, a):
    return ["memset" if e.cat == "gpu_memset" else "memcpy" for e in evs]


def decode_shared(raws) -> list:
    """Decode Raw JSON values, once per distinct text; equal values share one object (read-only).

    >>> decode_shared([msgspec.Raw(b"[[2, 3]]"), None, msgspec.Raw(b"[[2, 3]]")])
    [[[2, 3]], None, [[2, 3]]]
    """
    keys = [None if r is None else bytes(r) for r in raws]
    cache = dict.fromkeys(keys)
    for key in cache:
        if key is not None:
            try:
                cache[key] = msgspec.json.decode(key)
            except msgspec.DecodeError:
                pass
    return [cache[k] for k in keys]


def _shapes(attr):
    get = attrgetter(attr)
    return lambda evs, a: decode_shared(list(map(get, a)))


def _comm(evs, a):
    """The collective metadata of each event (a dict), None for the rest."""
    return [None if x.collective is None else _comm_args(x) for x in a]


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


def _sync_kind(evs, a):
    return [x.sync_type or "gpu" for x in a]


_CORRELATION, _EXTERNAL = _arg("correlation"), _arg("external_id")
_CAT, _PID, _TID = _event("cat"), _event("pid"), _event("tid")

# Each table's columns read from the events (start_us/duration_us are added from the times;
# the joins add launch_*, op, op_index and source).
COLUMNS = {
    "kernels": {
        "name": _names, "device_index": _device, "stream": _stream,
        "correlation": _CORRELATION, "external_id": _EXTERNAL,
        "grid_x": _dim("grid", 0), "grid_y": _dim("grid", 1), "grid_z": _dim("grid", 2),
        "block_x": _dim("block", 0), "block_y": _dim("block", 1), "block_z": _dim("block", 2),
        "registers_per_thread": _arg("registers"), "shared_mem_bytes": _arg("shared_memory"),
        "kineto_est_occupancy": _arg("est_occupancy"), "kernel_backend": _arg("kernel_backend"),
        "comm": _comm,
    },
    "copies": {
        "kind": _copy_kind, "name": _event("name"),
        "copy_kind": _copy_part(0), "src_memory": _copy_part(1), "dst_memory": _copy_part(2),
        "device_index": _device, "stream": _stream, "bytes": _arg("bytes"),
        "bandwidth_gbps": _arg("bandwidth"), "correlation": _CORRELATION, "external_id": _EXTERNAL,
    },
    "runtime": {
        "name": _names, "cat": _CAT, "pid": _PID, "tid": _TID,
        "correlation": _CORRELATION, "external_id": _EXTERNAL, "cbid": _arg("cbid"),
    },
    "ops": {
        "name": _names, "cat": _CAT, "pid": _PID, "tid": _TID, "external_id": _EXTERNAL,
        "input_dims": _shapes("input_dims"), "input_types": _shapes("input_types"),
        "flops": _arg("flops"), "sequence": _arg("sequence"), "kernel_backend": _arg("kernel_backend"),
        "comm": _comm,
    },
    "frames": {
        "name": _event("name"), "tid": _TID,
        "python_id": _arg("python_id"), "parent_id": _arg("parent_id"),
    },
    "gsyncs": {
        "name": _event("name"), "kind": _sync_kind, "tid": _TID,
        "correlation": _CORRELATION, "external_id": _EXTERNAL,
        "stream": _arg("stream"), "device_index": _arg("device"),
    },
}
_BUCKET_NAMES = sorted(set(BUCKETS.values()))


def build_table(bucket: str, evs: list, start_us, duration_us) -> pd.DataFrame:
    """The ``bucket`` table (a :data:`COLUMNS` key) of events with their times.

    >>> from kernelscope.trace.decode import Event
    >>> build_table("frames", [Event(name="f")], [1.0], [2.0])[["name", "start_us"]].values.tolist()
    [['f', 1.0]]
    """
    empty = _EMPTY_ARGS
    a = [e.args or empty for e in evs]
    cols = {c: get(evs, a) for c, get in COLUMNS[bucket].items()}
    cols["start_us"], cols["duration_us"] = start_us, duration_us
    schema = SCHEMAS[bucket]
    return frame(cols, {c: schema[c] for c in cols})


def empty_table(bucket: str) -> pd.DataFrame:
    """The ``bucket`` table with no rows (every column it would have)."""
    return build_table(bucket, [], np.empty(0), np.empty(0))


def chunk_tables(events, bad_times) -> dict:
    """Per-bucket tables (absolute times) for one chunk of decoded events; ``"span"`` is the
    profiler's (start, duration), ``"counter_events"`` the counter-track events ("ph": "C").
    ``bad_times[0]`` counts the events dropped for their times."""
    lists = {b: [] for b in _BUCKET_NAMES}
    # One pass with bound append methods: cheaper than a comprehension per bucket.
    append = {c: lists[b].append for c, b in BUCKETS.items()}
    counters = []
    for e in events:
        if e.ph == "X":
            a = append.get(e.cat)
            if a is not None:
                a(e)
        elif e.ph == "C":
            counters.append(e)
    out = {}
    if counters:
        out["counter_events"] = counters
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
        out[b] = build_table(b, evs, ts, dur)
    return out


def concat_tables(parts: dict) -> dict:
    """One table per bucket from the chunks' parts (an empty table where no chunk had rows)."""
    tables = {}
    for b in SCHEMAS:
        ps = parts.get(b, [])
        if len(ps) == 1:
            tables[b] = ps[0]
        elif ps:
            tables[b] = pd.concat(ps, ignore_index=True)
        else:
            tables[b] = empty_table(b)
    return tables


# -- joins ----------------------------------------------------------------------------------------
_MISSING_KEY = np.iinfo(np.int64).min


def lookup(keys: pd.Series, query: pd.Series, order=None) -> np.ndarray:
    """For each query value, the row of its first match in ``keys`` (in ``order``), else -1.

    >>> lookup(pd.Series([5, 7, 5], dtype="Int64"), pd.Series([5, 9, None], dtype="Int64")).tolist()
    [0, -1, -1]
    """
    if not len(keys) or not len(query):
        return np.full(len(query), -1, dtype=np.int64)
    kv = keys.to_numpy(dtype="int64", na_value=_MISSING_KEY)
    pos = np.arange(len(kv)) if order is None else np.asarray(order)
    kv = kv[pos]
    keep = (kv != _MISSING_KEY) & ~pd.Series(kv).duplicated(keep="first").to_numpy()
    index = pd.Index(kv[keep])
    hit = index.get_indexer(query.to_numpy(dtype="int64", na_value=_MISSING_KEY))
    return np.where(hit >= 0, pos[keep][np.maximum(hit, 0)], -1)


def take(values: np.ndarray, rows: np.ndarray, fill=None) -> pd.Series:
    """values[rows] where rows >= 0, else ``fill``, as an object column."""
    out = np.full(len(rows), fill, dtype=object)
    m = rows >= 0
    out[m] = values[rows[m]]
    # Explicit object dtype: pandas 3 would infer its Arrow string dtype on assignment.
    return pd.Series(out, dtype=object, copy=False)


def take_float(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """values[rows] where rows >= 0, else NaN."""
    out = np.full(len(rows), np.nan)
    m = rows >= 0
    out[m] = values[rows[m]]
    return out


def join_launch(t: pd.DataFrame, rt: pd.DataFrame, rows: np.ndarray) -> None:
    """Add the launching runtime call's columns (``launch_*``; ``graph_launch`` for kernels)."""
    t["launch_api"] = take(rt["name"].to_numpy(), rows)
    t["launch_start_us"] = take_float(rt["start_us"].to_numpy(), rows)
    t["launch_duration_us"] = take_float(rt["duration_us"].to_numpy(), rows)
    t["launch_tid"] = take(rt["tid"].to_numpy(), rows)
    if "kernel_backend" in t.columns:
        t["graph_launch"] = pd.array(np.isin(t["launch_api"].to_numpy(), GRAPH_LAUNCH_CALLS), dtype="boolean")


def join_op(t: pd.DataFrame, ops: pd.DataFrame, rows: np.ndarray) -> None:
    """Add the enclosing CPU op (``op``, ``op_index``); kernels also take its ``kernel_backend``."""
    t["op"] = take(ops["name"].to_numpy(), rows)
    t["op_index"] = pd.array(np.where(rows >= 0, rows, 0), dtype="Int64")
    t.loc[rows < 0, "op_index"] = pd.NA
    if "kernel_backend" in t.columns:
        # Triton records its backend on the launching op's args; carry it to the kernel.
        from_op = take(ops["kernel_backend"].to_numpy(), rows)
        own = t["kernel_backend"].to_numpy(dtype=object)
        t["kernel_backend"] = pd.Series(np.where(pd.isna(own) | (own == ""), from_op.to_numpy(), own),
                                        dtype=object, index=t.index)


def sync_table(rt: pd.DataFrame, gsyncs: pd.DataFrame, ops: pd.DataFrame, cpu_first) -> pd.DataFrame:
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
    s["op"] = take(ops["name"].to_numpy(), lookup(ops["external_id"], s["external_id"], order=cpu_first))
    return s


def complete(t: pd.DataFrame, schema: dict) -> pd.DataFrame:
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
