"""The view model: what the browser gets of a Report.

One small JSON header (headline numbers, findings, backends, occupancy curves, roofline, the
column directory) plus one binary buffer holding the launch-level tables as little-endian typed
arrays (``Float64Array``/``Float32Array``/``Int32Array``). Strings travel once, in the header, as
dictionaries; the buffer holds their int32 codes. The browser maps each column with a zero-copy
typed-array view, so 100k launches cost one ``ArrayBuffer`` and no per-row JSON.

Both travel as one packed, gzipped blob (:func:`pack`): as the one binary buffer the anywidget
sends when its view asks (``kernelscope.view.widget``), and, base64-encoded, as the MIME bundle entry
(``application/vnd.kernelscope.report.v1+json``) that lets a saved notebook render with no kernel. Packing the header too keeps a saved notebook light
(the header's findings, roofline and names are most of a small report). Both are decoded by the
same front-end code (``js/src/view/data.js``), which also reads the older payload format (plain
JSON header beside a gzipped buffer) of notebooks saved before.
"""
from __future__ import annotations

import weakref

import numpy as np
import pandas as pd

from kernelscope.analysis.counters import PER_KERNEL
from kernelscope.analysis.devices import device_label, device_types
from kernelscope.analysis.distinct import by_distinct, first_rows, texts_in_order
from kernelscope.analysis.evidence import evidence_rows
from kernelscope.analysis.kernel_detail import kernel_detail
from kernelscope.analysis.ncu_kernels import NCU_SOURCE, PRECISION_LABELS
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.analysis.replay import capabilities, is_replay
from kernelscope.analysis.roofline import above_roof_note, same_dots_once
from kernelscope.analysis.timeline import gpu_busy_note, gpu_busy_share
from kernelscope.jsonable import jsonable, num
from kernelscope.render.occupancy import occupancy_entries
from kernelscope.trace.model import SYNC_CALLS, float_values
from kernelscope.units import fmt_us
from kernelscope.view.codec import VIEW_VERSION, is_numeric, pack_tables
from kernelscope.view.tuning import tuning_kernels, tuning_payload
from kernelscope.view.vocabulary import vocabulary

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
    ("backend_rule", "str"), ("shape", "i32"),
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
# Stall rows listed in the view (by samples); the rest stay in rep.stalls.
TOP_STALL_ROWS = 200
# Launches (kernels + copies) sent to the browser at most. Past this the view gets one window
# of the trace (its first part by default, another on request: ``view_model(rep, window=...)``)
# up to the budget, with the host spans, gaps and counter samples of the same window, and says
# so; its headline numbers, findings, backends, roofline and op list stay whole-report, and an
# overview of the whole trace lets the user pick another window. The budget keeps the display
# of any report about as fast as that of a small one (benchmarks/view_payload.py: 50k launches
# and 100k host spans are ~9 MB of columns, well under a second to build and pack here).
VIEW_LAUNCHES = 50_000
# The same for the host lanes' spans (every CPU op and runtime call; ~40 bytes each).
VIEW_HOST_SPANS = 100_000
# The overview strip of a windowed view: the whole trace in this many bins.
OVERVIEW_BINS = 480
# The longest idle gaps of the whole trace the window chooser lists.
OVERVIEW_GAPS = 5


