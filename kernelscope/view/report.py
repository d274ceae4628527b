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

import numpy as np
import pandas as pd

from kernelscope.analysis.counters import PER_KERNEL
from kernelscope.analysis.devices import device_label, device_types
from kernelscope.analysis.evidence import evidence_rows
from kernelscope.analysis.kernel_detail import kernel_detail
from kernelscope.analysis.ncu_kernels import NCU_SOURCE, PRECISION_LABELS
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.analysis.replay import capabilities, is_replay
from kernelscope.analysis.roofline import above_roof_note, same_dots_once
from kernelscope.analysis.timeline import gpu_busy_note, gpu_busy_share
from kernelscope.jsonable import jsonable, num
from kernelscope.render.occupancy import occupancy_entries
from kernelscope.trace.model import SYNC_CALLS
from kernelscope.units import fmt_us
from kernelscope.view.codec import VIEW_VERSION, is_numeric, pack_tables
from kernelscope.view.tuning import tuning_payload
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
# Launches (kernels + copies) sent to the browser at most. Past this the view gets the launches
# of the trace's first part up to the budget, with the host spans, gaps and counter samples of
# the same window, and says so; its headline numbers, findings, backends, roofline and op list
# stay whole-report. A million launches would be ~100 MB of columns (~25 MB packed, a third more
# as base64 in a saved notebook) for a table and timeline drawn from the browser's memory.
VIEW_LAUNCHES = 200_000
# The same for the host lanes' spans (every CPU op and runtime call; ~40 bytes each).
VIEW_HOST_SPANS = 400_000


def view_model(rep) -> tuple[dict, bytes]:
    """The report as (JSON header, binary column buffer) for the browser.

    >>> header, buf = view_model(ks.load("launch_bound.pt.trace.json.gz"))
    >>> header["stats"]["launches"], len(buf)
    (2000, 344056)
    """
    k_all = rep.kernels.reset_index(drop=True)
    if "shape" not in k_all.columns:     # the launch shape's code: its row of rep.shapes
        k_all = k_all.assign(shape=0)
    copies_all = rep.copies.reset_index(drop=True)
    host_all = _host_spans(rep.ops, rep.runtime)
    until = view_window(k_all, copies_all, host_all)
    k, copies, host = ((_before(k_all, until), _before(copies_all, until), _before(host_all, until))
                       if until is not None else (k_all, copies_all, host_all))
    ncu_cols = [c for c in k.columns if c.startswith("ncu_") and is_numeric(k[c])]
    extra = [c for c in ("flops", "bytes", "dram_bytes") if c in k.columns and is_numeric(k[c])]
    counter_cols = [c for c in PER_KERNEL if c in k.columns and is_numeric(k[c])]
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
        "stats": _stats(rep, k_all, copies_all, tl),
        "devices": records(rep.devices),
        "findings": findings_payload(rep, problems),
        # The first screen: what to fix first, ranked by the time at stake (analysis/priorities.py).
        "fixes": _safe(lambda: jsonable(what_to_fix(rep.findings, rep.time_base[0], of=rep.time_base[1])),
                       [], problems, "what to fix"),
        # What this report can show: a run's timeline, or an Nsight Compute replay's kernels only
        # (its tabs, tiles, who measured the durations; analysis/replay.py).
        "capabilities": capabilities(rep.meta),
        # The tab a report opens on: CPU ops when the run recorded no GPU work.
        "open_tab": "CPU ops" if not len(k) and not len(copies) and len(rep.ops) else "Kernels",
        "backends": records(_safe(lambda: rep.backends, pd.DataFrame(), problems, "backend breakdown")),
        "names": _name_table(k),
        "name_notes": _name_notes(k),
        "shapes": occupancy_entries(rep, k),
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
        # What produced each kernel, its knobs, and its autotunings' candidates (view/tuning.py).
        "tuning": _safe(lambda: tuning_payload(rep), None, problems, "autotuning"),
        # The kernel deep dive of launches Nsight Compute measured (analysis/kernel_detail.py).
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


def _host_spans(ops: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """Every CPU op with its depth in its thread's call tree (``analysis.op_tree``), drawn
    nested as Perfetto draws a thread, plus the CUDA runtime calls, so the timeline shows what
    the host was doing while the GPU idled and which call launched which kernel."""
    from kernelscope.analysis.op_tree import op_tree
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
        "kernels": int(k["name"].nunique()) if len(k) else 0,
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
    first = k.drop_duplicates("name")
    short = dict(zip(first["name"].astype(str), first["short_name"].astype(str)))
    names = pd.unique(pd.Series([str(v) for v in k["name"].tolist()], dtype=object))
    return [short.get(n, n) for n in names]


def _name_notes(k: pd.DataFrame) -> list:
    """Per kernel name (same order as ``names``): what the kernel is in words ("" when nothing to add),
    and why its backend was chosen."""
    if not len(k):
        return []
    from kernelscope.analysis.backend_rules import RULES
    from kernelscope.analysis.names import describe
    why = {r.id: r.why for r in RULES}
    first = k.drop_duplicates("name")
    info = {str(n): (describe(str(n), b), why.get(r, "")) for n, b, r in
            zip(first["name"], first["backend"], first.get("backend_rule", [""] * len(first)))}
    names = pd.unique(pd.Series([str(v) for v in k["name"].tolist()], dtype=object))
    return [{"about": info[n][0], "why": info[n][1]} for n in names]


def _roofline(rep, k, problems=None) -> dict | None:
    """Roofline points (per CPU op instance with counted FLOPs and bytes) and device ceilings."""
    rl = _safe(lambda: rep.roofline, None, problems, "roofline")
    if rl is None or not len(rl):
        return None
    measured = rl["flops_source"] == NCU_SOURCE
    if measured.any():
        rl = rl[measured]    # what Nsight Compute measured replaces our estimate from op shapes
    pts = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]
    if not measured.any():
        pts = same_dots_once(pts)
    pts = pts.sort_values("duration_us", ascending=False).head(ROOFLINE_POINTS)
    first = k.drop_duplicates("name") if len(k) else k
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


def _op_summary(ops: pd.DataFrame, k: pd.DataFrame) -> list:
    """The CPU ops table of the view: per op name, host time (inclusive and self) and the GPU
    time of its kernels, self and inclusive (``analysis.op_tree.op_summary``), costliest first."""
    from kernelscope.analysis.op_tree import op_summary
    if not len(ops):
        return []
    return records(op_summary(ops, k).head(TOP_OPS))


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
