"""The payload codec: tables as little-endian typed-array columns in one binary buffer, strings
as dictionaries in the header, both packed into one gzipped blob (``js/src/view/data.js``
decodes it). ``pack``/``unpack`` and ``decode_payload`` are each other's inverse."""
from __future__ import annotations

import base64
import gzip
import json
import struct

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import factorize

# The MIME entry's layout: 2 = {"format": 2, "encoding": "gzip+base64", "data": packed blob};
# entries without "format" are the first layout, {"header": {...}, "encoding", "data": buffer}.
# The view model's version (the header's "version"): the front end refuses a newer one.
VIEW_VERSION = 1
PAYLOAD_FORMAT = 2
_DTYPES = {"f64": "<f8", "f32": "<f4", "i32": "<i4", "t32": "<f8", "q32": "<f8"}
# Times in microseconds on Kineto's nanosecond grid, sent as int32 nanoseconds: "t32" as deltas
# from the previous row (plus "base_ns"), for start times; "q32" as they are, for durations. Such
# integers gzip to about half of what float64/float32 columns do (a report's host spans are most
# of its payload). A column that does not fit (missing values, a step past 2.1 s) goes as f64.
_TIME_KINDS = ("t32", "q32")
_I32 = 2**31 - 1
# Column buffers up to this size are gzipped at level 9, larger ones at 6 (pack()).
PACK_LEVEL9_BYTES = 4 << 20
_MISSING_INT = -1


def pack_tables(items) -> tuple[dict, bytes]:
    """``(name, DataFrame, [(column, kind), ...])`` triples as the header's table directory and
    one buffer of 8-byte aligned typed-array columns (what ``js/src/view/data.js`` decodes).

    >>> tables, buf = pack_tables([("t", pd.DataFrame({"x": [1.0]}), [("x", "f64")])])
    >>> tables["t"]["rows"], len(buf)
    (1, 8)
    """
    chunks, offset, tables = [], 0, {}
    for tname, df, spec in items:
        cols = []
        for col, kind in spec:
            arr, strings = _encode(df[col] if col in df.columns else None, kind, len(df))
            pad = (-offset) % 8
            if pad:
                chunks.append(b"\0" * pad)
                offset += pad
            entry = {}
            if kind in _TIME_KINDS:
                arr, kind, extra = _encode_time(arr, kind)
                entry.update(extra)
            raw = arr.tobytes()
            entry = {"name": col, "type": "i32" if kind == "str" else kind, "offset": offset,
                     "length": int(len(arr)), **entry}
            if strings is not None:
                entry["strings"] = strings
            cols.append(entry)
            chunks.append(raw)
            offset += len(raw)
        tables[tname] = {"rows": int(len(df)), "columns": cols}
    return tables, b"".join(chunks)


def pack(header: dict, buf: bytes) -> bytes:
    """Header and column buffer as one gzipped blob: u32 (little-endian) length of the header's
    UTF-8 JSON, the JSON, zero padding to a multiple of 8, then the buffer (so the browser maps
    the columns straight out of the inflated bytes).

    >>> from kernelscope.view.report import view_model
    >>> unpack(pack(*view_model(rep)))[0]["stats"]["launches"]
    74
    """
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    head = struct.pack("<I", len(text)) + text
    head += b"\0" * ((-len(head)) % 8)
    # mtime=0 keeps the bytes (and so the saved notebook) identical across runs.
    # Level 9 keeps small reports' notebooks light; past a few MB it costs seconds for ~2% less.
    level = 9 if len(buf) < PACK_LEVEL9_BYTES else 6
    return gzip.compress(head + buf, compresslevel=level, mtime=0)


def unpack(blob: bytes) -> tuple[dict, bytes]:
    """(header, column buffer) of a :func:`pack` blob."""
    raw = gzip.decompress(blob)
    (n,) = struct.unpack_from("<I", raw)
    start = 4 + n + (-(4 + n)) % 8
    return json.loads(raw[4:4 + n].decode("utf-8")), raw[start:]


def read_payload(payload: dict) -> tuple[dict, bytes]:
    """(header, column buffer) of a MIME payload, in this layout or the first one.

    >>> from kernelscope.view.bundle import mime_payload
    >>> read_payload(mime_payload(rep))[0]["stats"]["launches"]
    74
    """
    if payload.get("format") == PAYLOAD_FORMAT:
        return unpack(base64.b64decode(payload["data"]))
    if "header" in payload:   # first layout: plain JSON header, gzipped buffer beside it
        data = base64.b64decode(payload.get("data") or "")
        gz = payload.get("encoding") == "gzip+base64" and data
        return payload["header"], gzip.decompress(data) if gz else data
    raise ValueError(f"not a kernelscope report payload (format {payload.get('format')!r})")