def view_model(rep, window: tuple | None = None) -> tuple[dict, bytes]:
    """The report as (JSON header, binary column buffer) for the browser.

    ``window``: ``(from_us, until_us)``, the part of the trace the launch-level tables hold
    (either end None: the trace's start / as far as the budget goes), cut at
    :data:`VIEW_LAUNCHES` launches and :data:`VIEW_HOST_SPANS` host spans from ``from_us``;
    None: the trace's first part up to the budget. What covers the whole report (headline
    figures, findings, backends, roofline, ops, the overview) is computed once per report, so
    each window costs only its own rows.

    >>> header, buf = view_model(ks.load("launch_bound.pt.trace.json.gz"))
    >>> header["stats"]["launches"], len(buf)
    (2000, 344056)
    >>> view_model(big, window=(5e6, None))[0]["window"]["from_us"]           # doctest: +SKIP
    5000000.0
    """
    whole = _whole(rep)
    k_all, copies_all = whole["kernels"], whole["copies"]
    span = _window_span(whole, window)
    where = None       # the view's kernel row of each rep.kernels row (a window's are fewer)
    if span is None:
        k, copies = k_all.reset_index(drop=True), copies_all.reset_index(drop=True)
        host = _host_spans(rep.ops, rep.runtime, whole["depth"])
    else:
        lo, until = span
        keep = _in_window(k_all, lo, until) if len(k_all) and "start_us" in k_all.columns else None
        k, copies = _within(k_all, lo, until, keep=keep), _within(copies_all, lo, until)
        where = _window_rows(k_all, lo, until, keep)
        host = _host_spans(rep.ops, rep.runtime, whole["depth"], lo, until)
    if "shape" not in k.columns:     # the launch shape's code: its row of rep.shapes
        k = k.assign(shape=0)
    ncu_cols = [c for c in k.columns if c.startswith("ncu_") and is_numeric(k[c])]
    extra = [c for c in ("flops", "bytes", "dram_bytes") if c in k.columns and is_numeric(k[c])]
    counter_cols = [c for c in PER_KERNEL if c in k.columns and is_numeric(k[c])]
    launch_spec = (LAUNCH_COLUMNS + [(c, "f64") for c in ncu_cols + extra] + [(c, "f32") for c in counter_cols]
                   + ([("top_stall", "str")] if "top_stall" in k.columns else []))
    counters = whole["counters"]
    problems = list(whole["problems"])
    tl = whole["timeline"]
    gaps = tl.gaps.reset_index(drop=True) if tl is not None else pd.DataFrame()
    window = None
    if span is not None:
        lo, until = span
        gaps = _within(gaps, lo, until, overlapping=True)
        if counters is not None:
            counters = (_within(counters[0], lo, until), counters[1])
        window = {"from_us": None if lo is None else float(lo), "until_us": float(until),
                  "launches": int(len(k)), "of_launches": int(len(k_all)),
                  "copies": int(len(copies)), "of_copies": int(len(copies_all)),
                  "host_spans": int(len(host)), "of_host_spans": whole["host_rows"],
                  "budget": {"launches": VIEW_LAUNCHES, "host_spans": VIEW_HOST_SPANS},
                  "overview": whole["overview"]}
    copy_spec = COPY_COLUMNS + [(c, "f32") for c in PER_KERNEL if c in copies.columns]
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
        "stats": whole["stats"],
        "devices": whole["devices"],
        "findings": whole["findings"],
        # The first screen: what to fix first, ranked by the time at stake (analysis/priorities.py).
        "fixes": whole["fixes"],
        # What this report can show: a run's timeline, or an Nsight Compute replay's kernels only
        # (its tabs, tiles, who measured the durations; analysis/replay.py).
        "capabilities": capabilities(rep.meta),
        # The tab a report opens on: CPU ops when the run recorded no GPU work.
        "open_tab": "CPU ops" if not len(k_all) and not len(copies_all) and len(rep.ops) else "Kernels",
        "backends": whole["backends"],
        "names": _name_table(k),
        "name_notes": _name_notes(k),
        "shapes": whole["shapes"] if len(k) else [],
        "roofline": whole["roofline"],
        "ops": whole["ops"],
        # How many op names there are: "ops" holds the costliest TOP_OPS of them.
        "op_names": whole["op_names"],
        # The Chrome trace the report was read from or written with (--trace), for Perfetto.
        "raw_trace": _raw_trace(rep),
        "ncu_columns": ncu_cols,
        # Hardware-counter samples (the "counters" table) and warp stalls, with their labels.
        "counters": _counter_header(rep, counters),
        "stalls": whole["stalls"],
        # What produced each kernel, its knobs, and its autotunings' candidates (view/tuning.py).
        "tuning": _safe(lambda: tuning_payload(rep, where, _once(whole, "tuning_kernels", lambda: tuning_kernels(rep))),
                        None, problems, "autotuning"),
        # The kernel deep dive of launches Nsight Compute measured (analysis/kernel_detail.py).
        "kernel_detail": whole["kernel_detail"],
        # Display options of %%kernelprofile (--top, --sort), when it set them.
        "view": jsonable(rep.meta.get("view")) if isinstance(rep.meta.get("view"), dict) else {},
        "tables": tables,
        "nbytes": len(buf),
    }
    return header, buf


