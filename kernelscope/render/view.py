"""The view model: what the browser gets of a Report.

One small JSON header (headline numbers, findings, backends, occupancy curves, roofline, the
column directory) plus one binary buffer holding the launch-level tables as little-endian typed
arrays (``Float64Array``/``Float32Array``/``Int32Array``). Strings travel once, in the header, as
dictionaries; the buffer holds their int32 codes. The browser maps each column with a zero-copy
typed-array view, so 100k launches cost one ``ArrayBuffer`` and no per-row JSON.

Both travel as one packed, gzipped blob (:func:`pack`): as the one binary buffer the anywidget
sends when its view asks (``kernelscope.widget``), and, base64-encoded, as the MIME bundle entry
(``application/vnd.kernelscope.report.v1+json``) that lets a saved notebook render with no kernel. Packing the header too keeps a saved notebook light
(the header's findings, roofline and names are most of a small report). Both are decoded by the
same front-end code (``js/src/view/data.js``), which also reads the older payload format (plain
JSON header beside a gzipped buffer) of notebooks saved before.
"""
from __future__ import annotations

import base64
import gzip
import json
import math
import struct

import numpy as np
import pandas as pd

from ..analysis.backend_rules import BACKENDS, COPY_COLORS
from ..analysis.devices import device_label, device_types
from ..analysis.evidence import evidence_rows
from ..analysis.occupancy import LIMITERS
from ..analysis.priorities import what_to_fix
from ..analysis.shapes import shape_curves
from ..analysis.timeline import CAUSES
from ..jsonable import jsonable
from ..trace.model import SYNC_CALLS
from ..trace.ncu import COMPARED_METRICS
from ..units import fmt_us
from .ncu_view import kernel_detail

MIME_TYPE = "application/vnd.kernelscope.report.v1+json"
VIEW_VERSION = 1
# The MIME entry's layout: 2 = {"format": 2, "encoding": "gzip+base64", "data": packed blob};
# entries without "format" are the first layout, {"header": {...}, "encoding", "data": buffer}.
PAYLOAD_FORMAT = 2

# Curves are computed up front for the launch shapes that take the most time only: a curve set is
# ~740 occupancy-calculator calls (~0.1 s), paid on every display; the live widget asks for others on selection.
CURVE_KERNELS = 3
# CPU ops listed in the view (by total time); the rest stay in rep.ops.
TOP_OPS = 200
# Roofline points are per CPU op instance; the chart shows the costliest ones.
ROOFLINE_POINTS = 300
# Launch-level columns that go to the browser: (column, typed-array kind). "str" columns are
# dictionary-encoded (int32 codes, -1 = missing).
LAUNCH_COLUMNS = [
    ("name", "str"), ("backend", "str"), ("device", "str"), ("stream", "i32"),
    ("start_us", "t32"), ("duration_us", "q32"),
    ("grid_x", "i32"), ("grid_y", "i32"), ("grid_z", "i32"),
    ("block_x", "i32"), ("block_y", "i32"), ("block_z", "i32"),
    ("registers_per_thread", "i32"), ("shared_mem_bytes", "i32"),
    ("theoretical_occupancy", "f32"), ("occupancy_limiter", "str"), ("waves", "f32"),
    ("op", "str"), ("source", "str"), ("correlation", "i32"), ("tensor_cores", "i32"),
    ("backend_rule", "str"), ("config", "i32"),
]
COPY_COLUMNS = [
    ("name", "str"), ("kind", "str"), ("copy_kind", "str"), ("device", "str"), ("stream", "i32"),
    ("start_us", "t32"), ("duration_us", "q32"), ("bytes", "f64"), ("bandwidth_gbps", "f32"),
    ("src_memory", "str"), ("dst_memory", "str"), ("op", "str"),
]
# Host lanes of the timeline: every CPU op of each thread at its nesting depth (kind "op", or
# "annotation" for record_function / NVTX-style user ranges), and the CUDA runtime calls (kind
# "runtime", or "sync" for the host-blocking calls of trace.model.SYNC_CALLS) with the
# correlation id that ties a launch call to its kernel.
HOST_COLUMNS = [("name", "str"), ("tid", "str"), ("start_us", "t32"), ("duration_us", "q32"), ("kind", "str"),
                ("depth", "i32"), ("correlation", "i32")]
