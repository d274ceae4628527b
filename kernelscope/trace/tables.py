"""From the builder's column pieces to the Trace's tables, and the joins that link them.

:class:`~.builder.TableBuilder` gathers each table's columns a chunk of events at a time;
:func:`build_tables` joins the pieces into DataFrames. The joins (kernel -> launching runtime
call by correlation id, -> enclosing CPU op by External id) are vectorized lookups
(:func:`lookup`, :func:`take`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.trace.builder import SCHEMAS, chunk_columns
from kernelscope.trace.model import GRAPH_LAUNCH_CALLS, SYNC_CALLS, frame
from kernelscope.trace.sources import innermost_frames, innermost_spans


def build_table(bucket: str, evs: list, start_us, duration_us) -> pd.DataFrame:
    """The ``bucket`` table (a :data:`COLUMNS` key) of events with their times.

    >>> from kernelscope.trace.decode import Event
    >>> build_table("frames", [Event(name="f")], [1.0], [2.0])[["name", "start_us"]].values.tolist()
    [['f', 1.0]]
    """
    cols = chunk_columns(bucket, evs, start_us, duration_us)
    schema = SCHEMAS[bucket]
    return frame(cols, {c: schema[c] for c in cols})


def empty_table(bucket: str) -> pd.DataFrame:
    """The ``bucket`` table with no rows (every column it would have)."""
    return build_table(bucket, [], np.empty(0), np.empty(0))


def build_tables(builder) -> dict:
    """One table per bucket of a :class:`~.builder.TableBuilder` (an empty table where no chunk
    had rows); the builder's pieces are used up.

    >>> from kernelscope.trace.builder import TableBuilder
    >>> from kernelscope.trace.decode import Event
    >>> b = TableBuilder(); b.add([Event(ph="X", cat="python_function", name="f", ts=1.0, dur=2.0)])
    >>> build_tables(b)["frames"][["name", "start_us"]].values.tolist()
    [['f', 1.0]]
    """
    out = {}
    for b, schema in SCHEMAS.items():
        pieces = builder.pieces[b]
        if not pieces:
            out[b] = empty_table(b)
            continue
        cols = {}
        for col in list(pieces):
            kind = schema.get(col, "object")
            cols[col] = _join(pieces.pop(col), kind)
        out[b] = pd.DataFrame(cols, copy=False)
    return out


def _join(pieces, kind):
    """One column from its chunks' pieces (each already of the column's type)."""
    if kind == "object":
        arr = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        # Explicit object dtype: pandas 3 would otherwise infer (slowly) its Arrow string dtype.
        return pd.Series(arr, dtype=object, copy=False)
    if kind == "float64":
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    # int64: (values, missing) pairs (model.int_column)
    if len(pieces) == 1:
        return pd.arrays.IntegerArray(*pieces[0])
    return pd.arrays.IntegerArray(np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))


# -- joins ----------------------------------------------------------------------------------------
_MISSING_KEY = np.iinfo(np.int64).min


def lookup(keys: pd.Series, query: pd.Series, order=None) -> np.ndarray:
    """For each query value, the row of its first match in ``keys`` (in ``order``), else -1.

    >>> lookup(pd.Series([5, 7, 5], dtype="Int64"), pd.Series([5, 9, None], dtype="Int64")).tolist()
    [0, -1, -1]
    """
    return KeyIndex(keys, order)(query)


class KeyIndex:
    """:func:`lookup` into the same keys for several queries: the index is built once (the
    ops' External ids serve the kernels, the copies and the syncs)."""

    def __init__(self, keys: pd.Series, order=None):
        self.empty = not len(keys)
        if self.empty:
            return
        kv = keys.to_numpy(dtype="int64", na_value=_MISSING_KEY)
        pos = np.arange(len(kv)) if order is None else np.asarray(order)
        kv = kv[pos]
        keep = (kv != _MISSING_KEY) & ~pd.Series(kv).duplicated(keep="first").to_numpy()
        self.index = pd.Index(kv[keep])
        self.rows = pos[keep]
        self.empty = not len(self.rows)   # keys, but none usable (no op has an External id)

    def __call__(self, query: pd.Series) -> np.ndarray:
        if self.empty or not len(query):
            return np.full(len(query), -1, dtype=np.int64)
        hit = self.index.get_indexer(query.to_numpy(dtype="int64", na_value=_MISSING_KEY))
        return np.where(hit >= 0, self.rows[np.maximum(hit, 0)], -1)


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


def join_memory(mem: pd.DataFrame, ops: pd.DataFrame, frames: pd.DataFrame) -> None:
    """Add to the allocator's events the CPU op on their thread whose range holds them (``op``,
    ``op_index``: the innermost) and the Python line around them (``source``), in place. Only
    the threads that allocated are swept.

    >>> mem = pd.DataFrame({"tid": [1], "start_us": [2.0]})
    >>> ops = pd.DataFrame({"name": ["aten::empty"], "tid": [1], "start_us": [1.0], "duration_us": [3.0]})
    >>> join_memory(mem, ops, ops.iloc[:0]); mem[["op", "op_index"]].values.tolist()
    [['aten::empty', 0]]
    """
    tids, times = mem["tid"].tolist(), mem["start_us"].tolist()
    wanted = set(tids)
    by_tid: dict = {}
    m = ops["tid"].isin(wanted).to_numpy() if len(ops) else np.zeros(0, bool)
    for row, tid, s, d in zip(np.flatnonzero(m).tolist(), ops["tid"].to_numpy()[m].tolist(),
                              ops["start_us"].to_numpy()[m].tolist(), ops["duration_us"].to_numpy()[m].tolist()):
        by_tid.setdefault(tid, []).append((s, s + d, row))
    got = innermost_spans(tids, times, by_tid)
    rows = np.array([-1 if r is None else r for r in got], dtype=np.int64)
    join_op(mem, ops, rows)
    if len(frames) and len(mem):
        fr = frames[frames["tid"].isin(wanted)]
        got = innermost_frames(tids, times, {c: fr[c].tolist() for c in ("name", "tid", "start_us", "duration_us")})
        src = np.empty(len(got), dtype=object)
        src[:] = got
        # Explicit object dtype: pandas 3 would infer its string dtype (None read back as NaN).
        mem["source"] = pd.Series(src, dtype=object, index=mem.index, copy=False)


def sync_table(rt: pd.DataFrame, gsyncs: pd.DataFrame, ops: pd.DataFrame, op_of: KeyIndex) -> pd.DataFrame:
    """Host-blocking sync calls from the runtime table, plus GPU-side sync records; ``op_of``
    finds the enclosing op of an External id."""
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
    s["op"] = take(ops["name"].to_numpy(), op_of(s["external_id"]))
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