def decode_payload(payload: dict) -> dict:
    """Decode a MIME payload back into numpy columns per table (tests and tools).

    >>> from kernelscope.view.bundle import mime_payload
    >>> decode_payload(mime_payload(rep))["kernels"]["duration_us"][:3]
    array([1.312, 6.112, 2.112])
    """
    return decode_buffer(*read_payload(payload))


def decode_buffer(header: dict, buf: bytes) -> dict:
    """Map a view buffer into numpy arrays (strings decoded), as the browser does."""
    out = {}
    for tname, t in header["tables"].items():
        cols: dict = {}
        for c in t["columns"]:
            if c["type"] in _TIME_KINDS:
                cols[c["name"]] = _decode_time(np.frombuffer(buf, "<i4", c["length"], c["offset"]), c)
                continue
            arr = np.frombuffer(buf, dtype=_DTYPES[c["type"]], count=c["length"], offset=c["offset"])
            if "strings" in c:
                s = c["strings"]
                arr = [s[i] if i >= 0 else None for i in arr.tolist()]
            cols[c["name"]] = arr
        out[tname] = cols
    return out
# -- helpers ---------------------------------------------------------------------------------
def is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _encode_time(v: np.ndarray, kind: str):
    """A float64 column of microseconds as int32 nanoseconds (see ``_TIME_KINDS``), or as it is.

    >>> a, kind, extra = _encode_time(np.array([10.5, 10.75, 12.0]), "t32")
    >>> kind, extra, a.tolist()
    ('t32', {'base_ns': 10500}, [0, 250, 1250])
    """
    if not len(v) or not np.isfinite(v).all():
        return v, "f64", {}
    ns = np.rint(v * 1000.0)
    if np.abs(ns).max() >= 2**53:
        return v, "f64", {}
    ns = ns.astype(np.int64)
    if kind == "t32":
        base = int(ns[0])
        q = np.diff(ns, prepend=base)
        extra = {"base_ns": base}
    else:
        q, extra = ns, {}
    if np.abs(q).max() > _I32:
        return v, "f64", {}
    return q.astype("<i4"), kind, extra


def _decode_time(arr: np.ndarray, c: dict) -> np.ndarray:
    """The inverse of :func:`_encode_time` (what ``js/src/view/data.js`` does)."""
    q = arr.view("<i4")[: c["length"]].astype(np.int64)
    if c["type"] == "t32":
        q = c["base_ns"] + np.cumsum(q)
    return q / 1000.0


def _encode(s, kind, n):
    """One column as a typed array (and its string dictionary for "str"); time kinds as float64,
    which ``pack_tables`` then encodes (:func:`_encode_time`)."""
    if kind in _TIME_KINDS:
        kind = "f64"
    if s is None:
        if kind == "str":
            return np.full(n, -1, "<i4"), []
        fill = np.nan if kind.startswith("f") else _MISSING_INT
        return np.full(n, fill, _DTYPES[kind]), None
    if kind == "str":
        if isinstance(s.dtype, pd.StringDtype):     # text per row: by value, as objects (faster)
            s = s.to_numpy(dtype=object)
        try:
            codes, uniques = factorize(s, use_na_sentinel=True)     # by identity first: long names
        except TypeError:   # a damaged saved report's cell holds a list or a dict: show it as text
            s = pd.Series(s, dtype=object).map(lambda v: str(v) if isinstance(v, (list, dict, set)) else v)
            codes, uniques = factorize(s, use_na_sentinel=True)
        return codes.astype("<i4"), [str(u) for u in uniques]
    if pd.api.types.is_bool_dtype(s):
        s = s.astype("Int64")
    if kind.startswith("f"):
        v = pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(na_value=np.nan)
        with np.errstate(over="ignore"):    # a hostile file's 1e300 reads as inf in float32, as it should
            return v.astype(_DTYPES[kind]), None
    v = pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(na_value=np.nan)
    v = np.where(np.isfinite(v) & (np.abs(v) < 2**31), v, _MISSING_INT)
    return v.astype("<i4"), None