GAP_COLUMNS = [
    ("device", "str"), ("start_us", "t32"), ("duration_us", "q32"), ("cause", "str"), ("after_op", "str"),
    ("blocking_call", "str"),
]
# Host spans on the timeline: CPU ops, runtime/driver calls, and the host-blocking sync calls.
HOST_COLORS = {"op": "#8c9bb0", "annotation": "#b8a06a", "runtime": "#c4c4c4", "sync": "#9467bd"}
_DTYPES = {"f64": "<f8", "f32": "<f4", "i32": "<i4", "t32": "<f8", "q32": "<f8"}
# Times in microseconds on Kineto's nanosecond grid, sent as int32 nanoseconds: "t32" as deltas
# from the previous row (plus "base_ns"), for start times; "q32" as they are, for durations. Such
# integers gzip to about half of what float64/float32 columns do (a report's host spans are most
# of its payload). A column that does not fit (missing values, a step past 2.1 s) goes as f64.
_TIME_KINDS = ("t32", "q32")
_I32 = 2**31 - 1
# Per-kernel counter columns (kernelscope.analysis.counters.PER_KERNEL) sent with launches/copies.
COUNTER_KERNEL_COLUMNS = ("sm_active_pct", "tensor_pct", "dram_pct", "dram_gbps", "counter_samples")
# Stall rows listed in the view (by samples); the rest stay in rep.stalls.
TOP_STALL_ROWS = 200
# Launches (kernels + copies) sent to the browser at most. Past this the view gets the launches
# of the trace's first part up to the budget, with the host spans, gaps and counter samples of
# the same window, and says so; its headline numbers, findings, backends, roofline and op list
# stay whole-report. A million launches would be ~100 MB of columns (~25 MB packed, a third more
# as base64 in a saved notebook) for a table and timeline drawn from the browser's memory.
VIEW_LAUNCHES = 200_000
# The same for the host lanes' spans (every CPU op and runtime call; ~40 bytes each).
VIEW_HOST_SPANS = 400_000
# Column buffers up to this size are gzipped at level 9, larger ones at 6 (pack()).
PACK_LEVEL9_BYTES = 4 << 20
_MISSING_INT = -1


def vocabulary() -> dict:
    """The names and colours the browser draws with, from the Python tables that own them
    (sent in every payload's header, so the JS holds no copy): backend colours and copy
    directions (``analysis.backend_rules``), idle-gap causes (``analysis.timeline.CAUSES``),
    occupancy limiters and their short forms (``analysis.occupancy.LIMITERS``), the Nsight
    Compute metrics shown beside ours (``trace.ncu.COMPARED_METRICS``) and host span colours.

    >>> vocabulary()["backends"]["cuBLAS"], vocabulary()["limiters"]["shared_mem"]
    ('#4e79a7', 'smem')
    """
    return {
        "backends": dict(BACKENDS), "copies": dict(COPY_COLORS), "host": dict(HOST_COLORS),
        "causes": {c: {"text": x.text, "legend": x.legend, "color": x.color} for c, x in CAUSES.items()},
        "limiters": dict(LIMITERS),
        "ncu": [{"label": label, "column": col, "ours": ours} for label, col, ours in COMPARED_METRICS],
    }