# What a report's views share, per report (weakly held): the whole-report parts of the header
# and the sorted start times that place a window, computed at its first view.
_WHOLE = weakref.WeakKeyDictionary()


def _whole(rep) -> dict:
    """The whole-report parts of the view model, computed once per report (again if its tables
    were replaced)."""
    key = tuple(id(getattr(rep, t, None)) for t in ("kernels", "copies", "ops", "runtime"))
    try:
        got = _WHOLE.get(rep)
    except TypeError:     # cannot be weakly referenced: computed for each view
        got = None
    if got is not None and got[0] == key:
        return got[1]
    problems = []
    # The report's own tables (not copies: a window takes its rows from them).
    k_all, copies_all = rep.kernels, rep.copies
    tl = _safe(lambda: rep.timeline, None, problems, "timeline")
    ops = rep.ops
    # The first launch of each kernel name (k_all.drop_duplicates("name")'s rows).
    names = first_rows(k_all["name"]) if len(k_all) else np.zeros(0, np.int64)
    launch_starts = _sorted_starts([k_all, copies_all])
    host_starts = _sorted_starts([ops, rep.runtime])
    whole = {
        "kernels": k_all, "copies": copies_all, "timeline": tl,
        "launch_starts": launch_starts, "host_starts": host_starts, "host_rows": int(len(host_starts)),
        "counters": _counter_samples(rep),
        "stats": _stats(rep, k_all, copies_all, tl, names),
        "devices": records(rep.devices),
        "findings": findings_payload(rep, problems),
        "fixes": _safe(lambda: jsonable(what_to_fix(rep.findings, rep.time_base[0], of=rep.time_base[1])),
                       [], problems, "what to fix"),
        "backends": records(_safe(lambda: rep.backends, pd.DataFrame(), problems, "backend breakdown")),
        "roofline": _roofline(rep, k_all, problems, names),
        "stalls": _stalls_header(rep),
        # Per launch shape of the report (rep.shapes), whichever window shows.
        "shapes": occupancy_entries(rep, k_all),
        "kernel_detail": _safe(lambda: jsonable(kernel_detail(rep)), None, problems, "Nsight Compute deep dive"),
        "problems": problems,
    }
    # Each op's depth in its thread's call tree (for the host lanes of every window) and the
    # costliest TOP_OPS op names of the CPU ops table, with how many names there are. Asked for
    # last: a big report computes them on a second thread from when it was built (Report.op_tree).
    whole["depth"] = rep.op_tree["depth"].to_numpy() if len(ops) else None
    whole["ops"], whole["op_names"] = _op_summary(rep)
    whole["overview"] = _overview(whole, k_all, copies_all, tl)
    try:
        _WHOLE[rep] = (key, whole)
    except TypeError:
        pass
    return whole


def _once(whole: dict, key: str, fn):
    """``fn()``, kept in the report's whole-report parts after its first success (a failure is
    tried again, and reported, at each view)."""
    if key not in whole:
        whole[key] = fn()
    return whole[key]


def kernel_window(rep, name: str, after_us=None) -> tuple | None:
    """The window (``view_model``'s ``window``) that starts at the first launch of kernel
    ``name`` after ``after_us`` (from the trace's first launch of it when none is later), or
    None when the report has no launch of that name.

    >>> kernel_window(rep, "ampere_sgemm_128x64_tn", after_us=5e6)     # doctest: +SKIP
    (5000123.5, None)
    """
    k = rep.kernels
    if not len(k) or not isinstance(name, str):
        return None
    starts = k["start_us"].to_numpy(dtype=float, na_value=np.nan)[(k["name"] == name).to_numpy(dtype=bool)]
    starts = np.sort(starts[~np.isnan(starts)])
    if not len(starts):
        return None
    after = num(after_us)
    i = int(np.searchsorted(starts, after, "right")) if after is not None else 0
    return float(starts[i if i < len(starts) else 0]), None