def view_model(rep) -> tuple[dict, bytes]:
    """The report as (JSON header, binary column buffer) for the browser.

    >>> header, buf = view_model(ks.load("launch_bound.pt.trace.json.gz"))   # doctest: +SKIP
    >>> header["stats"]["launches"], len(buf)                                # doctest: +SKIP
    (2000, 228000)
    """
    k_all = rep.kernels.reset_index(drop=True)
    # The launch shape's code: its row of rep.shapes (the analysis's launch-shapes table).
    k_all = k_all.assign(config=k_all["shape"] if "shape" in k_all.columns else 0)
    copies_all = rep.copies.reset_index(drop=True)
    host_all = _host_spans(rep.ops, rep.runtime)
    until = view_window(k_all, copies_all, host_all)
    k, copies, host = ((_before(k_all, until), _before(copies_all, until), _before(host_all, until))
                       if until is not None else (k_all, copies_all, host_all))
    ncu_cols = [c for c in k.columns if c.startswith("ncu_") and _numeric(k[c])]
    extra = [c for c in ("flops", "bytes", "dram_bytes") if c in k.columns and _numeric(k[c])]
    counter_cols = [c for c in COUNTER_KERNEL_COLUMNS if c in k.columns and _numeric(k[c])]
    launch_spec = (LAUNCH_COLUMNS + [(c, "f64") for c in ncu_cols + extra] + [(c, "f32") for c in counter_cols]
                   + ([("top_stall", "str")] if "top_stall" in k.columns else []))
    counters = _counter_samples(rep)

    problems = []
    tl = _safe(lambda: rep.timeline, None, problems, "timeline")
    gaps = tl.gaps.reset_index(drop=True) if tl is not None else pd.DataFrame()
    window = None
    if until is not None:
        gaps = _before(gaps, until)
        if counters is not None:
            counters = (_before(counters[0], until), counters[1])
        window = {"until_us": float(until), "launches": int(len(k)), "of_launches": int(len(k_all)),
                  "copies": int(len(copies)), "of_copies": int(len(copies_all)),
                  "host_spans": int(len(host)), "of_host_spans": int(len(host_all))}
    copy_spec = COPY_COLUMNS + [(c, "f32") for c in COUNTER_KERNEL_COLUMNS if c in copies.columns]
    parts = [("kernels", k, launch_spec), ("copies", copies, copy_spec), ("gaps", gaps, GAP_COLUMNS),
             ("host", host, HOST_COLUMNS)]
    if counters is not None:
        parts.append(("counters", counters[0], counters[1]))
    tables, buf = pack_tables(parts)

    header = {
        "version": VIEW_VERSION,
        "vocabulary": vocabulary(),
        "title": _title(rep),
        "partial": bool(rep.partial),
        "notes": [str(n) for n in rep.notes] + problems + ([_window_note(window)] if window else []),
        "window": window,
        "stats": _stats(rep, k_all, copies_all, tl),
        "devices": _records(rep.devices),
        "findings": _findings(rep, problems),
        # The first screen: what to fix first, ranked by the time at stake (analysis/priorities.py).
        "fixes": _safe(lambda: jsonable(what_to_fix(rep.findings, rep.wall_time_us)),
                       [], problems, "what to fix"),
        # The tab a report opens on: CPU ops when the run recorded no GPU work.
        "open_tab": "CPU ops" if not len(k) and not len(copies) and len(rep.ops) else "Kernels",
        "backends": _records(_safe(lambda: rep.backends, pd.DataFrame(), problems, "backend breakdown")),
        "names": _name_table(k),
        "name_notes": _name_notes(k),
        "configs": _occupancy_configs(rep, k),
        "roofline": _roofline(rep, k_all, problems),
        "ops": _op_summary(rep.ops, k_all),
        # How many op names there are: "ops" holds the costliest TOP_OPS of them.
        "op_names": int(rep.ops["name"].nunique()) if len(rep.ops) else 0,
        # The Chrome trace the report was read from or written with (--trace), for Perfetto.
        "raw_trace": _raw_trace(rep),
        "ncu_columns": ncu_cols,
        # Hardware-counter samples (the "counters" table) and warp stalls, with their labels.
        "counters": _counter_header(rep, counters),
        "stalls": _stalls_header(rep),
        # The kernel deep dive of launches Nsight Compute measured (render/ncu_view.py).
        "kernel_detail": _safe(lambda: jsonable(kernel_detail(rep)), None, problems, "Nsight Compute deep dive"),
        # Display options of %%kernelprofile (--top, --sort), when it set them.
        "view": jsonable(rep.meta.get("view")) if isinstance(rep.meta.get("view"), dict) else {},
        "tables": tables,
        "nbytes": len(buf),
    }
    return header, buf


def view_window(kernels: pd.DataFrame, copies: pd.DataFrame, host: pd.DataFrame | None = None) -> float | None:
    """Where the view's window ends (``start_us`` of the first row left out), or None when the
    launches (kernels + copies) fit :data:`VIEW_LAUNCHES` and the host spans :data:`VIEW_HOST_SPANS`.

    >>> view_window(pd.DataFrame({"start_us": [3.0, 1.0, 2.0, 4.0] * 100_000}), pd.DataFrame())
    3.0
    """
    cuts = [_nth_start([kernels, copies], VIEW_LAUNCHES)]
    if host is not None:
        cuts.append(_nth_start([host], VIEW_HOST_SPANS))
    cuts = [c for c in cuts if c is not None]
    return min(cuts) if cuts else None


def _nth_start(tables, budget: int) -> float | None:
    """The start of the row after the first ``budget`` rows in time order (None: they all fit)."""
    starts = [t["start_us"].to_numpy(dtype=float, na_value=np.nan) for t in tables
              if len(t) and "start_us" in t.columns]
    starts = np.concatenate(starts) if starts else np.empty(0)
    starts = starts[~np.isnan(starts)]
    if len(starts) <= budget:
        return None
    return float(np.partition(starts, budget)[budget])


def _before(df: pd.DataFrame, until: float) -> pd.DataFrame:
    """The rows of ``df`` that start before ``until``."""
    if not len(df) or "start_us" not in df.columns:
        return df
    return df[(df["start_us"] < until).to_numpy(dtype=bool, na_value=False)].reset_index(drop=True)


def _window_note(w: dict) -> str:
    return (f"This view holds the trace's first {fmt_us(w['until_us'])}: "
            f"{w['launches']:,} of {w['of_launches']:,} kernel launches"
            + (f", {w['copies']:,} of {w['of_copies']:,} copies" if w["of_copies"] else "")
            + f" and {w['host_spans']:,} of {w['of_host_spans']:,} CPU ops and runtime calls. "
              "The kernel table and the timeline cover that window; the figures above, the findings, "
              "backends, roofline and ops cover the whole report (rep.kernels and rep.ops have every row).")


def with_widget(bundle: dict, make_widget) -> dict:
    """``bundle`` (a display's MIME entries) plus the live widget's, when ``make_widget()`` can
    build one: without ipywidgets or a kernel the other entries still render.

    >>> with_widget({"text/plain": "r"}, lambda: 1 / 0)
    {'text/plain': 'r'}
    """
    try:
        view = make_widget()._repr_mimebundle_()
    except Exception:  # noqa: BLE001 - no widget machinery here: the other types still render
        view = None
    if view:
        data = view[0] if isinstance(view, tuple) else view
        bundle.update({k: v for k, v in data.items() if k != "text/plain"})
    return bundle


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

    >>> unpack(pack(*view_model(rep)))[0]["stats"]["launches"]   # doctest: +SKIP
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


def mime_payload(rep, model: tuple | None = None, packed: bytes | None = None) -> dict:
    """The JSON-able MIME bundle entry for ``application/vnd.kernelscope.report.v1+json``
    (``model``: a :func:`view_model` result already computed for ``rep``; ``packed``: its
    :func:`pack` blob, when already made for the widget).

    >>> mime_payload(rep)["encoding"]     # doctest: +SKIP
    'gzip+base64'
    """
    if packed is None:
        packed = pack(*(model or view_model(rep)))
    return {"format": PAYLOAD_FORMAT, "encoding": "gzip+base64", "data": base64.b64encode(packed).decode("ascii")}


def read_payload(payload: dict) -> tuple[dict, bytes]:
    """(header, column buffer) of a MIME payload, in this layout or the first one.

    >>> read_payload(mime_payload(rep))[0]["stats"]["launches"]   # doctest: +SKIP
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

    >>> decode_payload(mime_payload(rep))["kernels"]["duration_us"][:3]   # doctest: +SKIP
    """
    return decode_buffer(*read_payload(payload))


def decode_buffer(header: dict, buf: bytes) -> dict:
    """Map a view buffer into numpy arrays (strings decoded), as the browser does."""
    out = {}
    for tname, t in header["tables"].items():
        cols = {}
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