def _sorted_starts(tables) -> np.ndarray:
    starts = [float_values(t["start_us"]) for t in tables if len(t) and "start_us" in t.columns]
    starts = np.concatenate(starts) if starts else np.empty(0)
    # Stable: a merge of the tables' runs (each written by start, mostly), several times faster.
    return np.sort(starts[~np.isnan(starts)], kind="stable")


def _cut(launch_starts: np.ndarray, host_starts: np.ndarray, lo: float | None) -> float | None:
    """The start of the first row past the budget counting from ``lo`` (None: they all fit)."""
    cuts = []
    for starts, budget in ((launch_starts, VIEW_LAUNCHES), (host_starts, VIEW_HOST_SPANS)):
        i = 0 if lo is None else int(np.searchsorted(starts, lo, "left"))
        if len(starts) - i > budget:
            cuts.append(float(starts[i + budget]))
    return min(cuts) if cuts else None


def _window_span(whole: dict, window) -> tuple | None:
    """(from_us or None, until_us) of the window to send, or None when the whole report fits.
    A window that starts at or before the trace's first row is the first window (``from_us``
    None); one past the last row starts at the last row, so that it holds something."""
    ls, hs = whole["launch_starts"], whole["host_starts"]
    have = [a for a in (ls, hs) if len(a)]
    lo, hi = (num(x) for x in window) if window is not None else (None, None)
    if lo is not None and have:
        lo = min(lo, max(float(a[-1]) for a in have))
        if lo <= min(float(a[0]) for a in have):
            lo = None
    until = min([u for u in (_cut(ls, hs, lo), hi) if u is not None], default=None)
    if until is None:
        if lo is None:
            return None
        until = float(np.nextafter(max(float(a[-1]) for a in have), np.inf))   # to the trace's end
    if lo is not None and until <= lo:
        until = float(np.nextafter(lo, np.inf))
    return lo, until


def _within(df: pd.DataFrame, lo: float | None, until: float, overlapping: bool = False, keep=None) -> pd.DataFrame:
    """The rows of ``df`` that start in [``lo``, ``until``) (``overlapping``: that overlap it;
    ``keep``: :func:`_in_window` of it, when at hand)."""
    if not len(df) or "start_us" not in df.columns:
        return df
    return df[_in_window(df, lo, until, overlapping) if keep is None else keep].reset_index(drop=True)


def _in_window(df: pd.DataFrame, lo: float | None, until: float, overlapping: bool = False) -> np.ndarray:
    """Which rows of ``df`` (it has ``start_us``) :func:`_within` keeps."""
    start = float_values(df["start_us"])
    keep = start < until
    if lo is not None:
        if overlapping:
            dur = np.nan_to_num(float_values(df["duration_us"]))
            keep &= start + dur > lo
        else:
            keep &= start >= lo
    return keep


def _window_rows(df: pd.DataFrame, lo: float | None, until: float, keep=None) -> np.ndarray:
    """For each row of ``df``, its row in ``_within(df, lo, until)`` (-1: outside the window)."""
    if not len(df) or "start_us" not in df.columns:
        return np.arange(len(df))
    keep = _in_window(df, lo, until) if keep is None else keep
    return np.where(keep, np.cumsum(keep) - 1, -1)