# -- counters and stalls -----------------------------------------------------------------------
def _counter_samples(rep):
    """(samples table, column spec) for the utilization strip, or None without samples."""
    m = getattr(rep, "metrics", None)
    if m is None or not len(m):
        return None
    from ..trace.counters import DERIVED
    m = m.sort_values("start_us", kind="stable").reset_index(drop=True)
    types = device_types(rep.devices)
    m = m.assign(device=[device_label(i, types.get(i)) for i in m["device_index"].tolist()])
    cols = [d.column for d in DERIVED if d.column in m.columns and np.isfinite(m[d.column].to_numpy(float)).any()]
    spec = [("device", "str"), ("start_us", "f64"), ("duration_us", "f32")] + [(c, "f32") for c in cols]
    return m, spec


def _counter_header(rep, counters) -> dict | None:
    if counters is None:
        return None
    from ..trace.counters import DERIVED
    meta = rep.meta.get("counters") if isinstance(rep.meta.get("counters"), dict) else {}
    have = {c for c, _ in counters[1]}
    tracks = [{"column": d.column, "label": d.label, "unit": d.unit, "meaning": d.meaning, "color": d.color,
               # percentages share one 0-100 scale; bandwidth scales to its own maximum
               "max": 100.0 if d.unit == "%" else None}
              for d in DERIVED if d.column in have]
    iv = _num(meta.get("interval_us"))
    src = _str(meta.get("source")) or "CUPTI PM sampling"
    return {"source": src, "interval_us": iv, "samples": int(len(counters[0])), "capped": bool(meta.get("capped")),
            "tracks": tracks,
            "note": (f"Measured by {src}" + (f" every {iv:.0f} us" if iv else "") + ", GPU-wide (all SMs, "
                     "all streams), no kernel replay. A kernel's values are the samples time-weighted over "
                     "its interval; sampling may lock GPU clocks.")}


def _stalls_header(rep) -> dict | None:
    s = getattr(rep, "stalls", None)
    if s is None or not len(s):
        return None
    from ..analysis.stalls import REASONS, explain, reason_columns, top_stalls
    reasons = reason_columns(s)
    rows = []
    for r in s.sort_values("samples", ascending=False).head(TOP_STALL_ROWS).to_dict("records"):
        shares = {c: _num(r[c]) for c in reasons if _num(r.get(c))}
        rows.append({"name": _str(r.get("name")), "source": _str(r.get("source")), "samples": _num(r.get("samples")),
                     "top_stall": _str(r.get("top_stall")), "shares": shares})
    used = sorted({c for row in rows for c in row["shares"]}, key=lambda c: list(REASONS).index(c) if c in REASONS else 99)
    return {"sources": sorted({str(x) for x in s["source"].dropna()}), "rows": rows,
            "overall": [[a, _num(b)] for a, b in top_stalls(s, 5)],
            "reasons": {c: {"title": explain(c).title, "meaning": explain(c).meaning, "fix": explain(c).fix}
                        for c in used}}


# -- helpers ---------------------------------------------------------------------------------
def _numeric(s: pd.Series) -> bool:
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
        try:
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
        except TypeError:   # a damaged saved report's cell holds a list or a dict: show it as text
            s = s.map(lambda v: str(v) if isinstance(v, (list, dict, set)) else v)
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
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


def _host_spans(ops: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """Every CPU op with its depth in its thread's call tree (``analysis.op_tree``), drawn
    nested as Perfetto draws a thread, plus the CUDA runtime calls, so the timeline shows what
    the host was doing while the GPU idled and which call launched which kernel."""
    from ..analysis.op_tree import op_tree
    parts = []
    if len(ops):
        o = ops.reset_index(drop=True)
        tree = op_tree(o)
        kind = np.where((o["cat"] == "user_annotation").to_numpy() if "cat" in o.columns else False,
                        "annotation", "op").astype(object)
        o = o[["name", "tid", "start_us", "duration_us"]].assign(tid=o["tid"].astype(str), kind=kind,
                                                                 depth=tree["depth"].to_numpy())
        parts.append(o.dropna(subset=["start_us"]))
    if len(runtime):
        r = runtime[["name", "tid", "start_us", "duration_us", "correlation"]].dropna(subset=["start_us"])
        kind = np.where(r["name"].isin(list(SYNC_CALLS)).to_numpy(), "sync", "runtime").astype(object)
        parts.append(r.assign(tid=r["tid"].astype(str), kind=kind, depth=0))
    if not parts:
        return pd.DataFrame({c: [] for c, _ in HOST_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def _raw_trace(rep) -> dict | None:
    """Where the report's Chrome trace is (``meta["raw_trace"]``: the file ``ks.load`` read, or
    the one ``--trace`` / ``trace_path`` wrote), and whether it is still there."""
    import os
    path = rep.meta.get("raw_trace")
    if not isinstance(path, str) or not path:
        return None
    return {"name": os.path.basename(path), "path": path, "exists": os.path.isfile(path)}


def _title(rep) -> str:
    title = getattr(rep, "title", None)
    return title if isinstance(title, str) and title else "report"


def _stats(rep, k, copies, tl) -> dict:
    busy = _safe(lambda: tl.device(), {}) if tl is not None else {}
    return {
        "wall_us": _num(rep.wall_time_us),
        # Which clock the wall time read (CUDA events, the profiler's span, first to last event).
        "wall_clock": _str(getattr(rep, "wall_time_clock", None)),
        "gpu_time_us": _num(rep.gpu_time_us),
        # Busy share of the active window (first to last GPU activity), as the findings use it.
        "gpu_busy": _num(busy.get("busy_share")),
        "gpu_busy_of_wall": _num(busy.get("wall_busy_share")),
        "busy_device": _str(busy.get("device")),
        # Kernel launches only, as everywhere in kernelscope; copies and memsets are counted apart.
        "launches": int(len(k)),
        "kernels": int(k["name"].nunique()) if len(k) else 0,
        "copies": int(len(copies)),
        "memsets": int((copies["kind"] == "memset").sum()) if len(copies) and "kind" in copies.columns else 0,
        "copy_time_us": _num(float(copies["duration_us"].sum())) if len(copies) else 0.0,
        "ops": int(len(rep.ops)),
        "no_gpu": bool(rep.meta.get("no_gpu")),
    }


def _findings(rep, problems=None) -> list:
    out = []
    for f in _safe(lambda: rep.findings, [], problems, "findings"):
        get = (lambda a: f.get(a)) if isinstance(f, dict) else (lambda a: getattr(f, a, None))
        ev = get("evidence")
        out.append({"kind": _str(get("kind")), "severity": _str(get("severity")), "title": _str(get("title")),
                    "detail": _str(get("detail")), "cost_us": _num(get("cost_us")),
                    "cause": _str(get("cause")), "fix": _str(get("fix")), "link": jsonable(get("link")),
                    "evidence": {str(a): jsonable(b) for a, b in ev.items()} if isinstance(ev, dict) else {},
                    # The evidence in words, each figure with its unit (analysis/evidence.py).
                    "evidence_text": evidence_rows(jsonable(ev)) if isinstance(ev, dict) else []})
    return out


def _name_table(k: pd.DataFrame) -> list:
    """Per kernel name (in the order of the dictionary sent with the ``name`` column): short name."""
    if not len(k):
        return []
    first = k.drop_duplicates("name")
    short = dict(zip(first["name"].astype(str), first["short_name"].astype(str)))
    names = pd.unique(pd.Series([str(v) for v in k["name"].tolist()], dtype=object))
    return [short.get(n, n) for n in names]


def _name_notes(k: pd.DataFrame) -> list:
    """Per kernel name (same order as ``names``): what the kernel is in words ("" when nothing to add),
    and why its backend was chosen."""
    if not len(k):
        return []
    from ..analysis.backend_rules import RULES
    from ..analysis.names import describe
    why = {r.id: r.why for r in RULES}
    first = k.drop_duplicates("name")
    info = {str(n): (describe(str(n), b), why.get(r, "")) for n, b, r in
            zip(first["name"], first["backend"], first.get("backend_rule", [""] * len(first)))}
    names = pd.unique(pd.Series([str(v) for v in k["name"].tolist()], dtype=object))
    return [{"about": info[n][0], "why": info[n][1]} for n in names]


def _occupancy_configs(rep, k: pd.DataFrame) -> list:
    """Per launch shape (a row of ``rep.shapes``, the analysis's launch-shapes table): the
    calculator's breakdown and advice; for the costliest shapes also the curves (the live widget
    asks for the others when one is selected: :func:`config_curves`)."""
    shapes = _shapes(rep, k)
    if not len(k) or shapes is None or not len(shapes):
        return []
    with_curves = set(shapes.sort_values("total_us", ascending=False, kind="stable")["shape"][:CURVE_KERNELS].tolist())
    return [_config_entry(r, rep.devices, r["shape"] in with_curves) for r in shapes.to_dict("records")]


def config_curves(rep, config: int) -> dict:
    """Occupancy breakdown, advice and curves of one launch shape (a ``config`` code of the
    view: the ``shape`` column of ``rep.kernels``).

    >>> config_curves(rep, 0)["curves"]["block"][:2]   # doctest: +SKIP
    [[32, 0.5], [64, 1.0]]
    """
    shapes = _shapes(rep, rep.kernels)
    rows = shapes[shapes["shape"] == int(config)] if shapes is not None else []
    if not len(rows):
        return {"config": int(config)}
    return _config_entry(rows.iloc[0].to_dict(), rep.devices, True)


def _shapes(rep, k):
    shapes = getattr(rep, "shapes", None)
    if shapes is None or "shape" not in k.columns:
        return None
    return shapes


_SHAPE_FIELDS = ("active_blocks_per_sm", "block_limit_registers", "block_limit_shared_mem",
                 "block_limit_warps", "block_limit_blocks", "block_limit_barriers", "reason")


def _config_entry(shape: dict, devices: pd.DataFrame, with_curves: bool) -> dict:
    entry = {"config": int(shape["shape"])}
    occ = _num(shape.get("theoretical_occupancy"))
    if occ is None:
        return entry   # a damaged header (no compute capability) leaves occupancy unknown
    entry.update(threads=_int(shape["threads_per_block"]), registers=_int(shape["registers_per_thread"]),
                 smem=_int(shape["shared_mem_bytes"]),
                 cc=[_int(shape["compute_major"]), _int(shape["compute_minor"])], occupancy=occ)
    entry.update({f: jsonable(shape.get(f)) for f in _SHAPE_FIELDS})
    entry["limiters"] = [str(x) for x in (shape.get("limiters") or ())]
    entry["hints"] = [str(x) for x in (shape.get("advice") or ())]
    if with_curves:
        curves = _safe(lambda: shape_curves(shape, devices), None)
        if curves is not None:
            entry["curves"] = {key: _steps(curves[curves["vary"] == vary])
                               for key, vary in (("block", "threads_per_block"),
                                                 ("registers", "registers_per_thread"),
                                                 ("smem", "shared_mem_per_block"))}
    return entry


def _steps(c: pd.DataFrame) -> list:
    """A curve as [value, occupancy] points where occupancy changes (a step function), plus
    its ends and the launch's own value: a few dozen points instead of hundreds."""
    v = c["value"].to_numpy()
    o = c["occupancy"].to_numpy(dtype=float)
    cur = c["current"].to_numpy(dtype=bool)
    keep = np.zeros(len(v), bool)
    if len(v):
        keep[0] = keep[-1] = True
        keep[1:] |= o[1:] != o[:-1]
        keep |= cur
    return [[int(a), _num(b)] for a, b in zip(v[keep], o[keep])]


def _same_dots_once(pts: pd.DataFrame) -> pd.DataFrame:
    """Op instances that would draw the same dot (same kernel, op, precision and intensity: a loop's
    2,000 identical adds) as one dot: their time summed, FLOP/s and roof share time-weighted, and
    ``count`` saying how many. The chart sizes dots by time, so nothing it shows changes but bytes."""
    keys = ["kernel", "short_name", "op", "precision", "intensity", "device"]
    keys = [c for c in keys if c in pts.columns]
    if not len(pts) or not keys:
        return pts.assign(count=1)
    d = pts["duration_us"].astype(float).fillna(0.0)
    w = pts.assign(_fl=pts["achieved_tflops"].astype(float) * d, _rs=pts["roof_share"].astype(float) * d, _d=d)
    g = w.groupby(keys, dropna=False, sort=False)
    out = g.first()
    tot = g["_d"].sum()
    out["duration_us"] = tot
    with np.errstate(invalid="ignore", divide="ignore"):
        out["achieved_tflops"] = np.where(tot > 0, g["_fl"].sum() / tot, g["achieved_tflops"].mean())
        out["roof_share"] = np.where(tot > 0, g["_rs"].sum(min_count=1) / tot, g["roof_share"].mean())
    out["count"] = g.size()
    return out.reset_index().drop(columns=["_fl", "_rs", "_d"])


def _roofline(rep, k, problems=None) -> dict | None:
    """Roofline points (per CPU op instance with counted FLOPs and bytes) and device ceilings."""
    rl = _safe(lambda: rep.roofline, None, problems, "roofline")
    if rl is None or not len(rl):
        return None
    measured = rl["flops_source"] == "Nsight Compute"
    if measured.any():
        rl = rl[measured]    # what Nsight Compute measured replaces our estimate from op shapes
    pts = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]
    if not measured.any():
        pts = _same_dots_once(pts)
    pts = pts.sort_values("duration_us", ascending=False).head(ROOFLINE_POINTS)
    first = k.drop_duplicates("name") if len(k) else k
    backend = dict(zip(first["name"].astype(str), first["backend"].astype(str))) if len(k) else {}
    points = [{"name": _str(r["short_name"]), "op": _str(r["op"]),
               "backend": backend.get(str(r["kernel"]), "other"), "precision": _str(r["precision"]),
               "intensity": _num(r["intensity"]), "flops_per_s": _num(r["achieved_tflops"] * 1e12),
               "duration_us": _num(r["duration_us"]), "roof_share": _num(r["roof_share"]),
               "bound": _str(r["bound"]), "count": int(r.get("count", 1))} for _, r in pts.iterrows()]
    ceilings = []
    for (dev, prec), g in pts.groupby(["device", "precision"], dropna=True):
        r = g.iloc[0] if not measured.any() else g.median(numeric_only=True).combine_first(g.iloc[0])
        if _num(r["peak_tflops"]) and _num(r["peak_gbps"]):
            src = _str(r["peaks_source"]) or "datasheet"
            # The chart prints these as they are: the numbers and their source are said here, once.
            ceilings.append({"label": f"{dev} {prec} peak", "peak_flops_per_s": r["peak_tflops"] * 1e12,
                             "bandwidth_bytes_per_s": r["peak_gbps"] * 1e9, "source": _str(r["peaks_source"]),
                             "peak_label": f"{dev} {prec} peak {r['peak_tflops']:,.0f} TFLOP/s ({src})",
                             "memory_label": f"{dev} memory {r['peak_gbps'] / 1000:.2f} TB/s ({src})"})
    memory_only = int(len(rl) - len(pts))
    note = ("Ceilings are datasheet peaks; FLOPs and bytes are counted per CPU op from its shapes "
            "(bytes: inputs read once, output written once).")
    if measured.any():
        note = ("One dot per launch, measured by Nsight Compute: FLOP/s of its dominant precision from the "
                "SASS operation counters, DRAM bytes from the DRAM counters; ceilings are the device's peaks "
                "at the clocks ncu measured.")
    if memory_only:
        note += f" {memory_only} more ops have byte counts but no FLOP count, so they are not plotted."
    return {"points": points, "ceilings": jsonable(ceilings), "note": note}


def _op_summary(ops: pd.DataFrame, k: pd.DataFrame) -> list:
    """The CPU ops table of the view: per op name, host time (inclusive and self) and the GPU
    time of its kernels, self and inclusive (``analysis.op_tree.op_summary``), costliest first."""
    from ..analysis.op_tree import op_summary
    if not len(ops):
        return []
    return _records(op_summary(ops, k).head(TOP_OPS))


def _records(df) -> list:
    if df is None or not len(df):
        return []
    return [{str(c): jsonable(v) for c, v in r.items()} for r in df.to_dict("records")]


def _safe(fn, default, problems=None, what=None):
    # A view renders what is present: an analysis that fails leaves its panel empty, and says so
    # in the report's notes instead of hiding the rest of the report.
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        if problems is not None and what:
            problems.append(f"{what} unavailable: {type(e).__name__}: {e}")
        return default


def _num(v):
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) or math.isinf(v) else v


def _int(v):
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else int(f)


def _str(v):
    return None if v is None else str(v)