def _overview(whole: dict, k: pd.DataFrame, copies: pd.DataFrame, tl) -> dict | None:
    """The whole trace at a glance, for the window chooser's strip: per bin of time, the GPU's
    busy share (kernel and copy time in the bin over its length, capped at 1: streams overlap)
    and the launches and host spans that start in it; and the longest idle gaps."""
    ls, hs = whole["launch_starts"], whole["host_starts"]
    if not len(ls) and not len(hs):
        return None
    t0 = min(float(a[0]) for a in (ls, hs) if len(a))
    ends = [float(np.nanmax(t["start_us"].to_numpy(float) + np.nan_to_num(t["duration_us"].to_numpy(float))))
            for t in (k, copies) if len(t)]
    t1 = max([float(a[-1]) for a in (ls, hs) if len(a)] + ends)
    width = max((t1 - t0) / OVERVIEW_BINS, 1e-3)
    edges = t0 + width * np.arange(OVERVIEW_BINS + 1)
    busy = np.diff(_covered(k, copies, edges, ls)) / width
    count = lambda a: np.diff(np.searchsorted(a, edges, "left")).tolist() if len(a) else [0] * OVERVIEW_BINS  # noqa: E731
    launches, host = count(ls), count(hs)
    launches[-1] += int(len(ls) - sum(launches))    # the last row starts on the closing edge
    host[-1] += int(len(hs) - sum(host))
    gaps = []
    g = tl.gaps if tl is not None and len(tl.gaps) else None
    if g is not None:
        for r in _longest(g, OVERVIEW_GAPS).to_dict("records"):
            gaps.append({"start_us": num(r.get("start_us")), "duration_us": num(r.get("duration_us")),
                         "device": _str(r.get("device")), "cause": _str(r.get("cause")),
                         "label": f"{fmt_us(num(r.get('duration_us')) or 0)} idle at {fmt_us((num(r.get('start_us')) or t0) - t0)}"
                                  + (f" ({r['cause']})" if _str(r.get("cause")) else "")})
    return {"start_us": t0, "end_us": t1, "bin_us": width,
            "busy": np.round(np.minimum(busy, 1.0), 3).tolist(), "launches": launches, "host_spans": host,
            "gaps": gaps}


def _longest(gaps: pd.DataFrame, n: int) -> pd.DataFrame:
    """``gaps.nlargest(n, "duration_us")``: only the rows at or above the n-th longest sorted (a
    5M-event trace has hundreds of thousands of gaps)."""
    if gaps["duration_us"].dtype != np.float64 or len(gaps) <= 4 * n:
        return gaps.nlargest(n, "duration_us")
    d = gaps["duration_us"].to_numpy()
    rows = np.flatnonzero(~np.isnan(d))
    if len(rows) <= n:          # nlargest then takes missing ones too
        return gaps.nlargest(n, "duration_us")
    rows = rows[d[rows] >= np.partition(d[rows], len(rows) - n)[len(rows) - n]]
    # Longest first; of equal ones the earlier row first (nlargest's keep="first").
    return gaps.iloc[rows[np.lexsort((rows, -d[rows]))][:n]]


def _covered(k: pd.DataFrame, copies: pd.DataFrame, edges: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """At each edge t, the kernel and copy time before t (the sum over intervals of their part
    before t): the sum over starts s < t of t - s, less that over ends e < t of t - e.
    ``starts``: the tables' start times sorted, when at hand (``_sorted_starts``)."""
    st = np.concatenate([t["start_us"].to_numpy(float) for t in (k, copies) if len(t)] or [np.empty(0)])
    en = st + np.nan_to_num(np.concatenate([t["duration_us"].to_numpy(float) for t in (k, copies) if len(t)]
                                           or [np.empty(0)]))
    ok = ~np.isnan(st)
    if starts is None or any(t["start_us"].dtype != np.float64 for t in (k, copies) if len(t)):
        starts = np.sort(st[ok], kind="stable")
    out = np.zeros(len(edges))
    for a, sign in ((starts, 1.0), (np.sort(en[ok], kind="stable"), -1.0)):
        n = np.searchsorted(a, edges, "left")
        before = np.r_[0.0, np.cumsum(a)][n]
        out += sign * (n * edges - before)
    return out


def _window_note(w: dict) -> str:
    held = (f"{w['launches']:,} of {w['of_launches']:,} kernel launches"
            + (f", {w['copies']:,} of {w['of_copies']:,} copies" if w["of_copies"] else "")
            + f" and {w['host_spans']:,} of {w['of_host_spans']:,} CPU ops and runtime calls. ")
    ov = w.get("overview") or {}
    t0 = ov.get("start_us") or 0.0
    where = (f"the trace's first {fmt_us(w['until_us'] - t0)}" if w.get("from_us") is None
             else f"{fmt_us(w['from_us'] - t0)} to {fmt_us(w['until_us'] - t0)} of the trace")
    return (f"This view holds {where}: {held}"
            "The kernel table and the timeline cover that window; the figures above, the findings, "
            "backends, roofline and ops cover the whole report (rep.kernels and rep.ops have every row).")


# -- counters and stalls -----------------------------------------------------------------------
def _counter_samples(rep):
    """(samples table, column spec) for the utilization strip, or None without samples."""
    m = getattr(rep, "metrics", None)
    if m is None or not len(m):
        return None
    from kernelscope.trace.counters import DERIVED
    m = m.sort_values("start_us", kind="stable").reset_index(drop=True)
    types = device_types(rep.devices)
    m = m.assign(device=[device_label(i, types.get(i)) for i in m["device_index"].tolist()])
    cols = [d.column for d in DERIVED if d.column in m.columns and np.isfinite(m[d.column].to_numpy(float)).any()]
    spec = [("device", "str"), ("start_us", "f64"), ("duration_us", "f32")] + [(c, "f32") for c in cols]
    return m, spec


def _counter_header(rep, counters) -> dict | None:
    if counters is None:
        return None
    from kernelscope.trace.counters import DERIVED
    meta = rep.meta.get("counters") if isinstance(rep.meta.get("counters"), dict) else {}
    have = {c for c, _ in counters[1]}
    tracks = [{"column": d.column, "label": d.label, "unit": d.unit, "meaning": d.meaning, "color": d.color,
               # percentages share one 0-100 scale; bandwidth scales to its own maximum
               "max": 100.0 if d.unit == "%" else None}
              for d in DERIVED if d.column in have]
    iv = num(meta.get("interval_us"))
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
    from kernelscope.analysis.stalls import REASONS, explain, reason_columns, top_stalls
    reasons = reason_columns(s)
    rows = []
    for r in s.sort_values("samples", ascending=False).head(TOP_STALL_ROWS).to_dict("records"):
        shares = {c: num(r[c]) for c in reasons if num(r.get(c))}
        rows.append({"name": _str(r.get("name")), "source": _str(r.get("source")), "samples": num(r.get("samples")),
                     "top_stall": _str(r.get("top_stall")), "shares": shares})
    used = sorted({c for row in rows for c in row["shares"]}, key=lambda c: list(REASONS).index(c) if c in REASONS else 99)
    return {"sources": sorted({str(x) for x in s["source"].dropna()}), "rows": rows,
            "overall": [[a, num(b)] for a, b in top_stalls(s, 5)],
            "reasons": {c: {"title": explain(c).title, "meaning": explain(c).meaning, "fix": explain(c).fix}
                        for c in used}}


def _host_spans(ops: pd.DataFrame, runtime: pd.DataFrame, depth, lo=None, until=None) -> pd.DataFrame:
    """Every CPU op with its depth in its thread's call tree (``Report.op_tree``'s ``depth``,
    per row of ``ops``), drawn nested as Perfetto draws a thread, plus the CUDA runtime calls,
    so the timeline shows what the host was doing while the GPU idled and which call launched
    which kernel. With ``until``: those that overlap [``lo``, ``until``) only."""
    parts = []
    if len(ops):
        o = ops.reset_index(drop=True)
        # Only the columns sent (a window's rows are taken from every op).
        o = o[["name", "tid", "start_us", "duration_us"] + (["cat"] if "cat" in o.columns else [])].assign(depth=depth)
        if until is not None:
            o = _within(o, lo, until, overlapping=True)
        annotation = (o["cat"] == "user_annotation").to_numpy(dtype=bool) if "cat" in o.columns else False
        kind = _labels(("op", "annotation"), annotation, o)
        o = o[["name", "tid", "start_us", "duration_us", "depth"]].assign(tid=_text(o["tid"]), kind=kind)
        parts.append(o.dropna(subset=["start_us"]))
    if len(runtime):
        r = runtime[["name", "tid", "start_us", "duration_us", "correlation"]].dropna(subset=["start_us"])
        if until is not None:
            r = _within(r, lo, until, overlapping=True)
        kind = _labels(("runtime", "sync"), r["name"].isin(list(SYNC_CALLS)).to_numpy(dtype=bool), r)
        parts.append(r.assign(tid=_text(r["tid"]), kind=kind, depth=0))
    if not parts:
        return pd.DataFrame({c: [] for c, _ in HOST_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def _text(col: pd.Series) -> pd.Series:
    """``col.astype(str)``; for integers (thread ids) made once per distinct value, as objects
    (equal texts one object: the payload codes them by identity)."""
    arr = col.to_numpy()
    if col.dtype != object or not len(arr) or type(arr[0]) is not int \
            or pd.api.types.infer_dtype(arr, skipna=False) != "integer":
        return col.astype(str)
    try:
        codes, uniq = pd.factorize(arr.astype(np.int64))
    except OverflowError:
        return col.astype(str)
    return pd.Series(np.array([str(u) for u in uniq.tolist()], dtype=object)[codes], index=col.index, dtype=object)


def _labels(labels: tuple, second, like: pd.DataFrame) -> pd.Series:
    """Per row of ``like``: ``labels[1]`` where ``second``, else ``labels[0]``, as one object per
    label (not a text column, which would copy the text into each row)."""
    pick = np.zeros(len(like), np.int64) if second is False else np.asarray(second, dtype=np.int64)
    return pd.Series(np.array(labels, dtype=object)[pick], index=like.index, dtype=object)


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


def _stats(rep, k, copies, tl, names: np.ndarray | None = None) -> dict:
    # ``names``: a row of each kernel name (first_rows of k["name"]), when at hand.
    names = first_rows(k["name"]) if names is None and len(k) else names
    # A replay's launches ran back to back by construction: its "busy" share would read 100%.
    busy = _safe(lambda: tl.device(), {}) if tl is not None and not is_replay(rep.meta) else {}
    return {
        "wall_us": num(rep.wall_time_us),
        # Which clock the wall time read (CUDA events, the profiler's span, first to last event).
        "wall_clock": _str(getattr(rep, "wall_time_clock", None)),
        "gpu_time_us": num(rep.gpu_time_us),
        # Busy share of the wall time, as the findings take it; of the active window beside it.
        "gpu_busy": num(gpu_busy_share(busy)),
        "gpu_busy_of_wall": num(busy.get("wall_busy_share")),
        "gpu_busy_of_window": num(busy.get("busy_share")),
        "gpu_busy_note": gpu_busy_note(busy),
        "busy_device": _str(busy.get("device")),
        # Kernel launches only, as everywhere in kernelscope; copies and memsets are counted apart.
        "launches": int(len(k)),
        # Distinct names: ``names`` holds a row of each (of a missing one too).
        "kernels": int(k["name"].iloc[names].notna().sum()) if len(k) else 0,
        "copies": int(len(copies)),
        "memsets": int((copies["kind"] == "memset").sum()) if len(copies) and "kind" in copies.columns else 0,
        "copy_time_us": num(float(copies["duration_us"].sum())) if len(copies) else 0.0,
        "ops": int(len(rep.ops)),
        "no_gpu": bool(rep.meta.get("no_gpu")),
    }


def findings_payload(rep, problems=None) -> list:
    out = []
    for f in _safe(lambda: rep.findings, [], problems, "findings"):
        get = (lambda a, f=f: f.get(a)) if isinstance(f, dict) else (lambda a, f=f: getattr(f, a, None))
        ev = get("evidence")
        out.append({"kind": _str(get("kind")), "severity": _str(get("severity")), "title": _str(get("title")),
                    "detail": _str(get("detail")), "cost_us": num(get("cost_us")),
                    "cause": _str(get("cause")), "fix": _str(get("fix")), "link": jsonable(get("link")),
                    "evidence": {str(a): jsonable(b) for a, b in ev.items()} if isinstance(ev, dict) else {},
                    # The evidence in words, each figure with its unit (analysis/evidence.py).
                    "evidence_text": evidence_rows(jsonable(ev)) if isinstance(ev, dict) else []})
    return out


def _name_table(k: pd.DataFrame) -> list:
    """Per kernel name (in the order of the dictionary sent with the ``name`` column): short name."""
    if not len(k):
        return []
    first = k[["name", "short_name"]].iloc[first_rows(k["name"])]     # k.drop_duplicates("name")
    short = dict(zip(first["name"].astype(str), first["short_name"].astype(str)))
    return [short.get(n, n) for n in texts_in_order(k["name"])]


def _name_notes(k: pd.DataFrame) -> list:
    """Per kernel name (same order as ``names``): what the kernel is in words ("" when nothing to add),
    and why its backend was chosen."""
    if not len(k):
        return []
    from kernelscope.analysis.backend_rules import RULES
    from kernelscope.analysis.names import describe
    why = {r.id: r.why for r in RULES}
    first = k.iloc[first_rows(k["name"])]     # k.drop_duplicates("name")
    info = {str(n): (describe(str(n), b), why.get(r, "")) for n, b, r in
            zip(first["name"], first["backend"], first.get("backend_rule", [""] * len(first)))}
    return [{"about": info[n][0], "why": info[n][1]} for n in texts_in_order(k["name"])]


def _roofline(rep, k, problems=None, names: np.ndarray | None = None) -> dict | None:
    """Roofline points (per CPU op instance with counted FLOPs and bytes) and device ceilings."""
    rl = _safe(lambda: rep.roofline, None, problems, "roofline")
    if rl is None or not len(rl):
        return None
    # Once per distinct source (a 5M-event report has a million rows of a few).
    measured = by_distinct(rl["flops_source"].to_numpy(dtype=object), lambda v: isinstance(v, str) and v == NCU_SOURCE,
                           bool, False)
    if measured.any():
        rl = rl[measured]    # what Nsight Compute measured replaces our estimate from op shapes
    pts = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]
    if not measured.any():
        pts = same_dots_once(pts)
    pts = pts.sort_values("duration_us", ascending=False).head(ROOFLINE_POINTS)
    # k.drop_duplicates("name")
    first = k[["name", "backend"]].iloc[first_rows(k["name"]) if names is None else names] if len(k) else k
    backend = dict(zip(first["name"].astype(str), first["backend"].astype(str))) if len(k) else {}
    points = [{"name": _str(r["short_name"]), "op": _str(r["op"]),
               "backend": backend.get(str(r["kernel"]), "other"), "precision": _str(r["precision"]),
               "intensity": num(r["intensity"]), "flops_per_s": num(r["achieved_tflops"] * 1e12),
               "duration_us": num(r["duration_us"]), "roof_share": num(r["roof_share"]),
               "bound": _str(r["bound"]), "count": int(r.get("count", 1)),
               # Why a dot is above its roof (analysis/roofline.py), said where it is drawn.
               "note": above_roof_note(r["bound"], r["roof_share"])}
              for _, r in pts.iterrows()]
    ceilings = []
    for (dev, prec), g in pts.groupby(["device", "precision"], dropna=True):
        r = g.iloc[0] if not measured.any() else g.median(numeric_only=True).combine_first(g.iloc[0])
        if num(r["peak_tflops"]) and num(r["peak_gbps"]):
            src = _str(r["peaks_source"]) or "datasheet"
            # The deep dive's names for Nsight Compute's precisions ("FP16 tensor"), one name each.
            prec = PRECISION_LABELS.get(prec, prec) if measured.any() else prec
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
    above = sum(1 for p in points if p["note"])
    if above:
        note += (f" {above} dot(s) sit above their roof, each marked with why (data kept in L2 or cache, "
                 "or a faster precision than the inputs').")
    # The axis says what the note says: measured bytes, or bytes counted from the op's shapes.
    x_label = ("arithmetic intensity (FLOP/byte at DRAM, measured by Nsight Compute)" if measured.any()
               else "arithmetic intensity (FLOP/byte, counted from op shapes)")
    return {"points": points, "ceilings": jsonable(ceilings), "note": note, "x_label": x_label}


def _op_summary(rep) -> tuple[list, int]:
    """The CPU ops table of the view: per op name, host time (inclusive and self) and the GPU
    time of its kernels, self and inclusive (``Report.op_summary``), costliest first; and how
    many op names there are (the table's rows: one per name)."""
    if not len(rep.ops):
        return [], 0
    table = rep.op_summary
    return records(table.head(TOP_OPS)), int(len(table))


def records(df) -> list:
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


def _str(v):
    return None if v is None else str(v)
